"""The arithmetic of TFLite's 16x8 scheme (int16 activations, int8 weights), bit-exact.

TFLite Micro's 16x8 kernels (``ConvPerChannel``, ``DepthwiseConvPerChannel``,
``FullyConnected`` and ``TransposeConv`` with int16 data) sum ``x * w`` with no zero points
and pick the accumulator from the bias they are given:

* an **int64** bias, or none at all, gives an int64 accumulator and the 64-bit
  ``MultiplyByQuantizedMultiplier(int64_t, int32_t, int)``, which rounds the multiplier to
  16 bits and adds half before one arithmetic shift (:func:`multiply_by_quantized_multiplier_64`);
* an **int32** bias gives a wrapping int32 accumulator and the usual 32-bit double-rounding
  ``MultiplyByQuantizedMultiplier``.

``edgenn.prepared.s16.S16Requant`` holds one layer's choice and does the whole epilogue
(bias, rescale, clamp to the fused activation's int16 range).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import wrap_int32

INT16_MIN, INT16_MAX = -32768, 32767
# The 64-bit multiply's shift is 15 - shift; at shift >= 15 the C++ shifts by a negative count.
MAX_SHIFT_64 = 14


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
