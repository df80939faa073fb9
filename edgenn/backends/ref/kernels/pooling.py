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

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import activation_range, activation_range_float
from edgenn.backends.ref.kernels.common import (
    activation_of,
    batch_chunks,
    pad_hw,
    per_tensor,
    windows,
)
from edgenn.backends.ref.kernels.quantized_types import (
    QUANTIZED,
    moved_output_requant,
    type_range,
)
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import GraphValidationError
from edgenn.ir import DType


def in_bounds_counts(size: int, k: int, stride: int, pad0: int, out: int) -> np.ndarray:
    """For each output position along one axis, how many window taps fall inside the input."""
    starts = np.arange(out) * stride - pad0
    return np.minimum(starts + k, size) - np.maximum(starts, 0)


def div_round_half_away(acc: np.ndarray, count: np.ndarray) -> Any:
    """``acc > 0 ? (acc + c/2) / c : (acc - c/2) / c`` with C's truncating division."""
    q = (np.abs(acc) + count // 2) // count
    return np.where(acc > 0, q, -q)


class _Pool(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        node = self.node
        self.kernel = tuple(int(k) for k in node.attr("kernel"))
        self.strides = tuple(int(s) for s in node.attr("strides", (1, 1)))
        self.pads = tuple(int(p) for p in node.attr("pads", (0, 0, 0, 0)))
        _, self.oh, self.ow, _ = self.outputs[0].shape
        self.dtype = x.dtype
        self.quantized = x.dtype in QUANTIZED
        act = activation_of(self)
        self.requant = moved_output_requant(self)
        self.lo: Any
        self.hi: Any
        if self.quantized:
            q = per_tensor(self, x, "input")
            self.zp = q.zp
            self.lo, self.hi = activation_range(act, q, x.dtype)
        else:
            self.lo, self.hi = activation_range_float(act, self.finite_float_clamp)
        _, h, w, _ = x.shape
        kh, kw = self.kernel
        ch = in_bounds_counts(h, kh, self.strides[0], self.pads[0], self.oh)
        cw = in_bounds_counts(w, kw, self.strides[1], self.pads[1], self.ow)
        self.count = (ch[:, None] * cw[None, :])[None, :, :, None]  # [1, OH, OW, 1]
        if self.count.min() <= 0:  # TFLM fails such a pool too
            raise GraphValidationError(
                f"{node}: a {kh}x{kw} window lies entirely in the padding {list(self.pads)}"
            )

    def _windows(self, xp: np.ndarray) -> np.ndarray:
        return windows(xp, self.kernel, self.strides, (1, 1), (self.oh, self.ow))  # type: ignore[arg-type]


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
        if self.node.attr("count_include_pad", False):
            self.count = np.full_like(self.count, self.kernel[0] * self.kernel[1])
            self.fill = self.zp if self.quantized else 0.0
        else:
            self.fill = 0 if self.quantized else 0.0

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
