"""Conv2D and FullyConnected on TFLite's 16x8 scheme: int16 activations, int8 weights.

As TFLite Micro's int16 ``ConvPerChannel`` / ``DepthwiseConvPerChannel`` /
``FullyConnected``: ``acc = sum(x * w)`` (no zero points: the scheme is symmetric), plus the
bias, rescaled per output channel with the multiplier of ``in_scale * w_scale[c] /
out_scale`` (in double, per-tensor FullyConnected weights included, as for int8), clamped
to the fused activation's int16 range. The accumulator width follows the bias
(``fixed_point_s16.S16Requant``). The sums are exact in float64 (|x * w| <= 2^22), so BLAS
does the matmul; the geometry is the int8 / float layer's (``conv.Conv2D``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import quantize_multiplier, scale_ratio
from edgenn.backends.ref.kernels.common import (
    Operands,
    batch_chunks,
    exact_matmul_dtype,
    pad_hw,
    per_tensor,
)
from edgenn.backends.ref.kernels.conv import Conv2D, channel_multipliers
from edgenn.backends.ref.kernels.fixed_point_s16 import INT16_MIN, S16Requant, symmetric
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType

MAX_X = -INT16_MIN  # the largest |int16|


def int8_weights_s16(layer: Layer, index: int = 1) -> np.ndarray:
    """The constant int8 weights of a 16x8 layer (symmetric), as int64."""
    weights = layer.const(index)
    assert weights is not None
    if weights.dtype != np.int8:
        raise UnsupportedOperatorError(
            f"{layer.node}: a 16x8 {layer.node.op} needs int8 weights, got {weights.dtype}")
    symmetric(layer, layer.inputs[index], "weight")
    return weights.astype(np.int64)


@register("Conv2D", DType.INT16)
class Conv2DS16(Conv2D):
    """16x8 convolution: grouped, depthwise, dilated and padded as the int8 layer.

    Attributes the Cortex-M kernels read: ``w_int`` (int64 [Cout, KH, KW, Cin/g]),
    ``requant`` (``S16Requant``), and the geometry of ``Conv2D``.
    """

    def build(self) -> None:
        x = self.inputs[0]
        self._geometry()
        self.int8 = False
        symmetric(self, x, "input")
        self.w_int = int8_weights_s16(self)
        self.mult, self.shift = channel_multipliers(self)
        self.requant = S16Requant.build(self, self.const(2), self.co, self.mult, self.shift,
                                        self.outputs[0])
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
        x, w = self.inputs[0], self.inputs[1]
        assert x is not None and w is not None
        xq = per_tensor(self, x, "input")
        oq = per_tensor(self, self.outputs[0], "output")
        symmetric(self, x, "input")
        self.w_int = int8_weights_s16(self)
        wq = symmetric(self, w, "weight")
        self.co = w.shape[0]
        if wq.per_channel and wq.scale.size > 1:
            self.mult, self.shift = channel_multipliers(self)
        else:
            m, s = quantize_multiplier(scale_ratio((xq.s, wq.scale[0]), oq.s))
            self.mult, self.shift = np.int64(m), np.int64(s)
        self.requant = S16Requant.build(self, self.const(2), self.co, self.mult, self.shift,
                                        self.outputs[0])
        self.operands = Operands(self.inputs)
        self.dtype: Any = exact_matmul_dtype(w.shape[1], MAX_X, 128)
        self.w_t = np.ascontiguousarray(self.w_int.T.astype(self.dtype))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operands.gather(xs)[0]
        n = x.shape[0]
        out = np.empty((n, self.co), np.int16)
        for part in batch_chunks(n, max(x.shape[1], self.co)):
            acc = (x[part].astype(self.dtype) @ self.w_t).astype(np.int64)
            out[part] = self.requant(acc)
        return [out]
