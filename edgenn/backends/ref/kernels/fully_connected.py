"""FullyConnected: x[N, K] @ w[Cout, K].T + b, float32 and int8.

int8 follows TFLite Micro: per-channel weights use ``FullyConnectedPerChannel`` with the
multiplier ``in_scale * w_scale[c] / out_scale`` in double; per-tensor weights use
``GetQuantizedConvolutionMultipler``: ``in_scale * w_scale / out_scale`` with the float32
scales widened to double before the product (the installed TFLM's build; a float32 product
can give the neighbouring multiplier). The bias is optional.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range_float,
    activation_range_quantized,
    quantize_multiplier,
    scale_ratio,
)
from edgenn.backends.ref.kernels.common import (
    Operands,
    activation_of,
    batch_chunks,
    exact_matmul_dtype,
    int_bias,
    per_tensor,
    quant_of,
    requantize,
)
from edgenn.backends.ref.kernels.conv import channel_multipliers
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType


@register("FullyConnected", DType.FLOAT32, DType.INT8)
class FullyConnected(Layer):
    def build(self) -> None:
        x, w = self.inputs[0], self.inputs[1]
        assert x is not None and w is not None
        weights = self.const(1)
        assert weights is not None
        bias = self.const(2)
        self.int8 = x.dtype is DType.INT8
        self.co = w.shape[0]
        act = activation_of(self)
        self.operands = Operands(self.inputs)
        if self.int8:
            if weights.dtype != np.int8:
                raise UnsupportedOperatorError(
                    f"{self.node}: int8 FullyConnected needs int8 weights"
                )
            wq = quant_of(self, w, "weight")
            xq = per_tensor(self, x, "input")
            oq = per_tensor(self, self.outputs[0], "output")
            if wq.per_channel and wq.scale.size > 1:
                self.mult, self.shift = channel_multipliers(self)
            else:
                m, s = quantize_multiplier(scale_ratio((xq.s, wq.scale[0]), oq.s))
                self.mult, self.shift = np.int64(m), np.int64(s)
            self.in_zp, self.out_zp = xq.zp, oq.zp
            self.lo, self.hi = activation_range_quantized(act, oq)
            w_int = weights.astype(np.int64) - wq.zero_point.reshape(-1, 1)
            self.bias_int = int_bias(self, bias, self.co)
            max_x = max(127 - self.in_zp, self.in_zp + 128)
            self.dtype: Any = exact_matmul_dtype(
                w.shape[1], max_x, int(np.abs(w_int).max(initial=0))
            )
            self.w_t = np.ascontiguousarray(w_int.T.astype(self.dtype))
        else:
            self.flo, self.fhi = activation_range_float(act, self.finite_float_clamp)
            self.w_t = np.ascontiguousarray(weights.T.astype(np.float32))
            self.bias_f = None if bias is None else bias.astype(np.float32)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operands.gather(xs)[0]
        n = x.shape[0]
        if not self.int8:
            y = x.astype(np.float32, copy=False) @ self.w_t
            if self.bias_f is not None:
                y += self.bias_f
            return [np.clip(y, self.flo, self.fhi)]
        out = np.empty((n, self.co), np.int8)
        for part in batch_chunks(n, max(x.shape[1], self.co)):
            xf = x[part].astype(self.dtype) - self.dtype(self.in_zp)
            acc = (xf @ self.w_t).astype(np.int64) + self.bias_int
            out[part] = requantize(acc, self.mult, self.shift, self.out_zp, self.lo, self.hi)
        return [out]
