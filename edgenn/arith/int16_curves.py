"""TFLite's int16 Logistic and Tanh (``reference_integer_ops::Logistic`` / ``Tanh``, int16
overloads): the input rescaled by ``(x * multiplier + round) >> shift``, then ``sigmoid(i / 24)``
interpolated linearly in TFLite's 256-entry Q0.16 table (tanh as ``2 sigmoid(2x) - 1``, one
input bit less), rounded to Q0.15.

The one source of that table: the reference kernels (Logistic, Tanh, LSTM gates) use it here,
the Cortex-M C reads ``edgenn_sigmoid_table.h``, generated from it
(``edgenn.backends.cortexm.generated_c``; a test regenerates it and compares).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

# TFLite's sigmoid(i / 24) in 0.16 fixed point, i = 0..255 (``sigmoid_table_uint16``; not a
# closed form: the values are TFLite's own and must be used as they are).
SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.int64)


@dataclass(frozen=True)
class Int16InputScaling:
    """``(x * multiplier + round) >> shift``: how TFLM's int16 Logistic / Tanh scale their
    input before the table lookup (``round`` is half of ``1 << shift``)."""

    multiplier: int
    shift: int

    @classmethod
    def for_power(cls, scale_power: int) -> Int16InputScaling:
        """The LSTM's tanh of a Q(-scale_power) value (``lstm_internal::Tanh``): a left shift
        of ``15 + power - 3`` folded into the multiplier 3, or a right shift."""
        left = 15 + scale_power - 3
        return cls(3 << left, 0) if left >= 0 else cls(3, -left)

    def apply(self, x: IntArray) -> IntArray:
        rnd = (1 << (self.shift - 1)) if self.shift > 0 else 0
        return (x * self.multiplier + rnd) >> self.shift


SIGMOID_SCALING = Int16InputScaling(3, 0)  # Logistic(0, 0, ...): the "power of two" case


def int16_sigmoid(x: IntArray, scaling: Int16InputScaling = SIGMOID_SCALING) -> IntArray:
    """``reference_integer_ops::Logistic`` on int16: Q0.15 output in [0, 32767]."""
    v = scaling.apply(np.asarray(x, np.int64))
    a = np.abs(v)
    uh = a >> 9
    saturated = uh >= 255
    k = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE_UINT16[k], SIGMOID_TABLE_UINT16[k + 1]
    # why no uint32 wrap: every intermediate stays in [0, 2^25] for 16-bit inputs
    result = np.where(saturated, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return result >> 10


def int16_tanh(x: IntArray, scaling: Int16InputScaling) -> IntArray:
    """``reference_integer_ops::Tanh`` on int16: Q0.15 output in [-32767, 32767]."""
    v = scaling.apply(np.asarray(x, np.int64))
    a = np.abs(v)
    uh = a >> 8
    saturated = uh >= 255
    k = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE_UINT16[k], SIGMOID_TABLE_UINT16[k + 1]
    result = np.where(saturated, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    result = np.where(v >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return result >> 8  # arithmetic shift of an int32, as the C++
