"""LSTM over a whole sequence, float32 and integer, exactly as TFLite Micro's
UNIDIRECTIONAL_SEQUENCE_LSTM (``lstm_eval.h`` / ``lstm_eval_common.cc``).

Per time step, for the gates forget, input, cell, output (in that order, as TFLM):
``gate = act(FC(x_t, W_g) + b_g + FC(h, R_g))``; then ``c = f * c + i * g`` (clipped to
``cell_clip``) and ``h = tanh(c) * o``; ``y_t = h``.

The integer kernel (int8 activations with int16 weights' products: 8x8->16, or int16
activations: 16x8->16) keeps the gates in Q3.12 before and Q0.15 after their activation and
the cell state in int16 at a power-of-two scale. Its constants come from TFLM's
``PrepareGateParametersInteger``: each FC requantizes to the Q3.12 scale 2^-12 with the
multiplier of ``in_scale * w_scale / 2^-12`` (the product of the two float32 scales taken in
double, as TFLM's ``GetQuantizedConvolutionMultipler``; clamped to int16), the element-wise
products use the multipliers of ``CreateInterGateMulParams`` and the activations are TFLM's
int16 LUT sigmoid / tanh (``reference_integer_ops::Logistic`` / ``Tanh`` with the LSTM's own input
scaling). The zero points of the int8 input and hidden state are folded into the biases
(exact in int32 arithmetic), so the Cortex-M kernel takes the same numbers.

Batch layout: the runtime stacks samples on axis 0. Batch-major sequences ``[N, T, I]`` are
``N`` independent rows; time-major ``[N*T, B, I]`` holds ``N`` samples of ``T`` steps. Row
``r`` of a sample starts from row ``r % B`` of the initial states.

Float32 also takes what TFLM refuses but ONNX has: peepholes and ``gate_clip``. CIFG,
projection and layer normalization are refused with one error naming the node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    wrap_int32,
)
from edgenn.arith.fixed_point_s16 import (
    INT16_MAX,
    INT16_MIN,
    multiply_by_quantized_multiplier_64,
)
from edgenn.arith.int16_curves import Int16InputScaling, int16_sigmoid, int16_tanh
from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.ref.kernels.common import Operands, per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import ShapeError, UnsupportedOperatorError
from edgenn.ir import DType, QuantParams, Tensor
from edgenn.ir.opdefs.recurrent import LSTM_INDEX

GATES = ("forget", "input", "cell", "output")  # TFLM's evaluation order
GATE_INPUT_SCALE = 2.0**-12  # Q3.12: the FC outputs feeding the gate activations
GATE_OUTPUT_SCALE = 2.0**-15  # Q0.15: the gate activations' outputs
GATE_TANH_SCALING = Int16InputScaling.for_power(-12)  # the gates' tanh of Q3.12

IntArray = npt.NDArray[np.int64]


# -- constants ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Requant:
    """``clamp(MultiplyByQuantizedMultiplier(v, multiplier, shift) + zero_point, lo, hi)``."""

    multiplier: int
    shift: int
    zero_point: int = 0
    lo: int = INT16_MIN
    hi: int = INT16_MAX

    def __call__(self, v: IntArray, wide: bool = False) -> IntArray:
        """``wide``: ``v`` is a 64-bit accumulator (the 16x8 FC)."""
        if wide:
            y = multiply_by_quantized_multiplier_64(v, self.multiplier, self.shift)
        else:
            y = multiply_by_quantized_multiplier(wrap_int32(v), self.multiplier, self.shift)
        return np.clip(y + self.zero_point, self.lo, self.hi)


def _requant(real: float, zero_point: int = 0, lo: int = INT16_MIN,
             hi: int = INT16_MAX) -> Requant:
    m, s = quantize_multiplier(real)
    return Requant(m, s, zero_point, lo, hi)


@dataclass(frozen=True)
class IntegerGate:
    """One gate's two FCs: weights as stored ([H, I] and [H, H]), int64 biases with the input
    and hidden zero points folded in, and their requantization to Q3.12."""

    w: IntArray
    r: IntArray
    bias_w: IntArray  # bias - x_zp * sum(w): added to the input FC
    bias_r: IntArray  # -h_zp * sum(r): added to the recurrent FC
    fc_w: Requant
    fc_r: Requant
    activation: str  # "sigmoid" or "tanh"


@dataclass(frozen=True)
class IntegerLstm:
    """Everything the integer step needs (TFLM's OpDataLSTM), shared with the C kernel."""

    gates: tuple[IntegerGate, ...]  # in GATES order
    wide: bool  # int16 activations: 64-bit accumulators and biases
    forget_mul: Requant  # f * c -> c
    input_mul: Requant  # i * g -> c
    output_mul: Requant  # tanh(c) * o -> h (the hidden state's zero point and range)
    cell_tanh: Int16InputScaling
    cell_clip: int  # 0: no clipping
    x_zp: int
    h_zp: int


def _scale_product(a: float, b: float) -> float:
    """``static_cast<double>(a) * static_cast<double>(b)`` of two float32 scales.

    Why double: TFLM's ``GetQuantizedConvolutionMultipler`` (what the gate FCs'
    ``CalculateOpDataFullyConnected`` calls) widens both scales before multiplying (the
    tflite-micro runtime the oracle installs: ``cvtss2sd`` twice, then ``mulsd``). A float32
    product loses up to half an ulp of float32, enough to move a gate's Q3.12 value by one
    where a full-range input gives a large accumulator: the cell state then differs by 1-4.
    """
    return float(np.float32(a)) * float(np.float32(b))


def _cell_scale_power(scale: float) -> int:
    """TFLite's ``CheckedLog2`` result (float32 arithmetic, rounded; not checked by TFLM)."""
    log2 = np.float32(np.log(np.float32(scale))) * np.float32(1.0 / np.log(np.float32(2.0)))
    return int(math.copysign(math.floor(abs(float(log2)) + 0.5), float(log2)))


# -- the layer ---------------------------------------------------------------------------------
@register("LSTM", DType.FLOAT32, DType.INT8, DType.INT16)
class Lstm(Layer):
    """See the module docstring."""

    def build(self) -> None:
        node = self.node
        self.time_major = bool(node.attr("time_major"))
        self.activation = str(node.attr("activation", "tanh"))
        self.cell_clip = float(node.attr("cell_clip", 0.0) or 0.0)
        self.gate_clip = float(node.attr("gate_clip", 0.0) or 0.0)
        self.operands = Operands(self.inputs)
        self.present = [i for i, t in enumerate(self.inputs) if t is not None]
        x = self.inputs[0]
        assert x is not None
        self.x_shape = x.shape
        self._refuse_variants()
        self.n_cell = self._tensor("input_to_forget_weights").shape[0]
        self.extra_outputs = len(self.outputs) == 3
        self.integer = x.dtype is not DType.FLOAT32
        if self.integer:
            self.params = self._integer_params()
        else:
            self._float_params()

    # -- checks --------------------------------------------------------------------------------
    def _tensor(self, name: str) -> Tensor:
        t = self.inputs[LSTM_INDEX[name]]
        if t is None:
            raise UnsupportedOperatorError(f"{self.node}: operand {name} is missing")
        return t

    def _present(self, name: str) -> bool:
        return self.inputs[LSTM_INDEX[name]] is not None

    def _refuse(self, what: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"{self.node}: LSTM with {what} is not supported")

    def _refuse_variants(self) -> None:
        if not self._present("input_to_input_weights"):
            raise self._refuse("coupled input and forget gates (CIFG)")
        if self._present("projection_weights") or self._present("projection_bias"):
            raise self._refuse("a projection layer")
        if any(self._present(f"{g}_layer_norm_coefficients") for g in GATES):
            raise self._refuse("layer normalization")
        for g in GATES:
            for kind in ("input_to", "recurrent_to"):
                self._tensor(f"{kind}_{g}_weights")
        x = self.inputs[0]
        assert x is not None
        if x.dtype is not DType.FLOAT32:
            if any(self._present(f"cell_to_{g}_weights") for g in ("input", "forget", "output")):
                raise self._refuse(f"{x.dtype.value} peephole connections")
            if self.gate_clip > 0:
                raise self._refuse(f"{x.dtype.value} input and gate_clip")
        if self.cell_clip < 0 or self.gate_clip < 0:
            raise UnsupportedOperatorError(f"{self.node}: clip values must be >= 0")

    # -- float32 -------------------------------------------------------------------------------
    def _const_f32(self, name: str) -> np.ndarray | None:
        t = self.inputs[LSTM_INDEX[name]]
        if t is None:
            return None
        data = self.const(LSTM_INDEX[name])
        if t.dtype is not DType.FLOAT32 or data is None:
            raise UnsupportedOperatorError(
                f"{self.node}: float32 LSTM needs float32 constant {name}, got "
                f"{t.dtype.value} {t.name!r}")
        return data

    def _float_params(self) -> None:
        h = self.n_cell
        self.w_f: list[np.ndarray] = []
        self.r_f: list[np.ndarray] = []
        self.b_f: list[np.ndarray] = []
        for g in GATES:
            w = self._const_f32(f"input_to_{g}_weights")
            r = self._const_f32(f"recurrent_to_{g}_weights")
            b = self._const_f32(f"{g}_gate_bias")
            assert w is not None and r is not None
            self.w_f.append(np.ascontiguousarray(w.T))
            self.r_f.append(np.ascontiguousarray(r.T))
            self.b_f.append(np.zeros(h, np.float32) if b is None else b)
        self.peephole = {g: self._const_f32(f"cell_to_{g}_weights")
                         for g in ("input", "forget", "output")}

    def _gate_f32(self, k: int, x_t: np.ndarray, h: np.ndarray, c: np.ndarray | None,
                  activation: str) -> np.ndarray:
        z = (x_t @ self.w_f[k] + self.b_f[k]) + h @ self.r_f[k]
        peep = self.peephole.get(GATES[k])
        if peep is not None and c is not None:
            z = z + peep * c
        if self.gate_clip > 0:
            z = np.clip(z, -self.gate_clip, self.gate_clip)
        return sigmoid_f32(z) if activation == "sigmoid" else np.tanh(z)

    def _step_f32(self, x_t: np.ndarray, h: np.ndarray,
                  c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = self._gate_f32(0, x_t, h, c, "sigmoid")
        i = self._gate_f32(1, x_t, h, c, "sigmoid")
        g = self._gate_f32(2, x_t, h, None, self.activation)
        c = f * c + i * g
        if self.cell_clip > 0:
            c = np.clip(c, -self.cell_clip, self.cell_clip)
        o = self._gate_f32(3, x_t, h, c, "sigmoid")  # the output peephole sees the new cell
        return (np.tanh(c) * o).astype(np.float32), c.astype(np.float32)

    # -- integer -------------------------------------------------------------------------------
    def _integer_params(self) -> IntegerLstm:
        x = self.inputs[0]
        assert x is not None
        wide = x.dtype is DType.INT16
        xq = per_tensor(self, x, "input")
        hidden, cell = self._tensor("output_state"), self._tensor("cell_state")
        hq = per_tensor(self, hidden, "output_state")
        cq = per_tensor(self, cell, "cell_state")
        bias_type = DType.INT64 if wide else DType.INT32
        if hidden.dtype is not x.dtype or cell.dtype is not DType.INT16:
            raise UnsupportedOperatorError(
                f"{self.node}: integer LSTM needs a {x.dtype.value} hidden state and an int16 "
                f"cell state, got {hidden.dtype.value} and {cell.dtype.value}")
        if wide and (xq.zp != 0 or hq.zp != 0):
            raise UnsupportedOperatorError(
                f"{self.node}: int16 LSTM activations must have zero point 0")
        gates = tuple(self._integer_gate(g, xq, hq, bias_type) for g in GATES)
        info = np.iinfo(hidden.dtype.numpy)
        clip = 0
        if self.cell_clip > 0:
            clip = int(min(max(self.cell_clip / cq.s, -32768.0), 32767.0))  # C cast truncates
        return IntegerLstm(
            gates, wide,
            forget_mul=_requant(GATE_OUTPUT_SCALE * cq.s / cq.s),
            input_mul=_requant(GATE_OUTPUT_SCALE * GATE_OUTPUT_SCALE / cq.s),
            output_mul=_requant(GATE_OUTPUT_SCALE * GATE_OUTPUT_SCALE / hq.s, hq.zp,
                                int(info.min), int(info.max)),
            cell_tanh=Int16InputScaling.for_power(_cell_scale_power(cq.s)),
            cell_clip=clip, x_zp=xq.zp, h_zp=hq.zp)

    def _integer_gate(self, g: str, xq: QuantParams, hq: QuantParams,
                      bias_type: DType) -> IntegerGate:
        """Gate ``g``'s weights, folded biases and FC requantizations (CreateGateParams)."""
        w_name, r_name = f"input_to_{g}_weights", f"recurrent_to_{g}_weights"
        w, r = self._int8_weights(w_name), self._int8_weights(r_name)
        bias = np.zeros(self.n_cell, np.int64)
        b_t = self.inputs[LSTM_INDEX[f"{g}_gate_bias"]]
        if b_t is not None:
            data = self.const(LSTM_INDEX[f"{g}_gate_bias"])
            if b_t.dtype is not bias_type or data is None:
                raise UnsupportedOperatorError(
                    f"{self.node}: integer LSTM needs {bias_type.value} constant biases, got "
                    f"{b_t.dtype.value} {b_t.name!r}")
            bias = data.astype(np.int64)
        ws = per_tensor(self, self._tensor(w_name), w_name).s
        rs = per_tensor(self, self._tensor(r_name), r_name).s
        fc_w = _requant(_scale_product(xq.s, ws) / GATE_INPUT_SCALE)
        fc_r = _requant(_scale_product(hq.s, rs) / GATE_INPUT_SCALE)
        act = self.activation if g == "cell" else "sigmoid"
        return IntegerGate(w, r, fold_input_zero_point(bias, w, xq.zp),
                           fold_input_zero_point(0, r, hq.zp), fc_w, fc_r, act)

    def _int8_weights(self, name: str) -> IntArray:
        t = self._tensor(name)
        q: QuantParams = per_tensor(self, t, name)
        data = self.const(LSTM_INDEX[name])
        if t.dtype is not DType.INT8 or data is None or q.zp != 0:
            raise UnsupportedOperatorError(
                f"{self.node}: integer LSTM needs int8 symmetric constant weights, got "
                f"{t.dtype.value} {t.name!r} (zero point {q.zp})")
        return data.astype(np.int64)

    def _gate_int(self, gate: IntegerGate, x_t: IntArray, h: IntArray) -> IntArray:
        p = self.params
        acc_w = x_t @ gate.w.T + gate.bias_w
        acc_r = h @ gate.r.T + gate.bias_r
        z = np.clip(gate.fc_w(acc_w, p.wide) + gate.fc_r(acc_r, p.wide), INT16_MIN, INT16_MAX)
        if gate.activation == "sigmoid":
            return int16_sigmoid(z)
        return int16_tanh(z, GATE_TANH_SCALING)

    def _step_int(self, x_t: IntArray, h: IntArray, c: IntArray) -> tuple[IntArray, IntArray]:
        p = self.params
        f = self._gate_int(p.gates[0], x_t, h)
        i = self._gate_int(p.gates[1], x_t, h)
        g = self._gate_int(p.gates[2], x_t, h)
        c = np.clip(p.forget_mul(f * c) + p.input_mul(i * g), INT16_MIN, INT16_MAX)
        if p.cell_clip > 0:
            c = np.clip(c, -p.cell_clip, p.cell_clip)
        o = self._gate_int(p.gates[3], x_t, h)
        return p.output_mul(int16_tanh(c, p.cell_tanh) * o), c

    # -- the sequence --------------------------------------------------------------------------
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        ops = dict(zip(self.present, self.operands.gather(xs), strict=True))
        x = ops[0]
        rows, steps = sequence_rows(x, self.x_shape, self.time_major)
        h = initial_rows(ops[LSTM_INDEX["output_state"]], len(rows), self.n_cell, self.node)
        c = initial_rows(ops[LSTM_INDEX["cell_state"]], len(rows), self.n_cell, self.node)
        out_t = self.outputs[0].dtype.numpy
        y = np.empty((len(rows), steps, h.shape[1]), out_t)
        if self.integer:
            h, c = h.astype(np.int64), c.astype(np.int64)
            for t in range(steps):
                h, c = self._step_int(rows[:, t].astype(np.int64), h, c)
                y[:, t] = h
        else:
            h, c = h.astype(np.float32), c.astype(np.float32)
            for t in range(steps):
                h, c = self._step_f32(rows[:, t].astype(np.float32), h, c)
                y[:, t] = h
        outs = [sequence_layout(y, x.shape, self.x_shape, self.time_major)]
        if self.extra_outputs:
            outs += [h.astype(self.outputs[1].dtype.numpy),
                     c.astype(self.outputs[2].dtype.numpy)]
        return outs


def sigmoid_f32(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)) in float32 without overflow warnings."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)


# -- batch layout shared with GRU ------------------------------------------------------------------
def sequence_rows(x: np.ndarray, graph_shape: tuple[int, ...],
                  time_major: bool) -> tuple[np.ndarray, int]:
    """(``[rows, T, I]``, T) from the runtime's array (see the module docstring)."""
    if not time_major:
        return x, x.shape[1]
    steps = graph_shape[0]
    if x.shape[0] % steps:
        raise ShapeError(f"time-major sequence of {x.shape[0]} steps is not a whole number of "
                         f"{steps}-step samples")
    n = x.shape[0] // steps
    stacked = x.reshape(n, steps, x.shape[1], x.shape[2]).transpose(0, 2, 1, 3)
    return stacked.reshape(n * x.shape[1], steps, x.shape[2]), steps


def sequence_layout(y: np.ndarray, x_shape: tuple[int, ...], graph_shape: tuple[int, ...],
                    time_major: bool) -> np.ndarray:
    """``[rows, T, H]`` back to the runtime layout of the input (inverse of sequence_rows)."""
    if not time_major:
        return y
    steps, batch = graph_shape[0], x_shape[1]
    n = y.shape[0] // batch
    out = y.reshape(n, batch, steps, y.shape[2]).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(out.reshape(n * steps, batch, y.shape[2]))


def initial_rows(state: np.ndarray, rows: int, units: int, node: Any) -> np.ndarray:
    """The initial state of each of ``rows`` sequences: row ``r`` takes state row ``r % B``."""
    flat = state.reshape(-1, units)
    if rows % flat.shape[0]:
        raise ShapeError(f"{node}: {flat.shape[0]} initial state rows do not divide "
                         f"{rows} sequences")
    return flat[np.arange(rows) % flat.shape[0]]
