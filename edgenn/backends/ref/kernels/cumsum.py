"""CumSum (running sum along an axis, exclusive / reverse), bit-exact with TFLite Micro.

TFLM's int8 CUMSUM (``reference_ops::CumSum``) works like its ADD: every input is offset by
``-input_zp``, shifted left by 20 and halved by the multiplier of 0.5
(``MultiplyByQuantizedMultiplierSmallerThanOneExp``), summed in int32, and each running sum is
scaled by ``2 * in_scale / (2**20 * out_scale)`` to the output. The accumulator does not start
at zero: TFLM starts it at the scaled input offset, ``(-input_zp << 20) * 0.5``, and so do we.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    wrap_int32,
)
from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.kernels.per_sample import BatchView
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType

LEFT_SHIFT = 20  # TFLM's kCumSumIntegerShift


def smaller_than_one(node: object, real: float, what: str) -> tuple[int, int]:
    """TFLite's ``QuantizeMultiplierSmallerThanOneExp`` (the shift is never positive)."""
    mult, shift = quantize_multiplier(real)
    if shift > 0:
        raise UnsupportedOperatorError(f"{node}: the {what} rescale {real:.6g} is not below 1 "
                                       "(TFLite Micro rejects it)")
    return mult, shift


@register("CumSum", DType.FLOAT32, DType.INT8)
class CumSum(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.shape = x.shape
        self.view = BatchView(self, self.shape)
        self.axis = int(self.node.attr("axis")) % len(x.shape) + self.view.offset
        self.exclusive = bool(self.node.attr("exclusive", False))
        self.reverse = bool(self.node.attr("reverse", False))
        self.float = x.dtype is DType.FLOAT32
        if self.float:
            return
        qi = per_tensor(self, x, "input")
        qo = per_tensor(self, self.outputs[0], "output")
        self.in_zp, self.out_zp = qi.zp, qo.zp
        twice_max = 2 * qi.s
        self.in_mult, self.in_shift = smaller_than_one(self.node, qi.s / twice_max, "input")
        self.out_mult, self.out_shift = smaller_than_one(
            self.node, twice_max / ((1 << LEFT_SHIFT) * qo.s), "output")
        self.start = int(self.scale_in(np.int64(-self.in_zp)))

    def scale_in(self, v: Any) -> Any:
        """``(v << 20) * 0.5`` as TFLM computes it in int32."""
        return multiply_by_quantized_multiplier(wrap_int32(v << LEFT_SHIFT), self.in_mult,
                                                self.in_shift)

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
