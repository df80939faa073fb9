"""Which channels of a layer's output the rest of the graph can observe.

A channel that its only reader weighs by zero at every tap (a column of the reader's weights
that is all zero, as trained networks leave behind their dead channels) changes no value the
graph computes: the reader's sum multiplies it by 0 and its folded bias subtracts
``in_zp * 0``. A producer kernel may then leave that channel unwritten. Only ``Conv2D`` readers
of one group are looked through, and only when the tensor has one reader and is not a graph
output (skipping a block reroutes a block's input, which has two readers, never such a
tensor).
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import Graph, Node


def read_channels(node: Node, graph: Graph) -> tuple[int, ...] | None:
    """The output channels of ``node`` its only reader weighs, or None when every channel
    may be observed (graph output, several readers, a reader that is not a one-group
    Conv2D with constant weights, or no channel unread)."""
    out = node.outputs[0]
    if out in graph.outputs or out not in graph.tensors:
        return None
    readers = graph.consumers.get(out, [])
    if len(readers) != 1:
        return None
    r = readers[0]
    if (r.op != "Conv2D" or int(r.attr("groups", 1)) != 1 or len(r.inputs) < 2
            or r.inputs[0] != out or out in r.inputs[1:]):
        return None
    w = graph.tensor(r.inputs[1])
    c = graph.tensor(out).shape[-1]
    if w.data is None or len(w.shape) != 4 or w.shape[3] != c:
        return None
    used = np.any(np.asarray(w.data).reshape(-1, c) != 0, axis=0)
    if used.all():
        return None
    return tuple(int(k) for k in np.flatnonzero(used))
