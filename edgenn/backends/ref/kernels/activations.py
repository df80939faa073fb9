"""Sigmoid and Tanh, float32 and int8 -> int8 exactly as TFLite Micro.

int8 (``reference_integer_ops::Logistic`` / ``Tanh``): the input minus its zero point is
scaled to a Q4.27 value by a multiplier and left shift taken from ``in_scale * 2**27``
(``frexp`` and round half away, as TFLM's prepare); inputs at or beyond the radius where
that scaling would overflow saturate to -128 / 127; the rest go through gemmlowp's
fixed-point logistic / tanh and are rounded down to the fixed output quantization:
Sigmoid scale 1/256 zero point -128, Tanh scale 1/128 zero point 0. An int8 input takes only
256 values, so the record (``edgenn.prepared.curves``) holds that arithmetic over all of them
and ``run`` is a lookup.

int16 (``reference_integer_ops::Logistic`` / ``Tanh`` int16 overloads): zero points 0 and an
output scale of 2**-15; the input is rescaled to 1/(3*4096) per step (a multiplier of 3
shifted, for the power-of-two input scales TFLM recognises, else ``s_in * 3 * 4096`` doubled
up to [16384, 32767] and truncated), then ``sigmoid(i / 24)`` is interpolated linearly in a
256-entry Q0.16 table (tanh as ``2 * sigmoid(2x) - 1``) and rounded back to 16 bits.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.curves import prepare_curve


def _lookup(table: npt.NDArray[np.int8], x: np.ndarray) -> np.ndarray:
    # why +128 as uint8 view: index = x + 128 without widening the whole batch.
    return table[x.view(np.uint8) ^ 0x80]


class _Curve(Layer):
    """Sigmoid or Tanh: an int8 table, TFLM's int16 curve, or the float32 function."""

    def build(self) -> None:
        p = prepare_curve(self.node, self.graph)
        self.table, self.int16 = p.table, p.int16

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        if self.table is not None:
            return [_lookup(self.table, xs[0])]
        if self.int16 is not None:
            return [self.int16(xs[0])]
        return [self.float32(xs[0].astype(np.float32, copy=False))]

    def float32(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@register("Sigmoid", DType.FLOAT32, DType.INT8, DType.INT16)
class Sigmoid(_Curve):
    def float32(self, x: np.ndarray) -> np.ndarray:
        # exp of -|x| never overflows; mirror for the negative half.
        e = np.exp(-np.abs(x))
        pos = 1.0 / (1.0 + e)
        return np.where(x >= 0, pos, e * pos).astype(np.float32)


@register("Tanh", DType.FLOAT32, DType.INT8, DType.INT16)
class Tanh(_Curve):
    def float32(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x)
