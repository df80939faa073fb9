"""Mean over axes: float32, and int8 / int16 exactly as current TFLite Micro computes MEAN.

TFLM (``reduce_common.cc``, ``EvalIntegerMean``) computes every int8 mean with
``QuantizedMeanOrSum``, also when input and output share scale and zero point (other
builds, e.g. the Xtensa kernels, divide the raw sum by the count there, which truncates and
differs by one step on some outputs): the multiplier of ``in_scale / out_scale`` absorbs
``1 / count`` as ``(mult << s) / count`` with ``s = min(floor(log2 count), 32, 31 + shift)``
and shift ``shift - s``, then ``MultiplyByQuantizedMultiplier(sum - in_zp * count) +
out_zp``, clamped.

The 4-D axes-(1, 2) special case of TFLM applies only to float32, whose result is the same
sum divided by the count. Any axes run, axis 0 included (Keras LayerNormalization as the
converter writes it reduces ``[0, 1, 2]``): the reduction works per sample (``per_sample.py``),
axis 0 being each sample's own size-1 axis.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.kernels.per_sample import BatchView
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.reduce import prepare_reduce, requantize_sum


@register("Mean", DType.FLOAT32, DType.INT8, DType.INT16)
class Mean(Layer):
    def build(self) -> None:
        p = self.p = prepare_reduce(self.node, self.graph)
        self.axes, self.in_shape, self.out_shape = p.axes, p.in_shape, p.out_shape
        self.view = BatchView(self, self.in_shape, self.out_shape)
        self.int8 = p.quantized  # int16 too: TFLM's int16 MEAN

    def _sum(self, x: np.ndarray, dtype: type) -> np.ndarray:
        """The sum over the reduced axes of each sample (see ``BatchView``)."""
        v = self.view
        xv = v.unfold(x, self.in_shape)
        s = xv.sum(axis=tuple(a + v.offset for a in self.axes), keepdims=True, dtype=dtype)
        # why a reshape: the output shape is the kept shape with or without the 1s
        lead = (xv.shape[0],) if v.per_sample else ()
        return v.fold(s.reshape((*lead, *self.out_shape)), self.out_shape)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        if not self.int8:
            s = self._sum(x, np.float32)
            return [(s / np.float32(p.count)).astype(np.float32)]
        return [requantize_sum(p, self._sum(x, np.int64)).astype(x.dtype)]
