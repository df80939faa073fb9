"""Seeded random inputs for a graph: what benchmarks and measuring builds feed a model when no
real data is at hand."""

from __future__ import annotations

import numpy as np

from edgenn.ir.graph import Graph


def random_inputs(graph: Graph, n: int = 1, seed: int = 0) -> list[np.ndarray]:
    """A batch of ``n`` samples per graph input (``edgenn.ir.batch.batch_shape``: ``[n,
    *declared shape[1:]]`` for a model with a batch axis, else ``[n, *declared shape]``), in
    the input's element type: integers over the type's whole range, floats standard normal."""
    from edgenn.ir.batch import batch_shape

    rng = np.random.default_rng(seed)
    out = []
    for name in graph.inputs:
        dtype = graph.tensor(name).dtype.numpy
        shape = batch_shape(graph, name, n)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out
