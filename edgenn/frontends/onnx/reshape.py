"""ONNX Reshape's target shape, shared by its converter (``ops/shape.py``) and constant
folding (``constfold.py``), which sits below the converters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.frontends.onnx.context import Context


def resolve_reshape(ctx: Context, in_shape: Sequence[int], spec: np.ndarray) -> tuple[int, ...]:
    """ONNX Reshape's target: 0 copies the input dimension, one -1 is inferred."""
    allowzero = bool(ctx.attr("allowzero", 0))
    total = int(np.prod(in_shape))
    out = []
    for i, d in enumerate(int(v) for v in np.asarray(spec).reshape(-1)):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise ctx.malformed(f"reshape 0 at axis {i} beyond input rank {len(in_shape)}")
            d = in_shape[i]
        out.append(d)
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise ctx.malformed(f"invalid reshape target {out}")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        if known == 0 or total % known:
            raise ctx.malformed(f"cannot reshape {list(in_shape)} to {out}")
        out[out.index(-1)] = total // known
    if int(np.prod(out)) != total:
        raise ctx.malformed(f"cannot reshape {list(in_shape)} to {out}")
    return tuple(out)
