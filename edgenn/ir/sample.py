"""Seeded random inputs for a graph: what benchmarks and measuring builds feed a model when no
real data is at hand."""

from __future__ import annotations

import numpy as np

from edgenn.ir.graph import Graph


def random_inputs(graph: Graph, n: int = 1, seed: int = 0) -> list[np.ndarray]:
    """One ``[n, *external shape]`` array per graph input, in the input's element type:
    integers over the type's whole range, floats standard normal."""
    rng = np.random.default_rng(seed)
    out = []
    for name in graph.inputs:
        dtype = graph.tensor(name).dtype.numpy
        shape = (n, *graph.external_shape(name)[1:])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out
