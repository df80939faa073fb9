"""The records of Sigmoid and Tanh on int8 and int16, as TFLite Micro's prepare computes them.

int8 (``reference_integer_ops::Logistic`` / ``Tanh``): the input minus its zero point is
scaled to a Q4.27 value by a multiplier and left shift taken from ``in_scale * 2**27``
(``frexp`` and round half away, as TFLM's prepare); inputs at or beyond the radius where
that scaling would overflow saturate to -128 / 127; the rest go through gemmlowp's
fixed-point logistic / tanh and are rounded down to the fixed output quantization:
Sigmoid scale 1/256 zero point -128, Tanh scale 1/128 zero point 0. An int8 input takes only
256 values, so the record holds that arithmetic over all of them (``table``).

int16 (``reference_integer_ops::Logistic`` / ``Tanh`` int16 overloads): zero points 0 and an
output scale of 2**-15; the input is rescaled to 1/(3*4096) per step (a multiplier of 3
shifted, for the power-of-two input scales TFLM recognises, else ``s_in * 3 * 4096`` doubled
up to [16384, 32767] and truncated), then ``sigmoid(i / 24)`` is interpolated linearly in a
256-entry Q0.16 table (tanh as ``2 * sigmoid(2x) - 1``) and rounded back to 16 bits
(``int16``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    gemmlowp_logistic,
    gemmlowp_tanh,
    multiply_by_quantized_multiplier,
    round_half_away,
    rounding_divide_by_pot,
    wrap_int32,
)
from edgenn.arith.int16_curves import Int16InputScaling, int16_sigmoid, int16_tanh
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor

INPUT_INTEGER_BITS = 4  # Q4.27 input of the fixed-point logistic and tanh (TFLM's prepare)
INT8_VALUES = np.arange(-128, 128, dtype=np.int64)


def input_scaling(input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, input_range_radius) as TFLM's int8 prepare.

    Unlike ``QuantizeMultiplier`` the C++ here does not renormalise a mantissa that rounds up
    to 2**31; the int32 cast then wraps, which ``wrap_int32`` mirrors.
    """
    real = float(np.float32(input_scale)) * (1 << (31 - INPUT_INTEGER_BITS))
    q, left_shift = math.frexp(real)
    if left_shift < 0:  # the C++ radius would shift by a negative amount
        raise ValueError(f"input scale {input_scale!r} is too small")
    multiplier = int(wrap_int32(int(round_half_away(q * (1 << 31)))))
    radius = (
        1.0 * ((1 << INPUT_INTEGER_BITS) - 1) * (1 << (31 - INPUT_INTEGER_BITS)) / (1 << left_shift)
    )
    return multiplier, left_shift, math.floor(radius)


class Int8Curve:
    """The int8 -> int8 table of a TFLM fixed-point activation (built once per layer)."""

    def __init__(self, node: Node, graph: Graph, out_scale: float, out_zp: int,
                 out_bits: int) -> None:
        qi = per_tensor(node, graph.tensor(node.inputs[0]), "input")
        qo = per_tensor(node, graph.tensor(node.outputs[0]), "output")
        if qo.zp != out_zp or abs(qo.s - out_scale) > 0.001 * out_scale:
            raise UnsupportedOperatorError(
                f"{node}: int8 {node.op} output must have scale "
                f"1/{round(1 / out_scale)} and zero point {out_zp}, got {qo!r}"
            )
        try:
            mult, left_shift, radius = input_scaling(qi.s)
        except ValueError as e:
            raise UnsupportedOperatorError(f"{node}: {e}") from None
        self.mult, self.left_shift, self.radius = mult, left_shift, radius
        self.out_zp, self.out_bits = out_zp, out_bits
        self.in_zp = qi.zp

    def table(self, curve_q0: Callable[[Any, int], Any]) -> npt.NDArray[np.int8]:
        """Output for each int8 input -128..127; ``curve_q0`` maps Q4.27 raw -> Q0.31 raw."""
        x = INT8_VALUES - self.in_zp
        inside = (x > -self.radius) & (x < self.radius)
        # Clip outside the radius only to keep the unused lanes from overflowing.
        xq = multiply_by_quantized_multiplier(np.where(inside, x, 0), self.mult, self.left_shift)
        y = curve_q0(xq, INPUT_INTEGER_BITS)
        y = rounding_divide_by_pot(y, 31 - self.out_bits) + self.out_zp
        y = np.clip(y, -128, 127)
        y = np.where(x <= -self.radius, -128, np.where(x >= self.radius, 127, y))
        return y.astype(np.int8)


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's ``CheckedLog2`` in float32: (x is a power of two within 1e-3, rounded log2)."""
    x_log2 = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(2.0)))
    rounded = np.float32(round_half_away(float(x_log2)))
    return bool(abs(float(np.float32(x_log2 - rounded))) < 1e-3), int(rounded)


