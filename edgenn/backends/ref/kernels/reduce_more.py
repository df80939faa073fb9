"""ReduceMax / ReduceMin / ReduceSum and ArgMax / ArgMin, bit-exact with TFLite Micro.

* REDUCE_MAX / REDUCE_MIN (TFLM ``ReduceGeneric``) compare raw values: int8 needs the input's
  quantization on the output (TFLM checks it); a differently quantized output is the op
  followed by a requantization, as the exporter writes it.
* SUM (TFLM ``QuantizedMeanOrSum`` with ``compute_sum``): the int32 sum of the raw values,
  minus ``count * input_zp``, through ``MultiplyByQuantizedMultiplier`` with the multiplier
  of ``in_scale / out_scale``, plus the output zero point, clamped to int8 / int16.
* ARG_MAX / ARG_MIN (TFLM ``ArgMinMax``): the first index of the extreme value (strict
  comparison), or the last with ``select_last_index`` (ONNX).

Every reduction runs per sample (``per_sample.py``): axis 0 is the sample's own size-1 axis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.backends.ref.kernels.per_sample import BatchView
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.reduce import prepare_arg, prepare_reduce, requantize_sum


class _Reduction(Layer):
    """Shared build: the input and output shapes and the reduced axes (per sample)."""

    def build(self) -> None:
        p = self.p = prepare_reduce(self.node, self.graph)
        self.in_shape, self.out_shape, self.axes = p.in_shape, p.out_shape, p.axes
        self.view = BatchView(self, self.in_shape, self.out_shape)
        self.dtype = p.dtype

    def reduce(self, x: np.ndarray, fn: Any, **kwargs: Any) -> np.ndarray:
        """``fn`` over the reduced axes (of each sample, see ``BatchView``)."""
        v = self.view
        xv = v.unfold(x, self.in_shape)
        y = fn(xv, axis=tuple(a + v.offset for a in self.axes), keepdims=True, **kwargs)
        # why a reshape: the output shape is the kept shape with or without the 1s
        lead = (xv.shape[0],) if v.per_sample else ()
        return v.fold(y.reshape((*lead, *self.out_shape)), self.out_shape)


@register("ReduceMax", DType.FLOAT32, DType.INT8)
class ReduceMax(_Reduction):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        y = self.reduce(xs[0], np.max if self.p.largest else np.min)
        return [y if self.p.requant is None else self.p.requant(y)]


@register("ReduceMin", DType.FLOAT32, DType.INT8)
class ReduceMin(ReduceMax):
    pass


@register("ReduceSum", DType.FLOAT32, DType.INT8, DType.INT16)
class ReduceSum(_Reduction):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        if self.dtype is DType.FLOAT32:
            return [self.reduce(x, np.sum, dtype=np.float32)]
        sums = self.reduce(x, np.sum, dtype=np.int64)
        return [requantize_sum(p, sums).astype(self.dtype.numpy)]


@register("ArgMax", DType.FLOAT32, DType.INT8)
class ArgMax(Layer):
    def build(self) -> None:
        p = self.p = prepare_arg(self.node, self.graph)
        self.in_shape, self.out_shape = p.in_shape, p.out_shape
        self.view = BatchView(self, self.in_shape, self.out_shape)
        self.axis, self.last, self.largest = p.axis, p.last, p.largest
        self.out_dtype = self.outputs[0].dtype.numpy

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        v = self.view
        x = v.unfold(xs[0], self.in_shape)
        axis = self.axis + v.offset
        if self.last:
            x = np.flip(x, axis)
        # why numpy: argmax / argmin return the first extreme index, as TFLM's strict compare
        idx = np.argmax(x, axis=axis) if self.largest else np.argmin(x, axis=axis)
        if self.last:
            idx = self.in_shape[self.axis] - 1 - idx
        lead = (x.shape[0],) if v.per_sample else ()
        y = idx.reshape((*lead, *self.out_shape))  # with or without the reduced 1
        return [v.fold(y, self.out_shape).astype(self.out_dtype)]


@register("ArgMin", DType.FLOAT32, DType.INT8)
class ArgMin(ArgMax):
    pass
