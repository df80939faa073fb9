"""Element-wise unary and binary operators: LEAKY_RELU, HARD_SWISH, ABS, RSQRT, NEG, SQRT,
EXP, LOG, SUB, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU.

Each IR node is one builtin with the same operands; the quantization of every tensor is
written as the graph has it (the kernels requantize, except MAXIMUM / MINIMUM, whose operands
the quantizer gives one set of parameters).
"""

from __future__ import annotations

from edgenn.export.lowering import OP, Lowering, fused, op_version
from edgenn.export.lowerings.common import broadcast_rank_above_4, options
from edgenn.export.ops import lowers
from edgenn.ir import DType

_UNARY: dict[str, tuple[int, str | None]] = {
    "LeakyRelu": (OP.LEAKY_RELU, "LeakyReluOptions"),
    "HardSwish": (OP.HARD_SWISH, "HardSwishOptions"),
    "Abs": (OP.ABS, "AbsOptions"),
    "Rsqrt": (OP.RSQRT, None),
    "Neg": (OP.NEG, "NegOptions"),
    "Sqrt": (OP.SQRT, None),
    "Exp": (OP.EXP, "ExpOptions"),
    "Log": (OP.LOG, None),
}


@lowers(*_UNARY)
def _unary(lw: Lowering) -> None:
    assert lw.node is not None
    builtin, table = _UNARY[lw.node.op]
    fields = {"alpha": float(lw.node.attr("alpha"))} if lw.node.op == "LeakyRelu" else {}
    if table is None:
        lw.emit(builtin, [lw.input(0)], [lw.output()])
        return
    lw.emit(builtin, [lw.input(0)], [lw.output()], *options(table, **fields))


@lowers("Sub")
def _sub(lw: Lowering) -> None:
    dtype = lw.ir(0).dtype
    fields: dict[str, object] = {"fused_activation_function": fused(lw)}
    version = op_version(OP.SUB, dtype)
    if dtype is DType.INT16:
        # why: the field defaults to true (power-of-two scales only) for TFLite's int16
        # kernel; quantized int16 scales are general
        fields["pot_scale_int16"] = False
    elif broadcast_rank_above_4(lw):
        version = 3
    lw.emit(OP.SUB, [lw.input(0), lw.input(1)], [lw.output()],
            *options("SubOptions", **fields), version=version)


@lowers("Div")
def _div(lw: Lowering) -> None:
    version = 2 if broadcast_rank_above_4(lw) else 1
    lw.emit(OP.DIV, [lw.input(0), lw.input(1)], [lw.output()],
            *options("DivOptions", fused_activation_function=fused(lw)), version=version)


@lowers("Maximum", "Minimum")
def _max_min(lw: Lowering) -> None:
    assert lw.node is not None
    builtin = OP.MAXIMUM if lw.node.op == "Maximum" else OP.MINIMUM
    dtype = lw.ir(0).dtype
    version = op_version(builtin, dtype)
    if dtype is not DType.INT16 and broadcast_rank_above_4(lw):
        version = 3
    lw.emit(builtin, [lw.input(0), lw.input(1)], [lw.output()],
            *options("MaximumMinimumOptions"), version=version)


@lowers("SquaredDifference")
def _squared_difference(lw: Lowering) -> None:
    lw.emit(OP.SQUARED_DIFFERENCE, [lw.input(0), lw.input(1)], [lw.output()],
            *options("SquaredDifferenceOptions"))


@lowers("PRelu")
def _prelu(lw: Lowering) -> None:
    if max(len(lw.ir(0).shape), len(lw.ir(1).shape)) > 4:
        raise lw.unsupported("TFLite Micro's PRELU broadcasts at most rank 4")
    lw.emit(OP.PRELU, [lw.input(0), lw.input(1)], [lw.output()])
