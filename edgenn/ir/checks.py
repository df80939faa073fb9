"""Value checks on a graph's constants and quantization, shared by every frontend.

Shape inference (``ir/shapes.py``, ``ir/opdefs/``) checks shapes and attributes; these check
the numbers a hostile or broken file can carry: quantization scales that are zero, negative or
non-finite, and NaN / infinite float attributes (a LeakyRelu alpha, a normalization epsilon,
Clip bounds, ...). Each would otherwise surface far from its cause as a numpy warning, an
``inf`` activation range during calibration or a division by zero in a kernel; here it is one
error naming the tensor, or the node and the attribute. Non-finite float *constants* are data
(TFLite Micro computes with them) and pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from edgenn.errors import GraphValidationError
from edgenn.ir.node import Node
from edgenn.ir.tensor import Tensor


def check_constants(tensors: Mapping[str, Tensor]) -> None:
    """Raise ``GraphValidationError`` naming the first tensor whose quantization scale is not
    a positive finite number.

    why not the float data: +-inf and NaN are values a float model computes with (an
    unbounded MINIMUM clip, a -inf attention mask), as TFLite Micro and onnxruntime run them;
    what needs finite numbers checks them where it computes (a folded batch-norm, the
    quantizer's ranges).
    """
    for name, t in tensors.items():
        if t.quant is not None:
            scale = t.quant.scale
            if scale.size and not (np.isfinite(scale).all() and (scale > 0).all()):
                bad = scale[~(np.isfinite(scale) & (scale > 0))][0]
                raise GraphValidationError(f"tensor {name!r} has the quantization scale {bad}; "
                                           "scales must be positive and finite")


# Attributes where an infinity means something: an infinite Clip bound is no bound (ONNX's
# defaults; a ReLU written as a Clip), and a Pad in front of a max pooling pads with -inf. NaN
# never does. ONNX's Clip and Pad (before opset 11) carry the same attributes under the same
# names, so the ONNX loader reads this table too.
INFINITE_OK: dict[str, tuple[str, ...]] = {"Clip": ("min", "max"), "Pad": ("value",)}


def first_nonfinite(value: Any, allow_inf: bool = False) -> float | None:
    """The first NaN (or, unless ``allow_inf``, infinite) float in an attribute value: a
    float, a list / tuple of them (nested) or a float array; ``None`` when there is none.
    Other values (ints, strings, tensors, nodes) hold none."""
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        bad = value[np.isnan(value) if allow_inf else ~np.isfinite(value)].reshape(-1)
        return float(bad[0]) if bad.size else None
    if isinstance(value, (float, np.floating)):
        bad_scalar = np.isnan(value) if allow_inf else not np.isfinite(value)
        return float(value) if bad_scalar else None
    if isinstance(value, (list, tuple)):
        for item in value:
            found = first_nonfinite(item, allow_inf)
            if found is not None:
                return found
    return None


def check_attributes(node: Node) -> None:
    """Raise ``GraphValidationError`` naming ``node`` and its first attribute that holds a NaN
    or an infinity (``INFINITE_OK`` lists where an infinity is allowed).

    why every attribute and not each operator's own: a converter then cannot forget one, and
    ONNX and TFLite files meet the same check (``edgenn.ir.shapes.infer`` calls it first).
    """
    infinite_ok = INFINITE_OK.get(node.op, ())
    for key, value in node.attrs.items():
        bad = first_nonfinite(value, key in infinite_ok)
        if bad is not None:
            raise GraphValidationError(f"{node}: attribute {key} is {bad}")
