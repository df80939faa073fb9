"""Relu, Relu6 and Clip on float32, int8 and int16 (the constants: ``edgenn.prepared.clamp``).

int8 Relu requantizes as TFLM's ``ReluQuantized``; Relu6 clamps to [zp, q(6)] as TFLM's
``Relu6Quantized`` when input and output share their quantization; int16 Relu6 clamps in the
input's quantization, int16 Relu and Clip requantize first. Add and Mul are in ``binary.py``.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.clamp import prepare_clamp


class _Clamp(Layer):
    """A clamp to a real interval; quantized types requantize to the output first where
    their record says so (TFLM ReluQuantized)."""

    def build(self) -> None:
        self.p = prepare_clamp(self.node, self.graph)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        if p.dtype is DType.FLOAT32:
            return [np.clip(x, p.act_min, p.act_max).astype(np.float32, copy=False)]
        if not p.requant:
            return [np.clip(x, p.act_min, p.act_max).astype(p.dtype.numpy)]
        y = multiply_by_quantized_multiplier(x.astype(np.int64) - p.in_zp, p.mult, p.shift)
        return [np.clip(y + p.out_zp, p.act_min, p.act_max).astype(p.dtype.numpy)]


_TYPES = (DType.FLOAT32, DType.INT8, DType.INT16)


@register("Relu", *_TYPES)
class Relu(_Clamp):
    pass


@register("Relu6", *_TYPES)
class Relu6(_Clamp):
    pass


@register("Clip", *_TYPES)
class Clip(_Clamp):
    pass
