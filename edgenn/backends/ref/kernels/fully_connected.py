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

from edgenn.arith.fixed_point import requantize
from edgenn.backends.ref.arrays import batch_chunks
from edgenn.backends.ref.kernels.common import Operands, int8_matmul_dtype
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.fully_connected import (
    prepare_float_fully_connected,
    prepare_fully_connected,
)


@register("FullyConnected", DType.FLOAT32, DType.INT8)
class FullyConnected(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.int8 = x.dtype is DType.INT8
        self.operands = Operands(self.inputs)
        if self.int8:
            p = prepare_fully_connected(self.node, self.graph)
            self.p, self.co = p, p.out_c
            self.dtype: Any = int8_matmul_dtype(p, p.depth)
            self.w_t = np.ascontiguousarray(p.w.T.astype(self.dtype))
        else:
            f = prepare_float_fully_connected(self.node, self.graph)
            self.fp, self.co = f, f.w.shape[0]
            self.w_t = np.ascontiguousarray(f.w.T)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.operands.gather(xs)[0]
        n = x.shape[0]
        if not self.int8:
            y = x.astype(np.float32, copy=False) @ self.w_t
            if self.fp.bias is not None:
                y += self.fp.bias
            return [np.clip(y, self.fp.act_min, self.fp.act_max)]
        out = np.empty((n, self.co), np.int8)
        for part in batch_chunks(n, max(x.shape[1], self.co)):
            xf = x[part].astype(self.dtype) - self.dtype(self.p.in_zp)
            acc = (xf @ self.w_t).astype(np.int64) + self.p.bias
            out[part] = requantize(acc, self.p.mult, self.p.shift, self.p.out_zp, self.p.act_min,
                                   self.p.act_max)
        return [out]
