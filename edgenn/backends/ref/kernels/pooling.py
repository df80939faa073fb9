"""MaxPool2D and AvgPool2D over NHWC, float32, int8 and int16.

As TFLite: windows cover only in-bounds elements (padding is never a candidate for the max
and is not counted in the average). Quantized AvgPool divides the integer sum by the count
rounding half away from zero (``(acc +- count/2) / count`` with C truncation); int8 and
int16 run the same code with their own limits (TFLM's ``reference_integer_ops`` pooling).
Quantized pools compute in the input's quantization (fused activation clamp included); an
output declared with other parameters is then requantized as TFLM's QUANTIZE between two
tensors of that type, which is how the exporter writes such a node. ``count_include_pad``
(an ONNX attribute) divides by the full window instead; for quantized types the padding then
holds the zero point, i.e. real zero.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import type_range
from edgenn.backends.ref.arrays import batch_chunks, pad_hw, windows
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.pooling import div_round_half_away, prepare_pool


class _Pool(Layer):
    def build(self) -> None:
        p = prepare_pool(self.node, self.graph)
        self.p = p
        self.kernel, self.strides, self.pads = p.kernel, p.strides, p.pads
        self.oh, self.ow = p.out_h, p.out_w
        self.dtype, self.quantized = p.dtype, p.quantized
        self.lo, self.hi, self.count, self.requant = p.act_min, p.act_max, p.count, p.requant

    def _windows(self, xp: np.ndarray) -> np.ndarray:
        return windows(xp, self.kernel, self.strides, (1, 1), (self.oh, self.ow))


@register("MaxPool2D", DType.FLOAT32, DType.INT8, DType.INT16)
class MaxPool2D(_Pool):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        # why: the type's lowest value never wins a max, so padding with it is skipping
        fill = type_range(self.dtype)[0] if self.quantized else -np.inf
        y = self._windows(pad_hw(x, self.pads, fill)).max(axis=(3, 4))
        y = np.clip(y, self.lo, self.hi).astype(x.dtype, copy=False)
        return [y if self.requant is None else self.requant(y)]


@register("AvgPool2D", DType.FLOAT32, DType.INT8, DType.INT16)
class AvgPool2D(_Pool):
    def build(self) -> None:
        super().build()
        # the padding holds real zero when it counts (the zero point), else nothing
        if self.quantized:
            self.fill: int | float = self.p.in_zp if self.p.count_include_pad else 0
        else:
            self.fill = 0.0

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        n, _, _, c = x.shape
        kh, kw = self.kernel
        if not self.quantized:
            s = self._windows(pad_hw(x, self.pads, self.fill)).sum(axis=(3, 4), dtype=np.float32)
            y = (s / self.count.astype(np.float32)).astype(np.float32)
            return [np.clip(y, self.lo, self.hi).astype(np.float32, copy=False)]
        out = np.empty((n, self.oh, self.ow, c), self.dtype.numpy)
        for part in batch_chunks(n, self.oh * self.ow * c * kh * kw):
            xp = pad_hw(x[part].astype(np.int32), self.pads, self.fill)
            acc = self._windows(xp).sum(axis=(3, 4), dtype=np.int64)
            y = div_round_half_away(acc, self.count)
            out[part] = np.clip(y, self.lo, self.hi)
        return [out if self.requant is None else self.requant(out)]
