"""Value checks on a graph's constants and quantization, shared by every frontend.

Shape inference (``ir/shapes.py``, ``ir/opdefs/``) checks shapes and attributes; these check
the numbers a hostile or broken file can carry: non-finite float weights and quantization
scales that are zero, negative or non-finite. Each would otherwise surface far from its cause
as a numpy warning, an ``inf`` activation range during calibration or a division by zero in a
kernel; here it is one error naming the tensor.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from edgenn.errors import GraphValidationError
from edgenn.ir.tensor import Tensor


def check_constants(tensors: Mapping[str, Tensor]) -> None:
    """Raise ``GraphValidationError`` naming the first tensor whose float data is not finite
    or whose quantization scale is not a positive finite number."""
    for name, t in tensors.items():
        if t.data is not None and np.issubdtype(t.data.dtype, np.floating) and t.data.size \
                and not np.isfinite(t.data).all():
            bad = t.data[~np.isfinite(t.data)].reshape(-1)[0]
            raise GraphValidationError(f"constant tensor {name!r} holds non-finite values "
                                       f"({bad} among its {t.data.size} elements)")
        if t.quant is not None:
            scale = t.quant.scale
            if scale.size and not (np.isfinite(scale).all() and (scale > 0).all()):
                bad = scale[~(np.isfinite(scale) & (scale > 0))][0]
                raise GraphValidationError(f"tensor {name!r} has the quantization scale {bad}; "
                                           "scales must be positive and finite")
