"""Element-wise binary operators, bit-exact with TFLite Micro's reference kernels.

Add, Sub, Mul, Div, Maximum, Minimum, SquaredDifference, PRelu and Pow on float32 / int8 /
int16 (where TFLM has the type). Broadcasting is numpy's (TFLM's ``BroadcastBinaryOpSimple``
indexes the same way). The quantized constants are the record of ``edgenn.prepared.binary``
and the integer arithmetic is ``edgenn.prepared.binary_eval`` (which the Cortex-M generators
tabulate too), as TFLM's Prepare / Eval:

* Add, Sub: each input ``(q - zp) << left_shift`` (20 for int8, 15 for int16) is scaled by
  ``s_i / (2 max(s_a, s_b))``, the two are added or subtracted, the result is scaled by
  ``2 max(s_a, s_b) / (2**left_shift s_out)`` (multipliers derived in double);
* Mul: ``(a - zp_a)(b - zp_b)`` scaled by ``s_a s_b / s_out`` (int16: zero points 0);
* Div (int8): the divisor's fixed-point reciprocal (``GetReciprocal``), the dividend shifted
  to its headroom, then one rescale by ``s_a / (s_b s_out)`` and the combined shift;
* SquaredDifference: the inputs rescaled as for Sub with left shift 7 (int8) or 0 (int16),
  the difference squared in int32, scaled by ``(2 max)^2 / (2**(2 left_shift) s_out)``;
* PRelu: ``x - zp`` scaled by ``s_x / s_out`` where non-negative, else ``(x - zp)(alpha -
  zp_alpha)`` scaled by ``s_x s_alpha / s_out`` (int16 inputs take int8 alpha);
* Maximum, Minimum compare the stored integers, which needs one quantization for both inputs
  and the output (TFLite's operator spec; TFLM does not rescale).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType
from edgenn.prepared.binary import prepare_binary
from edgenn.prepared.binary_eval import binary_int

F32, I8, I16 = DType.FLOAT32, DType.INT8, DType.INT16


def to_output_rank(x: np.ndarray, ir_shape: tuple[int, ...], rank: int) -> np.ndarray:
    """A batch-first runtime array of a lower-rank input, with its missing broadcast axes
    inserted after the batch axis.

    why: numpy aligns trailing axes, so an input of IR shape [1, C] broadcasts against
    [1, H, W, C] as [1, 1, 1, C]; with a batch of N samples it arrives as [N, C] and must
    become [N, 1, 1, C], not be aligned with the output's W axis.
    """
    missing = rank - len(ir_shape)
    if missing <= 0 or not ir_shape or ir_shape[0] != 1:
        return x
    return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])


class BinaryLayer(Layer):
    """Shared build / run: operands, the record, float32 or integer arithmetic.

    Subclasses set ``types`` (the element types TFLM takes) and implement ``float_op``.
    """

    types: ClassVar[tuple[DType, ...]] = (F32, I8, I16)

    def build(self) -> None:
        self.operands = Operands(self.inputs)
        out = self.outputs[0]
        self.dtype = out.dtype
        first = self.inputs[0]
        if first is None or first.dtype not in self.types or out.dtype != first.dtype:
            got = first.dtype.value if first is not None else "?"
            raise UnsupportedOperatorError(
                f"{self.node}: {self.node.op} does not take {got} input with "
                f"{out.dtype.value} output")
        self.rank = len(out.shape)
        self.shapes = [t.shape if t is not None and not t.is_const else None
                       for t in self.inputs]
        self.p = prepare_binary(self.node, self.graph)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        # why: a computed lower-rank operand (a reduction's [1] result against [1, C, 1, 1])
        # carries the batch in its axis 0, so its broadcast axes go after that axis
        a, b = (x if shape is None else to_output_rank(x, shape, self.rank)
                for x, shape in zip(self.operands.gather(xs), self.shapes, strict=True))
        if self.dtype is F32:
            with np.errstate(all="ignore"):  # inf / nan as the C float arithmetic gives them
                y = self.float_op(a.astype(np.float32, copy=False),
                                  b.astype(np.float32, copy=False))
            return [np.clip(y, self.p.act_min, self.p.act_max).astype(np.float32, copy=False)]
        return [binary_int(self.p, a.astype(np.int64), b.astype(np.int64))
                .astype(self.dtype.numpy)]

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@register("Add", F32, I8, I16)
class Add(BinaryLayer):
    """ADD; int16 takes TFLM's general path, left shift 15 (TFLM Micro does not take
    TFLite's power-of-two-scale int16 path)."""

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b


@register("Sub", F32, I8, I16)
class Sub(BinaryLayer):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a - b


@register("Mul", F32, I8, I16)
class Mul(BinaryLayer):
    """MUL; TFLM's int16 kernel needs zero points of 0."""

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a * b


@register("Div", F32, I8)
class Div(BinaryLayer):
    """TFLM's DIV: float32 and int8 (TFLM has no int16 DIV).

    TFLM computes the quotient from a 31-bit reciprocal of the divisor with shifts its C++
    leaves undefined in two corners, where this layer gives what TFLM's x86 build computes
    (``binary_eval.rounding_divide_by_pot_wide``): dividends so small that the final shift
    exceeds 31 bits, and a divisor equal to its zero point (a division by zero, which TFLM
    does not reject: ``GetReciprocal(0)`` shifts by 32, taken as 0).
    """

    types = (F32, I8)

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a / b


@register("Maximum", F32, I8, I16)
class Maximum(BinaryLayer):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a > b, a, b)  # TFLM's el1 > el2 ? el1 : el2 (NaN handling too)


@register("Minimum", F32, I8, I16)
class Minimum(BinaryLayer):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a < b, a, b)


@register("Pow", F32)
class Pow(BinaryLayer):
    """float32 only (TFLite's POW and ONNX's Pow on float); C's powf is what both call."""

    types: ClassVar[tuple[DType, ...]] = (F32,)

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):  # why: a negative base with a fractional exponent is NaN
            return np.power(a, b)


@register("SquaredDifference", F32, I8, I16)
class SquaredDifference(BinaryLayer):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = a - b
        return d * d


@register("PRelu", F32, I8, I16)
class PRelu(BinaryLayer):
    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a >= 0, a, a * b)
