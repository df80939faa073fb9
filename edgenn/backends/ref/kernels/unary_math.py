"""Element-wise unary math, float32 / int8 / int16, exactly as TFLite Micro.

* LeakyRelu (``leaky_relu.cc``): two requantizations of ``x - zp_in``, by ``s_in / s_out``
  for x >= 0 and by ``s_in * alpha / s_out`` below (the float32 scales widened to double, as
  the installed TFLite Micro prepares them); a negative alpha scales by ``|multiplier|`` and
  negates, as the current reference does.
* HardSwish int8 (``hard_swish.h``): 16-bit fixed point; the input on a "hires" scale
  ``s_in / 128``, a "reluish" factor in [0, 1] from ``x / 3`` and the two int16 multipliers
  the prepare downscales from ``QuantizeMultiplier``; see ``_HardSwishInt8``.
* Abs int8 / int16 (``elementwise.cc``): ``|x - zp_in|``, requantized only when the scales
  differ; an int16 tensor without quantization takes the plain integer ``abs``.
* Rsqrt int8 / int16 (``elementwise.cc``): gemmlowp's Newton-Raphson inverse square root
  (``GetInvSqrtQuantizedMultiplierExp``) of ``x - zp_in`` applied to 1 << 20, then rescaled by
  ``1 / (sqrt(s_in) * s_out)``; 0 gives the type's maximum. TFLite Micro stops with an error
  on inputs below the zero point; here they give the maximum as 0 does.
* Neg, Sqrt, Exp, Log, HardSigmoid: float32 only (TFLite Micro has no quantized kernels).
* int16 Relu / Relu6 / Clip are in ``elementwise.py``.

The constants and the integer arithmetic are ``edgenn.prepared.unary_math`` (the Cortex-M
kernels take the same record); int8 layers look their output up in the record's table.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.unary_math import prepare_unary_math, unary_int

F32, I8, I16 = DType.FLOAT32, DType.INT8, DType.INT16


class UnaryLayer(Layer):
    """One input, one output of the same type. Subclasses give ``float_fn``; quantized types
    run the record's arithmetic (``unary_int``) or its int8 table."""

    def build(self) -> None:
        self.p = prepare_unary_math(self.node, self.graph)
        self.dtype = self.p.dtype

    def float_fn(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x, p = xs[0], self.p
        if self.dtype is F32:
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                y = self.float_fn(x.astype(np.float32, copy=False))
            return [np.asarray(y, dtype=np.float32)]
        if p.table is not None:
            # why the uint8 view: index = x + 128 without widening the batch
            return [p.table[x.view(np.uint8) ^ 0x80]]
        return [unary_int(p, x.astype(np.int64)).astype(self.dtype.numpy)]


@register("LeakyRelu", F32, I8, I16)
class LeakyRelu(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.where(x > 0, x, x * np.float32(self.p.alpha))


@register("HardSwish", F32, I8)
class HardSwish(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return x * np.minimum(np.float32(6), np.maximum(np.float32(0), x + np.float32(3))) \
            / np.float32(6)


@register("HardSigmoid", F32)
class HardSigmoid(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.float32(self.p.alpha) * x + np.float32(self.p.beta), np.float32(0),
                       np.float32(1))


@register("Abs", F32, I8, I16)
class Abs(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)


@register("Rsqrt", F32, I8, I16)
class Rsqrt(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.float32(1) / np.sqrt(x)


# -- float-only math -------------------------------------------------------------------------------
@register("Neg", F32)
class Neg(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return -x


@register("Sqrt", F32)
class Sqrt(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.sqrt(x)


@register("Exp", F32)
class Exp(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x)


@register("Log", F32)
class Log(UnaryLayer):
    def float_fn(self, x: np.ndarray) -> np.ndarray:
        return np.log(x)
