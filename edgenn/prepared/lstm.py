"""The record of the LSTM (TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM ``OpDataLSTM``): the
checks TFLM's prepare makes and, for an integer LSTM, the constants of its gate FCs, of the
element-wise products and of the activations' input scaling (``IntegerLstm``: how TFLM
derives each is said in ``backends/ref/kernels/lstm.py``, the layer that runs them); for a
float32 LSTM, its weights transposed for the products, biases and optional peepholes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
from edgenn.arith.int16_curves import Int16InputScaling
from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.opdefs.recurrent import LSTM_INDEX
from edgenn.prepared.quant import const_data, per_tensor

GATES = ("forget", "input", "cell", "output")  # TFLM's evaluation order
GATE_INPUT_SCALE = 2.0**-12  # Q3.12: the FC outputs feeding the gate activations
GATE_OUTPUT_SCALE = 2.0**-15  # Q0.15: the gate activations' outputs
GATE_TANH_SCALING = Int16InputScaling.for_power(-12)  # the gates' tanh of Q3.12

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class GateRequant:
    """``clamp(MultiplyByQuantizedMultiplier(v, mult, shift) + out_zp, act_min, act_max)``."""

    mult: int
    shift: int
    out_zp: int = 0
    act_min: int = INT16_MIN
    act_max: int = INT16_MAX

    def __call__(self, v: IntArray, wide: bool = False) -> IntArray:
        """``wide``: ``v`` is a 64-bit accumulator (the 16x8 FC)."""
        if wide:
            y = multiply_by_quantized_multiplier_64(v, self.mult, self.shift)
        else:
            y = multiply_by_quantized_multiplier(wrap_int32(v), self.mult, self.shift)
        return np.clip(y + self.out_zp, self.act_min, self.act_max)


def _requant(real: float, zero_point: int = 0, lo: int = INT16_MIN,
             hi: int = INT16_MAX) -> GateRequant:
    m, s = quantize_multiplier(real)
    return GateRequant(m, s, zero_point, lo, hi)


@dataclass(frozen=True)
class IntegerGate:
    """One gate's two FCs: weights as stored ([H, I] and [H, H]), int64 biases with the input
    and hidden zero points folded in, and their requantization to Q3.12."""

    w: IntArray
    r: IntArray
    bias_w: IntArray  # bias - x_zp * sum(w): added to the input FC
    bias_r: IntArray  # -h_zp * sum(r): added to the recurrent FC
    fc_w: GateRequant
    fc_r: GateRequant
    activation: str  # "sigmoid" or "tanh"


@dataclass(frozen=True)
class IntegerLstm:
    """Everything the integer step needs (TFLM's OpDataLSTM), shared with the C kernel."""

    gates: tuple[IntegerGate, ...]  # in GATES order
    wide: bool  # int16 activations: 64-bit accumulators and biases
    forget_mul: GateRequant  # f * c -> c
    input_mul: GateRequant  # i * g -> c
    output_mul: GateRequant  # tanh(c) * o -> h (the hidden state's zero point and range)
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


@dataclass(frozen=True)
class LstmParams:
    """An LSTM's attributes and, integer, its ``integer`` constants; float32, its gate weights
    transposed for ``x @ w`` (``w_f``, ``r_f``: [I, H], [H, H] per gate in GATES order), biases
    and optional peepholes."""

    time_major: bool
    activation: str
    cell_clip: float
    gate_clip: float
    n_cell: int
    extra_outputs: bool
    integer: IntegerLstm | None
    w_f: tuple[np.ndarray, ...] = ()
    r_f: tuple[np.ndarray, ...] = ()
    b_f: tuple[np.ndarray, ...] = ()
    peephole: dict[str, np.ndarray | None] | None = None


class _Operands:
    """The node's LSTM operands by name, with the one-line errors of the checks."""

    def __init__(self, node: Node, graph: Graph) -> None:
        self.node = node
        self.inputs = [graph.tensor(n) if n else None for n in node.inputs]

    def present(self, name: str) -> bool:
        i = LSTM_INDEX[name]
        return i < len(self.inputs) and self.inputs[i] is not None

    def tensor(self, name: str) -> Tensor:
        t = self.inputs[LSTM_INDEX[name]] if self.present(name) else None
        if t is None:
            raise UnsupportedOperatorError(f"{self.node}: operand {name} is missing")
        return t

    def refuse(self, what: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"{self.node}: LSTM with {what} is not supported")


def _refuse_variants(ops: _Operands, x: Tensor, cell_clip: float, gate_clip: float) -> None:
    if not ops.present("input_to_input_weights"):
        raise ops.refuse("coupled input and forget gates (CIFG)")
    if ops.present("projection_weights") or ops.present("projection_bias"):
        raise ops.refuse("a projection layer")
    if any(ops.present(f"{g}_layer_norm_coefficients") for g in GATES):
        raise ops.refuse("layer normalization")
    for g in GATES:
        for kind in ("input_to", "recurrent_to"):
            ops.tensor(f"{kind}_{g}_weights")
    if x.dtype is not DType.FLOAT32:
        if any(ops.present(f"cell_to_{g}_weights") for g in ("input", "forget", "output")):
            raise ops.refuse(f"{x.dtype.value} peephole connections")
        if gate_clip > 0:
            raise ops.refuse(f"{x.dtype.value} input and gate_clip")
    if cell_clip < 0 or gate_clip < 0:
        raise UnsupportedOperatorError(f"{ops.node}: clip values must be >= 0")


def _const_f32(ops: _Operands, name: str) -> np.ndarray | None:
    if not ops.present(name):
        return None
    t = ops.tensor(name)
    if t.dtype is not DType.FLOAT32 or t.data is None:
        raise UnsupportedOperatorError(
            f"{ops.node}: float32 LSTM needs float32 constant {name}, got "
            f"{t.dtype.value} {t.name!r}")
    return t.data


def _int8_weights(ops: _Operands, name: str) -> IntArray:
    t = ops.tensor(name)
    q: QuantParams = per_tensor(ops.node, t, name)
    if t.dtype is not DType.INT8 or t.data is None or q.zp != 0:
        raise UnsupportedOperatorError(
            f"{ops.node}: integer LSTM needs int8 symmetric constant weights, got "
            f"{t.dtype.value} {t.name!r} (zero point {q.zp})")
    return t.data.astype(np.int64)


def _integer_gate(ops: _Operands, g: str, activation: str, n_cell: int, xq: QuantParams,
                  hq: QuantParams, bias_type: DType) -> IntegerGate:
    """Gate ``g``'s weights, folded biases and FC requantizations (CreateGateParams)."""
    w_name, r_name = f"input_to_{g}_weights", f"recurrent_to_{g}_weights"
    w, r = _int8_weights(ops, w_name), _int8_weights(ops, r_name)
    bias = np.zeros(n_cell, np.int64)
    if ops.present(f"{g}_gate_bias"):
        b_t = ops.tensor(f"{g}_gate_bias")
        data = const_data(ops.node, b_t) if b_t.data is not None else None
        if b_t.dtype is not bias_type or data is None:
            raise UnsupportedOperatorError(
                f"{ops.node}: integer LSTM needs {bias_type.value} constant biases, got "
                f"{b_t.dtype.value} {b_t.name!r}")
        bias = data.astype(np.int64)
    ws = per_tensor(ops.node, ops.tensor(w_name), w_name).s
    rs = per_tensor(ops.node, ops.tensor(r_name), r_name).s
    fc_w = _requant(_scale_product(xq.s, ws) / GATE_INPUT_SCALE)
    fc_r = _requant(_scale_product(hq.s, rs) / GATE_INPUT_SCALE)
    act = activation if g == "cell" else "sigmoid"
    return IntegerGate(w, r, fold_input_zero_point(bias, w, xq.zp),
                       fold_input_zero_point(0, r, hq.zp), fc_w, fc_r, act)


def _integer_params(ops: _Operands, x: Tensor, activation: str, cell_clip: float,
                    n_cell: int) -> IntegerLstm:
    wide = x.dtype is DType.INT16
    xq = per_tensor(ops.node, x, "input")
    hidden, cell = ops.tensor("output_state"), ops.tensor("cell_state")
    hq = per_tensor(ops.node, hidden, "output_state")
    cq = per_tensor(ops.node, cell, "cell_state")
    bias_type = DType.INT64 if wide else DType.INT32
    if hidden.dtype is not x.dtype or cell.dtype is not DType.INT16:
        raise UnsupportedOperatorError(
            f"{ops.node}: integer LSTM needs a {x.dtype.value} hidden state and an int16 "
            f"cell state, got {hidden.dtype.value} and {cell.dtype.value}")
    if wide and (xq.zp != 0 or hq.zp != 0):
        raise UnsupportedOperatorError(
            f"{ops.node}: int16 LSTM activations must have zero point 0")
    gates = tuple(_integer_gate(ops, g, activation, n_cell, xq, hq, bias_type) for g in GATES)
    info = np.iinfo(hidden.dtype.numpy)
    clip = 0
    if cell_clip > 0:
        clip = int(min(max(cell_clip / cq.s, -32768.0), 32767.0))  # C cast truncates
    return IntegerLstm(
        gates, wide,
        forget_mul=_requant(GATE_OUTPUT_SCALE * cq.s / cq.s),
        input_mul=_requant(GATE_OUTPUT_SCALE * GATE_OUTPUT_SCALE / cq.s),
        output_mul=_requant(GATE_OUTPUT_SCALE * GATE_OUTPUT_SCALE / hq.s, hq.zp,
                            int(info.min), int(info.max)),
        cell_tanh=Int16InputScaling.for_power(_cell_scale_power(cq.s)),
        cell_clip=clip, x_zp=xq.zp, h_zp=hq.zp)


def prepare_lstm(node: Node, graph: Graph) -> LstmParams:
    """The record of an LSTM node (one error for the variants TFLM refuses)."""
    ops = _Operands(node, graph)
    x = graph.tensor(node.inputs[0])
    time_major = bool(node.attr("time_major"))
    activation = str(node.attr("activation", "tanh"))
    cell_clip = float(node.attr("cell_clip", 0.0) or 0.0)
    gate_clip = float(node.attr("gate_clip", 0.0) or 0.0)
    _refuse_variants(ops, x, cell_clip, gate_clip)
    n_cell = ops.tensor("input_to_forget_weights").shape[0]
    base = (time_major, activation, cell_clip, gate_clip, n_cell, len(node.outputs) == 3)
    if x.dtype is not DType.FLOAT32:
        return LstmParams(*base, _integer_params(ops, x, activation, cell_clip, n_cell))
    w_f, r_f, b_f = [], [], []
    for g in GATES:
        w = _const_f32(ops, f"input_to_{g}_weights")
        r = _const_f32(ops, f"recurrent_to_{g}_weights")
        b = _const_f32(ops, f"{g}_gate_bias")
        assert w is not None and r is not None
        w_f.append(np.ascontiguousarray(w.T))
        r_f.append(np.ascontiguousarray(r.T))
        b_f.append(np.zeros(n_cell, np.float32) if b is None else b)
    peephole = {g: _const_f32(ops, f"cell_to_{g}_weights") for g in ("input", "forget", "output")}
    return LstmParams(*base, None, tuple(w_f), tuple(r_f), tuple(b_f), peephole)
