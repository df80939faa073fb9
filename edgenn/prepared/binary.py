"""The record of the element-wise binary operators, as TFLite Micro's Prepare computes it.

Add, Sub, Mul, Div, Maximum, Minimum, SquaredDifference, PRelu and Pow (TFLM's ``OpDataAdd``,
``OpDataMul``, ... in one record; unused fields stay 0). Quantized:

* Add, Sub: each input ``(q - zp) << left_shift`` (20 for int8, 15 for int16) is scaled by
  ``s_i / (2 max(s_a, s_b))`` (``a_mult`` / ``b_mult``), combined, then scaled by
  ``2 max(s_a, s_b) / (2**left_shift s_out)`` (``out_mult``), multipliers derived in double;
* Mul: ``(a - a_zp)(b - b_zp)`` scaled by ``s_a s_b / s_out`` (``mult``; int16: zero points 0);
* Div (int8): one rescale by ``s_a / (s_b s_out)`` (``mult``) after the reciprocal;
* SquaredDifference: the inputs rescaled as for Sub with left shift 7 (int8) or 0 (int16),
  the square scaled by ``(2 max)^2 / (2**(2 left_shift) s_out)``;
* PRelu: ``x - a_zp`` scaled by ``s_x / s_out`` (``a_mult``) where non-negative, else
  ``(x - a_zp)(alpha - b_zp)`` by ``s_x s_alpha / s_out`` (``mult``);
* Maximum, Minimum compare the stored integers (one quantization for inputs and output).

The integer arithmetic on these constants is ``edgenn.prepared.binary_eval``.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.arith.fixed_point import activation_range, activation_range_float, quantize_multiplier
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node, QuantParams
from edgenn.prepared.quant import activation_of, per_tensor

ADD_LEFT_SHIFT = 20  # TFLite's left shift for int8 ADD (15 for int16)
# the multiplier shifts TFLM's int8 DIV keeps within defined C++ (see prepare_binary)
DIV_SHIFTS = (-25, 22)
# the operators TFLite fuses an activation into: their float output is clamped to the
# activation's range, +-FLT_MAX without one (the others pass +-inf)
FUSING = frozenset({"Add", "Sub", "Mul", "Div"})


@dataclass(frozen=True)
class BinaryParams:
    """One binary operator's constants (see the module docstring for each operator's)."""

    op: str
    dtype: DType
    act_min: int | float
    act_max: int | float
    a_zp: int = 0
    b_zp: int = 0
    out_zp: int = 0
    left_shift: int = 0
    a_mult: int = 0
    a_shift: int = 0
    b_mult: int = 0
    b_shift: int = 0
    out_mult: int = 0
    out_shift: int = 0
    mult: int = 0
    shift: int = 0

    @property
    def quantized(self) -> bool:
        return self.dtype is not DType.FLOAT32


def _zero_points_zero(node: Node, dtype: DType, *quants: QuantParams) -> None:
    """TFLM's int16 kernels of this operator refuse non-zero zero points."""
    if dtype is DType.INT16 and any(q.zp != 0 for q in quants):
        raise UnsupportedOperatorError(
            f"{node}: int16 {node.op} needs zero points of 0 (got {[q.zp for q in quants]})")


def _rescaled_pair(qa: QuantParams, qb: QuantParams) -> tuple[float, tuple[int, int, int, int]]:
    """``2 max(s_a, s_b)`` and the two inputs' multipliers to that common scale."""
    twice_max = 2.0 * max(qa.s, qb.s)
    return twice_max, (*quantize_multiplier(qa.s / twice_max),
                       *quantize_multiplier(qb.s / twice_max))


def prepare_binary(node: Node, graph: Graph) -> BinaryParams:
    """The record of a binary element-wise node (one error where TFLM has no kernel)."""
    out = graph.tensor(node.outputs[0])
    act = activation_of(node)
    op, dtype = node.op, out.dtype
    if dtype is DType.FLOAT32:
        lo, hi = activation_range_float(act, graph.finite_float_clamp and op in FUSING)
        return BinaryParams(op, dtype, lo, hi)
    qa = per_tensor(node, graph.tensor(node.inputs[0]), "first input")
    qb = per_tensor(node, graph.tensor(node.inputs[1]), "second input")
    qo = per_tensor(node, out, "output")
    ilo, ihi = activation_range(act, qo, dtype)
    zps = {"a_zp": qa.zp, "b_zp": qb.zp, "out_zp": qo.zp}
    if op in ("Add", "Sub"):
        left = 15 if dtype is DType.INT16 else ADD_LEFT_SHIFT
        twice_max, (am, ash, bm, bsh) = _rescaled_pair(qa, qb)
        om, osh = quantize_multiplier(twice_max / ((1 << left) * qo.s))
        return BinaryParams(op, dtype, ilo, ihi, **zps, left_shift=left, a_mult=am,
                            a_shift=ash, b_mult=bm, b_shift=bsh, out_mult=om, out_shift=osh)
    if op == "Mul":
        _zero_points_zero(node, dtype, qa, qb, qo)
        m, sh = quantize_multiplier(qa.s * qb.s / qo.s)
        return BinaryParams(op, dtype, ilo, ihi, **zps, mult=m, shift=sh)
    if op == "Div":
        m, sh = quantize_multiplier(qa.s / (qb.s * qo.s))
        # why: the final right shift is headroom + recip_shift - sh, with an int8 dividend's
        # headroom in [23, 31] and recip_shift in [-1, 7]: below -25 it would pass 63 bits,
        # above 22 turn into a left shift, both undefined in TFLM's C++
        low, high = DIV_SHIFTS
        if not low <= sh <= high:
            raise UnsupportedOperatorError(
                f"{node}: int8 DIV rescale s_a / (s_b s_out) = {qa.s / (qb.s * qo.s):.3g} is "
                f"outside TFLM's fixed-point division (2^{low - 1} to 2^{high})")
        return BinaryParams(op, dtype, ilo, ihi, **zps, mult=m, shift=sh)
    if op in ("Maximum", "Minimum"):
        if not qa == qb == qo:
            raise UnsupportedOperatorError(
                f"{node}: quantized {op} needs one quantization for both inputs and the "
                f"output (got {qa!r}, {qb!r}, {qo!r})")
        return BinaryParams(op, dtype, ilo, ihi, **zps)
    if op == "SquaredDifference":
        _zero_points_zero(node, dtype, qa, qb, qo)
        # why: TFLM's shifts keep the square of the rescaled difference (each rescaled input
        # at most half its shifted value) inside int32: 7 for int8, 0 for int16
        left = 0 if dtype is DType.INT16 else 7
        twice_max, (am, ash, bm, bsh) = _rescaled_pair(qa, qb)
        om, osh = quantize_multiplier(twice_max * twice_max / ((1 << 2 * left) * qo.s))
        return BinaryParams(op, dtype, ilo, ihi, **zps, left_shift=left, a_mult=am,
                            a_shift=ash, b_mult=bm, b_shift=bsh, out_mult=om, out_shift=osh)
    if op == "PRelu":
        pm, psh = quantize_multiplier(qa.s / qo.s)
        nm, nsh = quantize_multiplier(qa.s * qb.s / qo.s)
        return BinaryParams(op, dtype, ilo, ihi, **zps, a_mult=pm, a_shift=psh, mult=nm,
                            shift=nsh)
    raise UnsupportedOperatorError(f"{node}: no quantized {op} ({dtype.value})")
