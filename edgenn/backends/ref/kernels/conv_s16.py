"""Conv2D and FullyConnected on TFLite's 16x8 scheme: int16 activations, int8 weights.

As TFLite Micro's int16 ``ConvPerChannel`` / ``DepthwiseConvPerChannel`` /
``FullyConnected``: ``acc = sum(x * w)`` (no zero points: the scheme is symmetric), plus the
bias, rescaled per output channel with the multiplier of ``in_scale * w_scale[c] /
out_scale`` (in double, per-tensor FullyConnected weights included, as for int8), clamped
to the fused activation's int16 range. The accumulator width follows the bias
(``edgenn.prepared.s16.S16Requant``). The sums are exact in float64 (|x * w| <= 2^22), so BLAS
does the matmul; the geometry is the int8 / float layer's (``conv.Conv2D``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point_s16 import INT16_MIN
from edgenn.backends.ref.arrays import batch_chunks, pad_hw
from edgenn.backends.ref.kernels.common import Operands, exact_matmul_dtype
from edgenn.backends.ref.kernels.conv import Conv2D
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.conv import prepare_conv_s16
from edgenn.prepared.fully_connected import prepare_fully_connected_s16

MAX_X = -INT16_MIN  # the largest |int16|


@register("Conv2D", DType.INT16)
class Conv2DS16(Conv2D):
    """16x8 convolution: grouped, depthwise, dilated and padded as the int8 layer.

    The constants are the record of ``edgenn.prepared.conv.prepare_conv_s16``.
    """

    def build(self) -> None:
        p = prepare_conv_s16(self.node, self.graph)
        self._geometry(p)
        self.int8 = False
        self.w_int, self.requant = p.w, p.requant
        depth = self.kh * self.kw * self.cig
        self.dtype: Any = exact_matmul_dtype(depth, MAX_X, 128)
        self._layout(self.w_int.astype(self.dtype))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        n = x.shape[0]
        out = np.empty((n, self.oh, self.ow, self.co), np.int16)
        per_item = self.oh * self.ow * max(self.kh * self.kw * self.ci, self.co)
        for part in batch_chunks(n, per_item):
            # why zero padding: the int16 tensors have zero point 0, so padding is real 0
            acc = self._accumulate(pad_hw(x[part].astype(self.dtype), self.pads, 0))
            out[part] = self.requant(acc.astype(np.int64))
        return [out]


@register("FullyConnected", DType.INT16)
class FullyConnectedS16(Layer):
    """16x8 x[N, K] @ w[Cout, K].T + b; per-channel or per-tensor int8 weights."""

    def build(self) -> None:
        p = prepare_fully_connected_s16(self.node, self.graph)
        self.w_int, self.requant, self.co = p.w, p.requant, p.w.shape[0]
        self.operands = Operands(self.inputs)
        self.dtype: Any = exact_matmul_dtype(p.w.shape[1], MAX_X, 128)
        self.w_t = np.ascontiguousarray(self.w_int.T.astype(self.dtype))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operands.gather(xs)[0]
        n = x.shape[0]
        out = np.empty((n, self.co), np.int16)
        for part in batch_chunks(n, max(x.shape[1], self.co)):
            acc = (x[part].astype(self.dtype) @ self.w_t).astype(np.int64)
            out[part] = self.requant(acc)
        return [out]
