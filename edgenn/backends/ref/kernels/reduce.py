"""Mean over axes: float32, and int8 / int16 exactly as current TFLite Micro computes MEAN.

TFLM (``reduce_common.cc``, ``EvalIntegerMean``) computes every int8 mean with
``QuantizedMeanOrSum``, also when input and output share scale and zero point (other
builds, e.g. the Xtensa kernels, divide the raw sum by the count there, which truncates and
differs by one step on some outputs): the multiplier of ``in_scale / out_scale`` absorbs
``1 / count`` as ``(mult << s) / count`` with ``s = min(floor(log2 count), 32, 31 + shift)``
and shift ``shift - s``, then ``MultiplyByQuantizedMultiplier(sum - in_zp * count) +
out_zp``, clamped.

The 4-D axes-(1, 2) special case of TFLM applies only to float32, whose result is the same
sum divided by the count.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.kernels.quantized_types import type_range
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType


@register("Mean", DType.FLOAT32, DType.INT8, DType.INT16)
class Mean(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        rank = len(x.shape)
        self.axes = tuple(sorted({int(a) % rank for a in self.node.attr("axes")}))
        if 0 in self.axes:
            raise UnsupportedOperatorError(f"{self.node}: Mean over the batch axis 0")
        self.keep = bool(self.node.attr("keepdims", True))
        self.count = int(np.prod([x.shape[a] for a in self.axes]))
        self.int8 = x.dtype in (DType.INT8, DType.INT16)  # quantized (int16: TFLM int16 MEAN)
        self.lo, self.hi = type_range(x.dtype) if self.int8 else (0, 0)
        if not self.int8:
            return
        qi = per_tensor(self, x, "input")
        qo = per_tensor(self, self.outputs[0], "output")
        self.in_zp, self.out_zp = qi.zp, qo.zp
        mult, shift = quantize_multiplier(qi.s / qo.s)
        # Fold 1/count into the multiplier as TFLM's QuantizedMeanOrSum does.
        s = min(self.count.bit_length() - 1, 32, 31 + shift)
        self.mult = (mult << s) // self.count
        self.shift = shift - s

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if not self.int8:
            s = x.sum(axis=self.axes, keepdims=self.keep, dtype=np.float32)
            return [(s / np.float32(self.count)).astype(np.float32)]
        total = x.sum(axis=self.axes, keepdims=self.keep, dtype=np.int64)
        y = multiply_by_quantized_multiplier(total - self.in_zp * self.count, self.mult, self.shift)
        return [np.clip(y + self.out_zp, self.lo, self.hi).astype(x.dtype)]
