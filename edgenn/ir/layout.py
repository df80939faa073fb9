"""Arrays at a graph's boundary: the layout the model file declares vs the internal NHWC one."""

from __future__ import annotations

import numpy as np

from edgenn.errors import ShapeError
from edgenn.ir.graph import Graph


def to_internal(graph: Graph, name: str, arr: np.ndarray) -> np.ndarray:
    """``arr`` for graph input ``name``, given in the model file's declared layout as the
    runtimes take it (``edgenn.ir.batch.Batch.run``: ``[N, *declared[1:]]`` or exactly the
    declared shape), as a contiguous array in the internal layout; ShapeError naming the input
    when its dtype or shape is not the input's."""
    t = graph.tensor(name)
    ext = graph.external_shape(name)
    if arr.dtype != t.dtype.numpy:
        raise ShapeError(f"input {name!r}: expected {t.dtype.value} data, got {arr.dtype.name}")
    if arr.ndim != len(ext) or tuple(arr.shape[1:]) != tuple(ext[1:]):
        raise ShapeError(f"input {name!r}: expected shape [N, {', '.join(map(str, ext[1:]))}], "
                         f"got {list(arr.shape)}")
    perm = graph.external_perm.get(name)
    return np.ascontiguousarray(arr.transpose(np.argsort(perm)) if perm else arr)
