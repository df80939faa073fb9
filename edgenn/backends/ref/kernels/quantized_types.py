"""int8 and int16 activations side by side: value ranges, fused-activation clamps, requantization.

TFLite's 16x8 scheme keeps int16 activations (zero point 0) next to int8 ones; the kernels
that only move or compare values (pooling, QUANTIZE) run the same integer code on both, with
the type's own limits. These helpers carry the type explicitly so one layer class serves both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier_inplace,
    quantize_multiplier,
    type_range,
    wrap_int32,
)
from edgenn.backends.ref.kernels.common import per_tensor
from edgenn.backends.ref.layer import Layer
from edgenn.ir import DType, QuantParams

QUANTIZED = (DType.INT8, DType.INT16)


@dataclass(frozen=True)
class Requant:
    """TFLM's ``Requantize`` (QUANTIZE between two integer tensors) for int8 and int16.

    ``MultiplyByQuantizedMultiplier(x - zp_in)`` with the multiplier of ``in_scale /
    out_scale`` (in double), ``+ zp_out``, clamped to the output type. With an int32 side
    (QUANTIZE int32 -> int8 / int16, int8 / int16 -> int32) the two additions are int32
    additions that wrap as they do in TFLite Micro's C++ (``wide``).
    """

    zp_in: int
    zp_out: int
    multiplier: int
    shift: int
    out_dtype: DType
    wide: bool = False

    @classmethod
    def between(cls, q_in: QuantParams, q_out: QuantParams, in_dtype: DType,
                out_dtype: DType) -> Requant | None:
        """The rescale from ``q_in`` to ``q_out``; None when nothing changes (a copy)."""
        if q_in == q_out and in_dtype is out_dtype:
            return None
        multiplier, shift = quantize_multiplier(q_in.s / q_out.s)
        wide = DType.INT32 in (in_dtype, out_dtype)
        return cls(q_in.zp, q_out.zp, multiplier, shift, out_dtype, wide)

    @property
    def lo(self) -> int:
        return type_range(self.out_dtype)[0]

    @property
    def hi(self) -> int:
        return type_range(self.out_dtype)[1]

    def __call__(self, x: np.ndarray) -> npt.NDArray[np.signedinteger]:
        v = x.astype(np.int64)
        v -= self.zp_in
        if self.wide:  # why only then: int8 / int16 differences cannot leave int32
            v = wrap_int32(v)
        v = multiply_by_quantized_multiplier_inplace(v, self.multiplier, self.shift)
        v += self.zp_out
        if self.wide:
            v = wrap_int32(v)
        np.clip(v, self.lo, self.hi, out=v)
        return v.astype(self.out_dtype.numpy)


def moved_output_requant(layer: Layer) -> Requant | None:
    """For an op that moves or compares values in its input's quantization (pooling), the
    rescale to a differently quantized output of the same integer type, else None.

    As the exporter writes such a node for TFLM: the op with the input's parameters, then a
    QUANTIZE to the declared output parameters.
    """
    x, y = layer.inputs[0], layer.outputs[0]
    if x is None or x.dtype not in QUANTIZED or y.dtype is not x.dtype:
        return None
    if x.quant is None or y.quant is None:  # nothing declared: the values pass unchanged
        return None
    q_in, q_out = per_tensor(layer, x, "input"), per_tensor(layer, y, "output")
    return Requant.between(q_in, q_out, x.dtype, y.dtype)
