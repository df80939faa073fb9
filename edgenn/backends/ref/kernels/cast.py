"""Cast as TFLite Micro's CAST (``cast.cc``): C's ``static_cast`` of each stored value.

Float to integer truncates toward zero; values outside the target's range are undefined in
C, so the reference saturates them (what ``vcvt`` does on Cortex-M) rather than wrap.
Integer to narrower integer wraps (two's complement), bool is 0 / 1, any non-zero is true.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.layer import Layer, register
from edgenn.ir.opdefs.cast import CASTABLE


@register("Cast", *CASTABLE)
class Cast(Layer):
    def build(self) -> None:
        self.to = self.outputs[0].dtype.numpy

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if self.to == np.bool_:
            return [x != 0]
        if x.dtype.kind == "f" and self.to.kind in "iu":
            info = np.iinfo(self.to)
            x = np.clip(np.trunc(x), info.min, info.max)
        return [x.astype(self.to)]
