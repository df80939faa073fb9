"""The arithmetic of TFLite's 16x8 scheme (int16 activations, int8 weights), bit-exact.

TFLite Micro's 16x8 kernels (``ConvPerChannel``, ``DepthwiseConvPerChannel``,
``FullyConnected`` and ``TransposeConv`` with int16 data) sum ``x * w`` with no zero points
and pick the accumulator from the bias they are given:

* an **int64** bias, or none at all, gives an int64 accumulator and the 64-bit
  ``MultiplyByQuantizedMultiplier(int64_t, int32_t, int)``, which rounds the multiplier to
  16 bits and adds half before one arithmetic shift (:func:`multiply_by_quantized_multiplier_64`);
* an **int32** bias gives a wrapping int32 accumulator and the usual 32-bit double-rounding
  ``MultiplyByQuantizedMultiplier``.

:class:`S16Requant` holds one layer's choice and does the whole epilogue (bias, rescale,
clamp to the fused activation's int16 range). The int16 tensors of the scheme are symmetric:
:func:`symmetric` refuses a non-zero zero point with one line naming the node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    activation_range,
    multiply_by_quantized_multiplier_inplace,
    wrap_int32,
)
from edgenn.backends.ref.kernels.common import activation_of, quant_of
from edgenn.backends.ref.layer import Layer
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, QuantParams, Tensor

INT16_MIN, INT16_MAX = -32768, 32767
# The 64-bit multiply's shift is 15 - shift; at shift >= 15 the C++ shifts by a negative count.
_MAX_SHIFT_64 = 14


def reduced_multiplier(multiplier: Any) -> Any:
    """The 16-bit multiplier the 64-bit ``MultiplyByQuantizedMultiplier`` uses (int64 array)."""
    m = np.asarray(multiplier, dtype=np.int64)
    # why the cap: rounding a multiplier >= 0x7FFF0000 up would give 2^15, outside int16
    return np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)


def multiply_by_quantized_multiplier_64(x: Any, multiplier: Any, shift: Any) -> Any:
    """TFLite's ``MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift)``.

    ``(x * reduced + 2**(14 - shift)) >> (15 - shift)`` in int64, then truncated to int32
    (the C++ assigns the int64 result to an int32). Rounds half up, unlike the 32-bit form.
    """
    x = np.asarray(x, dtype=np.int64)
    total = 15 - np.asarray(shift, dtype=np.int64)
    r = x * reduced_multiplier(multiplier)  # why no overflow check: int64 wraps as the C++ does
    r += np.int64(1) << (total - 1)
    r >>= total
    return wrap_int32(r)


def symmetric(layer: Layer, t: Tensor | None, what: str) -> QuantParams:
    """The quantization of an int16 activation or int8 weight of the 16x8 scheme (zero
    points 0, as TFLite requires and its 16x8 kernels assume)."""
    q = quant_of(layer, t, what)
    if np.any(q.zero_point != 0):
        raise UnsupportedOperatorError(
            f"{layer.node}: {what} tensor {t.name if t is not None else '?'!r} of a 16x8 "
            f"{layer.node.op} has a non-zero zero point (the scheme is symmetric)")
    return q


@dataclass(frozen=True)
class S16Requant:
    """One 16x8 layer's epilogue: ``acc + bias``, rescale, clamp to ``[lo, hi]``, int16.

    ``wide`` is TFLite Micro's int64 accumulator (int64 bias or none); otherwise the int32
    one. ``bias`` is int64 (zeros when the layer has none); ``mult``/``shift`` per channel.
    """

    wide: bool
    bias: npt.NDArray[np.int64]
    mult: Any
    shift: Any
    lo: int
    hi: int

    @classmethod
    def build(cls, layer: Layer, bias: np.ndarray | None, channels: int, mult: Any,
              shift: Any, out: Tensor, *, allow_narrow: bool = True) -> S16Requant:
        """The epilogue of ``layer`` from its bias constant (None when omitted)."""
        wide = bias is None or bias.dtype != np.int32
        if bias is not None and bias.dtype not in (np.int16, np.int32, np.int64):
            raise UnsupportedOperatorError(
                f"{layer.node}: a 16x8 {layer.node.op} needs an int64 or int32 bias, "
                f"got {bias.dtype}")
        if not wide and not allow_narrow:
            raise UnsupportedOperatorError(
                f"{layer.node}: a 16x8 {layer.node.op} needs an int64 bias, got int32")
        if wide and np.any(np.asarray(shift) > _MAX_SHIFT_64):
            raise UnsupportedOperatorError(
                f"{layer.node}: the output rescale of this 16x8 {layer.node.op} is too large "
                "for TFLite's 64-bit MultiplyByQuantizedMultiplier (scale ratio >= 2^14)")
        values = np.zeros(channels, np.int64) if bias is None else bias.astype(np.int64)
        lo, hi = activation_range(activation_of(layer), symmetric(layer, out, "output"),
                                  DType.INT16)
        return cls(wide, values, mult, shift, lo, hi)

    def __call__(self, acc: npt.NDArray[np.int64]) -> npt.NDArray[np.int16]:
        """Exact sums of ``x * w`` (int64, channels last) -> int16 outputs (overwrites acc)."""
        acc += self.bias
        if self.wide:
            out = multiply_by_quantized_multiplier_64(acc, self.mult, self.shift)
        else:
            # why wrap: TFLite Micro sums in int32, which wraps; the exact sum mod 2^32 is
            # the same whatever the order of the additions
            out = multiply_by_quantized_multiplier_inplace(
                wrap_int32(acc), self.mult, self.shift)
        np.clip(out, self.lo, self.hi, out=out)
        return out.astype(np.int16)
