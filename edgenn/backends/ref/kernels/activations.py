"""Sigmoid and Tanh, float32, int8 and int16, exactly as TFLite Micro
(``reference_integer_ops::Logistic`` / ``Tanh``).

The quantized constants are the record of ``edgenn.prepared.curves`` (its module docstring
says how TFLM computes them): int8 takes only 256 values, so the record holds the output of
each and ``run`` is a lookup; int16 runs TFLM's interpolated curve with the record's input
scaling.
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
