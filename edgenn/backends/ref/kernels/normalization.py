"""BatchNorm (inference, over the last axis) and LRN in TFLite's form, float32."""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType


@register("BatchNorm", DType.FLOAT32)
class BatchNorm(Layer):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias``, folded into one affine map."""

    def build(self) -> None:
        consts = [self.const(i) for i in range(1, 5)]
        if any(c is None for c in consts):
            raise UnsupportedOperatorError(
                f"{self.node}: scale, bias, mean and var must be constants"
            )
        scale, bias, mean, var = (np.asarray(c, np.float64) for c in consts)
        eps = float(self.node.attr("epsilon", 1e-5))
        # why quiet: +-inf / NaN parameters (or products beyond float32) are IEEE data here,
        # as in onnxruntime, which folds them the same way (new scale, new bias)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            a = scale / np.sqrt(var + eps)
            self.a = a.astype(np.float32)
            self.b = (bias - mean * a).astype(np.float32)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        return [(xs[0] * self.a + self.b).astype(np.float32, copy=False)]


@register("LRN", DType.FLOAT32)
class LRN(Layer):
    """TFLite's LOCAL_RESPONSE_NORMALIZATION over channels (last axis).

    ``sqr_sum[c] = sum(x[k]**2 for k in [c - radius, c + radius])`` and
    ``out = x / (bias + alpha * sqr_sum) ** beta`` (ONNX's alpha is divided by its size).
    """

    def build(self) -> None:
        self.radius = int(self.node.attr("radius"))
        self.bias = float(self.node.attr("bias", 1.0))
        self.alpha = float(self.node.attr("alpha", 1.0))
        self.beta = float(self.node.attr("beta", 0.5))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0].astype(np.float32, copy=False)
        c = x.shape[-1]
        r = self.radius
        sq = np.square(x, dtype=np.float32)
        # Window sums via a cumulative sum over a zero-padded channel axis.
        padded = np.pad(sq, [(0, 0)] * (x.ndim - 1) + [(r + 1, r)])
        cum = np.cumsum(padded, axis=-1, dtype=np.float64)
        sqr_sum = (cum[..., 2 * r + 1 : 2 * r + 1 + c] - cum[..., :c]).astype(np.float32)
        denom = np.power(
            np.float32(self.bias) + np.float32(self.alpha) * sqr_sum, np.float32(self.beta)
        )
        return [(x / denom).astype(np.float32)]
