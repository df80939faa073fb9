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
        self.p = prepare_pool(self.node, self.graph)

    def _windows(self, xp: np.ndarray) -> np.ndarray:
        p = self.p
        return windows(xp, p.kernel, p.strides, (1, 1), (p.out_h, p.out_w))


@register("MaxPool2D", DType.FLOAT32, DType.INT8, DType.INT16)
class MaxPool2D(_Pool):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        # why: the type's lowest value never wins a max, so padding with it is skipping
        fill = type_range(p.dtype)[0] if p.quantized else -np.inf
        y = self._windows(pad_hw(x, p.pads, fill)).max(axis=(3, 4))
        y = np.clip(y, p.act_min, p.act_max).astype(x.dtype, copy=False)
        return [y if p.requant is None else p.requant(y)]


@register("AvgPool2D", DType.FLOAT32, DType.INT8, DType.INT16)
class AvgPool2D(_Pool):
    def build(self) -> None:
        super().build()
        p = self.p
        # the padding holds real zero when it counts (the zero point), else nothing
        if p.quantized:
            self.fill: int | float = p.in_zp if p.count_include_pad else 0
        else:
            self.fill = 0.0

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        n, _, _, c = x.shape
        kh, kw = p.kernel
        if not p.quantized:
            s = self._windows(pad_hw(x, p.pads, self.fill)).sum(axis=(3, 4), dtype=np.float32)
            y = (s / p.count.astype(np.float32)).astype(np.float32)
            return [np.clip(y, p.act_min, p.act_max).astype(np.float32, copy=False)]
        out = np.empty((n, p.out_h, p.out_w, c), p.dtype.numpy)
        for part in batch_chunks(n, p.out_h * p.out_w * c * kh * kw):
            xp = pad_hw(x[part].astype(np.int32), p.pads, self.fill)
            acc = self._windows(xp).sum(axis=(3, 4), dtype=np.int64)
            y = div_round_half_away(acc, p.count)
            out[part] = np.clip(y, p.act_min, p.act_max)
        return [out if p.requant is None else p.requant(out)]
