"""CumSum (running sum along an axis, exclusive / reverse), bit-exact with TFLite Micro.

TFLM's int8 CUMSUM (``reference_ops::CumSum``) works like its ADD: every input is offset by
``-input_zp``, shifted left by 20 and halved by the multiplier of 0.5
(``MultiplyByQuantizedMultiplierSmallerThanOneExp``), summed in int32, and each running sum is
scaled by ``2 * in_scale / (2**20 * out_scale)`` to the output. The accumulator does not start
at zero: TFLM starts it at the scaled input offset, ``(-input_zp << 20) * 0.5``, and so do we
(the constants: ``edgenn.prepared.cumsum``).
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier, wrap_int32
from edgenn.backends.ref.kernels.per_sample import BatchView
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.cumsum import prepare_cumsum


@register("CumSum", DType.FLOAT32, DType.INT8)
class CumSum(Layer):
    def build(self) -> None:
        p = self.p = prepare_cumsum(self.node, self.graph)
        self.shape = p.shape
        self.view = BatchView(self, self.shape)
        self.axis = p.axis + self.view.offset
        self.exclusive, self.reverse = p.exclusive, p.reverse
        self.float = p.dtype is DType.FLOAT32
        self.in_zp, self.out_zp, self.start = p.in_zp, p.out_zp, p.start
        self.out_mult, self.out_shift = p.out_mult, p.out_shift
        self.scale_in = p.scale_in

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = self.view.unfold(xs[0], self.shape)
        if self.reverse:
            x = np.flip(x, self.axis)
        if self.float:
            y = np.cumsum(x, axis=self.axis, dtype=np.float32)
            if self.exclusive:
                y = np.concatenate([np.zeros_like(y.take([0], self.axis)),
                                    y.take(np.arange(y.shape[self.axis] - 1), self.axis)],
                                   self.axis)
        else:
            scaled = self.scale_in(x.astype(np.int64) - self.in_zp)
            # why wrap: TFLM accumulates in int32 (wrap-around commutes with the sum)
            acc = wrap_int32(np.cumsum(scaled, axis=self.axis) + self.start)
            if self.exclusive:
                first = np.full_like(acc.take([0], self.axis), self.start)
                acc = np.concatenate([first, acc.take(np.arange(acc.shape[self.axis] - 1),
                                                      self.axis)], self.axis)
            y = multiply_by_quantized_multiplier(acc, self.out_mult, self.out_shift)
            y = np.clip(y + self.out_zp, -128, 127).astype(np.int8)
        if self.reverse:
            y = np.flip(y, self.axis)
        return [np.ascontiguousarray(self.view.fold(y, self.shape))]
