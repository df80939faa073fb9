"""Buffers of a graph: one per non-constant tensor, alive from its producer to its last reader.

Reshape aliasing: a Reshape only renames the same bytes (same dtype, same element count, C
order), so by default its output shares its input's buffer and no copy is needed.  The shared
buffer lives until the last reader of either tensor.  Runtimes must then treat Reshape as a
no-op on the arena (or a ``memmove`` onto itself).  Pass ``alias_reshape=False`` for one buffer
per tensor.
"""

from __future__ import annotations

from edgenn.ir.graph import Graph
from edgenn.ir.node import Node
from edgenn.memory.buffer import Buffer


def reshape_aliases(graph: Graph, external: frozenset[str] = frozenset()) -> dict[str, str]:
    """Map each Reshape output that may share its input's bytes to the tensor owning them.

    ``external``: tensors kept outside the arena (graph inputs read in place from the
    caller's buffer); a Reshape of one gets bytes of its own, because a Reshape kernel may
    write its output (a requantizing copy rewrites the bytes in place) and the caller's
    buffer is read-only."""
    aliases: dict[str, str] = {}
    persistent = set(graph.state_reads) | external
    for node in graph.nodes:
        if node.op != "Reshape" or not node.inputs or len(node.outputs) != 1:
            continue
        src, out = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
        if src.is_const or src.nbytes != out.nbytes or src.name in persistent:
            # a constant, a state (see graph_buffers) or an external input lives outside the
            # planned arena: the output needs its own bytes
            continue
        # why: chase chains (Reshape of a Reshape) so every alias points at a real buffer.
        aliases[out.name] = aliases.get(src.name, src.name)
    return aliases


def node_scratch_name(node: Node) -> str:
    return f"scratch:{node.name}"


def graph_buffers(graph: Graph, alias_reshape: bool = True,
                  node_scratch: bool = True,
                  external: frozenset[str] = frozenset()) -> list[Buffer]:
    """One Buffer per non-constant tensor (size = bytes at batch 1), in first-use order.

    ``first_use`` is the index of the producing node (graph inputs: 0); ``last_use`` the
    index of the last node reading it (graph outputs: the last node; a tensor nobody reads:
    its producer's index).  With ``alias_reshape`` Reshape outputs get no buffer of their own
    (see :func:`reshape_aliases`).  With ``node_scratch`` a node declaring
    ``attrs["scratch_bytes"]`` (a fused chain's ring buffers) gets a buffer alive only at its
    step; code generators whose kernels report their own scratch pass ``False``.
    State (``graph.state``): a variable's ``read`` tensor is persistent, kept in an area of
    its own beside the planned buffers (it must survive between invocations), so it gets no
    buffer here; its ``write`` tensor lives to the last node, like a graph output, because
    the runtime stores it after the last node. ``external``: graph inputs that live outside
    the arena (the caller's buffer, read in place): no buffer.
    """
    aliases = reshape_aliases(graph, external) if alias_reshape else {}
    last_step = max(len(graph.nodes) - 1, 0)
    first: dict[str, int] = {}
    last: dict[str, int] = {}

    def touch(name: str, step: int) -> None:
        owner = aliases.get(name, name)
        first.setdefault(owner, step)
        last[owner] = max(last.get(owner, step), step)

    persistent = set(graph.state_reads)
    for name in graph.inputs:
        touch(name, 0)
    for step, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name and not graph.tensor(name).is_const and name not in persistent:
                touch(name, step)
        for name in node.outputs:
            touch(name, step)
    for name in graph.sinks:
        if not graph.tensor(name).is_const and name not in persistent:
            touch(name, last_step)

    bufs = [Buffer(name, graph.tensor(name).nbytes, first[name], last[name]) for name in first
            if name not in external]
    if node_scratch:
        bufs += [Buffer(node_scratch_name(node), int(node.attrs["scratch_bytes"]), step, step)
                 for step, node in enumerate(graph.nodes) if node.attrs.get("scratch_bytes")]
    return sorted(bufs, key=lambda b: (b.first_use, b.last_use))