class Int16Curve:
    """TFLM's int16 Logistic / Tanh: input rescaling constants and the interpolated table."""

    def __init__(self, node: Node, graph: Graph, tanh: bool) -> None:
        qi = per_tensor(node, graph.tensor(node.inputs[0]), "input")
        qo = per_tensor(node, graph.tensor(node.outputs[0]), "output")
        op = node.op
        if qi.zp != 0 or qo.zp != 0:
            raise UnsupportedOperatorError(
                f"{node}: int16 {op} needs zero points 0, got {qi.zp} and {qo.zp}")
        pot_out, log2_out = checked_log2(qo.s)
        if not pot_out or log2_out != -15:
            raise UnsupportedOperatorError(
                f"{node}: int16 {op} output scale must be 2**-15, got {qo.s:g}")
        pot, log2_in = checked_log2(qi.s)
        shift = 12 + log2_in  # (15 - 3 input integer bits) + log2(scale)
        # why tanh also takes 1: its table lookup uses one bit less of the input (>> 8)
        if pot and (shift == 0 or (tanh and shift == 1)):
            self.multiplier, self.shift = 3 << shift, 0
        else:
            m, shift = float(qi.s) * 4096.0 * 3.0, 0
            while m <= 32767.0 / 2.0 and shift <= 30:
                shift += 1
                m *= 2.0
            self.multiplier, self.shift = int(m), shift  # int(): the C++ cast truncates
        if self.multiplier > 32767:  # TFLM checks it (debug builds); larger would overflow
            raise UnsupportedOperatorError(
                f"{node}: int16 {op} input scale {qi.s:g} is too large")
        self.tanh = tanh

    def __call__(self, x: np.ndarray) -> np.ndarray:
        scaling = Int16InputScaling(self.multiplier, self.shift)
        curve = int16_tanh if self.tanh else int16_sigmoid
        return curve(x, scaling).astype(np.int16)


@dataclass(frozen=True)
class CurveParams:
    """Sigmoid / Tanh: the int8 ``table`` (output for inputs -128..127), the int16 curve, or
    neither (float32)."""

    table: npt.NDArray[np.int8] | None
    int16: Int16Curve | None


# per operator: the int8 output's fixed (scale, zero point, bits) and gemmlowp's Q4.27 ->
# Q0.31 curve
_INT8: dict[str, tuple[tuple[float, int, int], Callable[[Any, int], Any]]] = {
    "Sigmoid": ((1.0 / 256, -128, 8), gemmlowp_logistic),  # Q0.8, zero point -128
    "Tanh": ((1.0 / 128, 0, 7), gemmlowp_tanh),  # Q0.7 (signed), zero point 0
}


def prepare_curve(node: Node, graph: Graph) -> CurveParams:
    """The record of a Sigmoid or Tanh node."""
    dtype = graph.tensor(node.inputs[0]).dtype
    if dtype is DType.INT8:
        out, curve = _INT8[node.op]
        return CurveParams(Int8Curve(node, graph, *out).table(curve), None)
    if dtype is DType.INT16:
        return CurveParams(None, Int16Curve(node, graph, tanh=node.op == "Tanh"))
    return CurveParams(None, None)
