"""BatchMatMul (TFLite BATCH_MATMUL, ONNX MatMul), bit-exact with TFLite Micro.

``adj_x`` / ``adj_y`` transpose the last two axes of an operand first; the batch axes
broadcast. Quantized (TFLM ``reference_ops::BatchMatMul``): the sum of ``(a - a_zp) * (b -
b_zp)`` (int32 for int8, int64 for int16), ``MultiplyByQuantizedMultiplier`` with the
multiplier of ``a_scale * b_scale / out_scale`` (in double), plus the output zero point,
clamped. The int16 kernel scales its int64 sums with TFLite's 64-bit
``MultiplyByQuantizedMultiplier``, which rounds once with a 16-bit multiplier.

Operands of a lower rank align to the right (as in numpy); each sample keeps its own batch
axis (``per_sample.py``), so any batch size runs when the tensors lead with a batch axis of 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier, wrap_int32
from edgenn.arith.fixed_point_s16 import multiply_by_quantized_multiplier_64
from edgenn.backends.ref.kernels.common import Operands, exact_matmul_dtype
from edgenn.backends.ref.kernels.per_sample import BatchView
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType, Tensor
from edgenn.prepared.batch_matmul import prepare_batch_matmul


def requant_int(acc: np.ndarray, dtype: DType, mult: int, shift: int) -> np.ndarray:
    """The quantized kernel's scaling of its sums (32-bit for int8, 64-bit for int16)."""
    if dtype is DType.INT16:
        return np.asarray(multiply_by_quantized_multiplier_64(acc, mult, shift))
    return np.asarray(multiply_by_quantized_multiplier(wrap_int32(acc), mult, shift))


@register("BatchMatMul", DType.FLOAT32, DType.INT8, DType.INT16)
class BatchMatMul(Layer):
    def build(self) -> None:
        a, b = self.inputs[0], self.inputs[1]
        assert a is not None and b is not None
        self.out_shape = self.outputs[0].shape
        p = prepare_batch_matmul(self.node, self.graph)
        self.rank = len(self.out_shape)
        self.shapes = (a.shape, b.shape)
        self.view = BatchView(self, self.out_shape,
                              *(t.shape for t in (a, b) if not t.is_const))
        self.adj = (p.adj_x, p.adj_y)
        self.operands = Operands(self.inputs)
        self.dtype = a.dtype
        if a.dtype is DType.FLOAT32:
            return
        self.zps = (p.a_zp, p.b_zp)
        self.out_zp, self.mult, self.shift = p.out_zp, p.mult, p.shift
        self.lo, self.hi = p.act_min, p.act_max
        k = a.shape[-2] if self.adj[0] else a.shape[-1]
        span = max(abs(v - z) for v in (self.lo, self.hi) for z in self.zps)
        self.acc_dtype: Any = exact_matmul_dtype(k, span, span)

    def _batched(self, arr: np.ndarray, t: Tensor, shape: tuple[int, ...]) -> np.ndarray:
        """An operand as the product sees it: per sample ``[N or 1, *batch axes padded to
        the output rank, rows, cols]``, else the declared array."""
        if not self.view.per_sample:
            return arr if t.is_const else self.view.unfold(arr, shape)
        pad = (1,) * (self.rank - len(shape))
        if t.is_const:
            return arr.reshape((1, *pad, *shape))  # the same for every sample
        return arr.reshape((arr.shape[0], *pad, *shape))  # shape[0] is the sample's 1

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        a, b = self.operands.gather(xs)
        ta, tb = self.inputs[0], self.inputs[1]
        assert ta is not None and tb is not None
        a = self._batched(a, ta, self.shapes[0])
        b = self._batched(b, tb, self.shapes[1])
        if self.adj[0]:
            a = np.swapaxes(a, -1, -2)
        if self.adj[1]:
            b = np.swapaxes(b, -1, -2)
        if self.dtype is DType.FLOAT32:
            y = np.matmul(a.astype(np.float32), b.astype(np.float32))
        else:
            av = (a.astype(np.int64) - self.zps[0]).astype(self.acc_dtype)
            bv = (b.astype(np.int64) - self.zps[1]).astype(self.acc_dtype)
            acc = np.matmul(av, bv).astype(np.int64)  # exact: see exact_matmul_dtype
            v = requant_int(acc, self.dtype, self.mult, self.shift) + self.out_zp
            y = np.clip(v, self.lo, self.hi).astype(self.dtype.numpy)
        return [np.ascontiguousarray(self.view.fold(y, self.out_shape))]
