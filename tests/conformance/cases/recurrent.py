"""Recurrent operators: UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF.

TFLite Micro runs the standard (Keras) LSTM only: all eight gate weight matrices and four
biases present, no peephole, projection, layer norm or CIFG (those operands are omitted, -1).
Its integer LSTM takes int8 activations with an int16 cell state (8x8->16, int32 biases) or
int16 activations (16x8->16, int64 biases); the cases quantize like TensorFlow's converter:
symmetric per-tensor weights, biases at ``input_scale * weight_scale``, a power-of-two cell
state scale (2^-11 by default) and an output quantized like the hidden state.

The harness feeds each variable input with a leading dimension of 1, so time-major cases have
one time step (``[1, batch, input]``) and the multi-step cases are batch-major
(``[1, time, input]``). State tensors are variable tensors: TFLite Micro resets them before
every sample, as edgenn starts every inference from the initial state.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, i16, omitted

_TANH = 4  # tflite.ActivationFunctionType.TANH
_RELU = 1


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _state(shape: tuple[int, ...], dtype: DType, scale: float | None = None,
           zero_point: int = 0) -> Spec:
    quant = None if scale is None else QuantParams.per_tensor(scale, zero_point)
    return Spec(shape, dtype, quant, variable=True)


def _sym_weights(w: np.ndarray) -> tuple[Spec, float]:
    """int8 symmetric per-tensor weights, as the converter writes LSTM and SVDF weights, and
    their scale (as float32 stores it)."""
    scale = float(np.float32(np.max(np.abs(w)) / 127.0))
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return const(q, DType.INT8, QuantParams.per_tensor(scale, 0)), scale


def _bias(b: np.ndarray, scale: float, dtype: DType) -> Spec:
    limit = np.iinfo(dtype.numpy)
    q = np.clip(np.round(b / scale), limit.min, limit.max).astype(dtype.numpy)
    return const(q, dtype, QuantParams.per_tensor(scale, 0))


# -- UNIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------
@dataclass(frozen=True)
class LstmShape:
    batch: int
    time: int
    n_input: int
    n_cell: int
    time_major: bool = False

    @property
    def x(self) -> tuple[int, int, int]:
        return ((self.time, self.batch, self.n_input) if self.time_major
                else (self.batch, self.time, self.n_input))

    @property
    def y(self) -> tuple[int, int, int]:
        return ((self.time, self.batch, self.n_cell) if self.time_major
                else (self.batch, self.time, self.n_cell))


def _lstm_options(s: LstmShape, cell_clip: float) -> tuple[str, dict[str, object]]:
    return ("UnidirectionalSequenceLSTMOptions",
            {"fused_activation_function": _TANH, "cell_clip": cell_clip, "proj_clip": 0.0,
             "time_major": s.time_major, "asymmetric_quantize_inputs": False})


def _float_weights(name: str, s: LstmShape) -> tuple[list[np.ndarray], list[np.ndarray],
                                                     list[np.ndarray]]:
    """Gate weights (input, forget, cell, output) as a trained Keras LSTM has them."""
    rng = _rng(name)
    w = [rng.normal(0, 0.6, (s.n_cell, s.n_input)) for _ in range(4)]
    r = [rng.normal(0, 0.4, (s.n_cell, s.n_cell)) for _ in range(4)]
    b = [rng.normal(0, 0.3, s.n_cell) for _ in range(4)]
    b[1] += 1.0  # Keras' unit_forget_bias
    return w, r, b


Parts = tuple[tuple[Spec, ...], tuple[Spec, ...], tuple[str, dict[str, object]]]


def lstm_float_parts(name: str, s: LstmShape, cell_clip: float = 0.0) -> Parts:
    """(inputs, outputs, options) of a float32 LSTM."""
    w, r, b = _float_weights(name, s)
    f = [const(a.astype(np.float32), DType.FLOAT32) for a in (*w, *r)]
    biases = [const(a.astype(np.float32), DType.FLOAT32) for a in b]
    inputs = (f32(s.x, (-2.0, 2.0)), *f, omitted(), omitted(), omitted(), *biases,
              omitted(), omitted(), _state((s.batch, s.n_cell), DType.FLOAT32),
              _state((s.batch, s.n_cell), DType.FLOAT32), *(omitted() for _ in range(4)))
    return inputs, (f32(s.y),), _lstm_options(s, cell_clip)


def lstm_float(name: str, s: LstmShape, cell_clip: float = 0.0) -> Case:
    return Case("UNIDIRECTIONAL_SEQUENCE_LSTM", name, *lstm_float_parts(name, s, cell_clip))


def lstm_quantized(name: str, s: LstmShape, **kwargs: Any) -> Case:
    """An integer LSTM (see ``lstm_quantized_parts``)."""
    return Case("UNIDIRECTIONAL_SEQUENCE_LSTM", name, *lstm_quantized_parts(name, s, **kwargs))


def lstm_quantized_parts(name: str, s: LstmShape, *, int16: bool = False,
                         cell_clip: float = 0.0, x_scale: float = 0.02, x_zp: int = 3,
                         h_scale: float = 1 / 128, h_zp: int = -2, cell_pow: int = -11) -> Parts:
    """(inputs, outputs, options) of an integer LSTM: int8 activations (8x8->16) or int16
    activations (16x8->16)."""
    w, r, b = _float_weights(name, s)
    if int16:
        x_zp = h_zp = 0  # int16 activations are symmetric
        x_scale, h_scale = x_scale / 256, h_scale / 256
    act, bias_t = (DType.INT16, DType.INT64) if int16 else (DType.INT8, DType.INT32)
    wq = [_sym_weights(a) for a in w]
    rq = [_sym_weights(a)[0] for a in r]
    biases = [_bias(a, x_scale * scale, bias_t) for a, (_, scale) in zip(b, wq, strict=True)]
    spec = i16 if int16 else i8
    x = spec(s.x, x_scale, x_zp)
    hidden = _state((s.batch, s.n_cell), act, h_scale, h_zp)
    cell = _state((s.batch, s.n_cell), DType.INT16, 2.0**cell_pow, 0)
    inputs = (x, *(q for q, _ in wq), *rq, omitted(), omitted(), omitted(), *biases,
              omitted(), omitted(), hidden, cell, *(omitted() for _ in range(4)))
    return inputs, (spec(s.y, h_scale, h_zp),), _lstm_options(s, cell_clip)


# -- SVDF ------------------------------------------------------------------------------------
def _svdf_options(rank: int, activation: int) -> tuple[str, dict[str, object]]:
    return ("SVDFOptions", {"rank": rank, "fused_activation_function": activation,
                            "asymmetric_quantize_inputs": False})


def svdf_float(name: str, batch: int, n_input: int, units: int, rank: int, memory: int,
               activation: int = 0) -> Case:
    rng = _rng(name)
    filters = units * rank
    wf = rng.normal(0, 0.5, (filters, n_input)).astype(np.float32)
    wt = rng.normal(0, 0.5, (filters, memory)).astype(np.float32)
    bias = rng.normal(0, 0.5, units).astype(np.float32)
    inputs = (f32((batch, n_input)), const(wf), const(wt), const(bias),
              _state((batch, memory * filters), DType.FLOAT32))
    return Case("SVDF", name, inputs, (f32((batch, units)),), _svdf_options(rank, activation),
                atol=1e-4)


def svdf_int8(name: str, batch: int, n_input: int, units: int, rank: int, memory: int, *,
              state: DType = DType.INT16, activation: int = _RELU, x_zp: int = -5,
              state_zp: int = 0, out_zp: int = -12, state_scale: float | None = None) -> Case:
    """TFLM's integer SVDF: int8 input and feature weights, int16 (or int8) time weights and
    state, int32 bias at ``state_scale * time_scale``."""
    rng = _rng(name)
    filters = units * rank
    x_scale = 0.03
    wf, _ = _sym_weights(rng.normal(0, 0.5, (filters, n_input)))
    # why this state scale: the feature products land in a few hundred state steps
    if state_scale is None:
        state_scale = 0.016 if state is DType.INT16 else 0.08
    if state is DType.INT16:
        wt_real = rng.normal(0, 0.5, (filters, memory))
        wt_scale = float(np.max(np.abs(wt_real))) / 32767
        wt = const(np.round(wt_real / wt_scale).astype(np.int16), DType.INT16,
                   QuantParams.per_tensor(wt_scale, 0))
    else:
        wt, wt_scale = _sym_weights(rng.normal(0, 0.5, (filters, memory)))
    bias_scale = float(np.float32(state_scale) * np.float32(wt_scale))
    bias = _bias(rng.normal(0, 0.5, units), bias_scale, DType.INT32)
    inputs = (i8((batch, n_input), x_scale, x_zp), wf, wt, bias,
              _state((batch, memory * filters), state, state_scale, state_zp))
    return Case("SVDF", name, inputs, (i8((batch, units), 0.05 * rank, out_zp),),
                _svdf_options(rank, activation))


CASES: list[Case] = [
    # float32 LSTM: sequences, batch-major and time-major, cell clipping
    lstm_float("float_seq5", LstmShape(1, 5, 3, 4)),
    lstm_float("float_seq1", LstmShape(1, 1, 6, 5)),
    lstm_float("float_seq7_clip", LstmShape(1, 7, 4, 3), cell_clip=1.5),
    lstm_float("float_time_major_batch2", LstmShape(2, 1, 3, 4, time_major=True)),
    # int8 activations, int16 cell state (8x8->16)
    lstm_quantized("int8_seq5", LstmShape(1, 5, 3, 4)),
    lstm_quantized("int8_seq1", LstmShape(1, 1, 7, 6)),
    lstm_quantized("int8_seq9_clip", LstmShape(1, 9, 5, 8), cell_clip=3.0),
    lstm_quantized("int8_cell_2pow-15", LstmShape(1, 6, 4, 3), cell_pow=-15),
    lstm_quantized("int8_cell_2pow-9", LstmShape(1, 6, 4, 3), cell_pow=-9, x_zp=-20),
    lstm_quantized("int8_time_major_batch3", LstmShape(3, 1, 4, 5, time_major=True)),
    lstm_quantized("int8_seq4_hidden_zp7", LstmShape(1, 4, 3, 6), h_zp=7),
    lstm_quantized("int8_28x20_mnist_like", LstmShape(1, 28, 28, 20), x_scale=1 / 255,
                   x_zp=-128),
    lstm_quantized("int8_129x64_wide", LstmShape(1, 2, 129, 64), x_scale=0.05, x_zp=-7),
    # int16 activations (16x8->16, int64 biases)
    lstm_quantized("int16_seq5", LstmShape(1, 5, 3, 4), int16=True),
    lstm_quantized("int16_seq8_clip", LstmShape(1, 8, 6, 5), int16=True, cell_clip=2.0),
    # SVDF float32 and int8 with int16 state (keyword spotting), rank 1 and 2
    svdf_float("float_rank1", 1, 6, 4, 1, 5),
    svdf_float("float_rank2_relu", 1, 5, 3, 2, 4, activation=_RELU),
    svdf_int8("int8_rank1", 1, 6, 4, 1, 5),
    svdf_int8("int8_rank2", 1, 8, 5, 2, 7, activation=0),
    svdf_int8("int8_rank1_zp0", 1, 5, 3, 1, 4, x_zp=0, out_zp=0),
    svdf_int8("int8_state_int8", 1, 6, 4, 2, 5, state=DType.INT8, state_zp=-3),
    # features saturate the int8 state: TFLM clamps before adding the zero point
    svdf_int8("int8_state_int8_saturating", 1, 6, 4, 2, 5, state=DType.INT8, state_zp=-40,
              state_scale=0.01),
]
