"""Add and Mul with numpy broadcasting and a fused activation; standalone Relu, Relu6, Clip.

int8 Add is TFLite Micro's: both inputs shifted left by 20 bits, scaled by
``s_i / (2 * max(s1, s2))``, summed, then scaled by ``2 * max(s1, s2) / (2**20 * s_out)``.
int8 Mul multiplies the zero-point-corrected inputs and scales by ``s1 * s2 / s_out``.
int8 Relu requantizes as TFLM's ``ReluQuantized``; Relu6 clamps to [zp, q(6)] as TFLM's
``Relu6Quantized`` when input and output share their quantization.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range_float,
    activation_range_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantize_scalar,
)
from edgenn.backends.ref.kernels.binary import to_output_rank
from edgenn.backends.ref.kernels.common import Operands, activation_of, per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import Activation, DType

ADD_LEFT_SHIFT = 20  # TFLite's left shift for int8 ADD (15 for int16)


class _Binary(Layer):
    def build(self) -> None:
        self.operands = Operands(self.inputs)
        self.rank = len(self.outputs[0].shape)
        self.shapes = [t.shape if t is not None and not t.is_const else None
                       for t in self.inputs]
        self.int8 = self.outputs[0].dtype is DType.INT8
        act = activation_of(self)
        if self.int8:
            a = per_tensor(self, self.inputs[0], "first input")
            b = per_tensor(self, self.inputs[1], "second input")
            out = per_tensor(self, self.outputs[0], "output")
            self.zp_a, self.zp_b, self.zp_out = a.zp, b.zp, out.zp
            self.lo, self.hi = activation_range_quantized(act, out)
            self.build_int8(a.s, b.s, out.s)
        else:
            self.flo, self.fhi = activation_range_float(act, self.finite_float_clamp)

    def build_int8(self, s_a: float, s_b: float, s_out: float) -> None:
        raise NotImplementedError

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        # why: a computed lower-rank operand (a reduction's [1] result against [1, C, 1, 1])
        # carries the batch in its axis 0, so its broadcast axes go after that axis
        a, b = (x if shape is None else to_output_rank(x, shape, self.rank)
                for x, shape in zip(self.operands.gather(xs), self.shapes, strict=True))
        if not self.int8:
            y = self.float_op(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False))
            return [np.clip(y, self.flo, self.fhi).astype(np.float32, copy=False)]
        raw = self.int8_op(a.astype(np.int64) - self.zp_a, b.astype(np.int64) - self.zp_b)
        return [np.clip(raw + self.zp_out, self.lo, self.hi).astype(np.int8)]

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def int8_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        raise NotImplementedError


@register("Add", DType.FLOAT32, DType.INT8)
class Add(_Binary):
    def build_int8(self, s_a: float, s_b: float, s_out: float) -> None:
        twice_max = 2.0 * max(s_a, s_b)
        self.m_a, self.sh_a = quantize_multiplier(s_a / twice_max)
        self.m_b, self.sh_b = quantize_multiplier(s_b / twice_max)
        self.m_out, self.sh_out = quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * s_out))

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def int8_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        sa = multiply_by_quantized_multiplier(a << ADD_LEFT_SHIFT, self.m_a, self.sh_a)
        sb = multiply_by_quantized_multiplier(b << ADD_LEFT_SHIFT, self.m_b, self.sh_b)
        return multiply_by_quantized_multiplier(sa + sb, self.m_out, self.sh_out)


@register("Mul", DType.FLOAT32, DType.INT8)
class Mul(_Binary):
    def build_int8(self, s_a: float, s_b: float, s_out: float) -> None:
        self.m, self.sh = quantize_multiplier(s_a * s_b / s_out)

    def float_op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a * b

    def int8_op(self, a: np.ndarray, b: np.ndarray) -> Any:
        return multiply_by_quantized_multiplier(a * b, self.m, self.sh)


class _Clamp(Layer):
    """A clamp to a real interval; int8 requantizes to the output first (TFLM ReluQuantized)."""

    def bounds(self) -> tuple[float, float]:
        raise NotImplementedError

    def build(self) -> None:
        lo, hi = self.bounds()
        self.flo, self.fhi = lo, hi
        self.int8 = self.outputs[0].dtype is DType.INT8
        if not self.int8:
            return
        qi = per_tensor(self, self.inputs[0], "input")
        qo = per_tensor(self, self.outputs[0], "output")
        self.zp_in, self.zp_out = qi.zp, qo.zp
        self.same = qi == qo
        self.m, self.sh = quantize_multiplier(qi.s / qo.s)
        self.lo = -128 if lo == -math.inf else max(-128, quantize_scalar(lo, qo.s, qo.zp))
        self.hi = 127 if hi == math.inf else min(127, quantize_scalar(hi, qo.s, qo.zp))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if not self.int8:
            return [np.clip(x, self.flo, self.fhi).astype(np.float32, copy=False)]
        if self.same:
            return [np.clip(x, self.lo, self.hi).astype(np.int8)]
        y = multiply_by_quantized_multiplier(x.astype(np.int64) - self.zp_in, self.m, self.sh)
        return [np.clip(y + self.zp_out, self.lo, self.hi).astype(np.int8)]


@register("Relu", DType.FLOAT32, DType.INT8)
class Relu(_Clamp):
    def bounds(self) -> tuple[float, float]:
        return activation_range_float(Activation.RELU)


@register("Relu6", DType.FLOAT32, DType.INT8)
class Relu6(_Clamp):
    def bounds(self) -> tuple[float, float]:
        return activation_range_float(Activation.RELU6)


@register("Clip", DType.FLOAT32, DType.INT8)
class Clip(_Clamp):
    def bounds(self) -> tuple[float, float]:
        lo, hi = self.node.attr("min"), self.node.attr("max")
        return (-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))
