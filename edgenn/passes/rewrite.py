"""Small graph-rewriting helpers shared by the passes (all return new Graphs)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from edgenn.ir import Graph, Node, Tensor


def rename(graph: Graph, mapping: Mapping[str, str]) -> Graph:
    """Rename tensors everywhere (node inputs/outputs, graph outputs, state, external_perm)."""
    if not mapping:
        return graph

    def r(name: str) -> str:
        return mapping.get(name, name) if name else name

    nodes = [n.with_(inputs=tuple(r(i) for i in n.inputs), outputs=tuple(r(o) for o in n.outputs))
             for n in graph.nodes]
    tensors: dict[str, Tensor] = {}
    for name, t in graph.tensors.items():
        if name in mapping:
            continue
        tensors[name] = t
    for old, new in mapping.items():
        if old in graph.tensors and new not in tensors:
            tensors[new] = graph.tensors[old].with_(name=new)
    perm = {r(k): v for k, v in graph.external_perm.items()}
    return graph.replace(nodes=tuple(nodes), tensors=tensors,
                         inputs=tuple(r(i) for i in graph.inputs),
                         outputs=tuple(r(o) for o in graph.outputs), external_perm=perm,
                         state=tuple(v.renamed(dict(mapping)) for v in graph.state))


def single_consumer(graph: Graph, tensor: str) -> Node | None:
    """The only node reading ``tensor`` if it is not also a graph output, else None."""
    users = graph.consumers.get(tensor, [])
    if len(users) != 1 or tensor in graph.sinks:
        return None
    return users[0]


def bypass(graph: Graph, node: Node) -> Graph | None:
    """Remove a node whose output equals its first input (same shape, dtype, quantization).

    Consumers read the input instead; when the output is a graph output the producer of the
    input is renamed to produce it. Returns None when that is impossible.
    """
    src, out = node.inputs[0], node.outputs[0]
    nodes = [n for n in graph.nodes if n is not node]
    if out not in graph.sinks:
        rewired = [n.with_(inputs=tuple(src if i == out else i for i in n.inputs)) for n in nodes]
        return graph.with_nodes(rewired)
    if (src in graph.inputs or src in graph.sinks or src in graph.state_reads
            or graph.tensor(src).is_const):
        return None
    g = graph.with_nodes(nodes)
    g = g.replace(tensors={k: v for k, v in g.tensors.items() if k != out})
    return rename(g, {src: out})


def remove_dead(graph: Graph) -> Graph:
    """Drop nodes none of whose outputs is read or is a graph output (or a state's new value)."""
    live = set(graph.sinks)
    kept: list[Node] = []
    for node in reversed(graph.nodes):
        if any(o in live for o in node.outputs):
            kept.append(node)
            live.update(i for i in node.inputs if i)
    if len(kept) == len(graph.nodes):
        return graph
    return graph.with_nodes(reversed(kept))


def replace_node(graph: Graph, old: Node, new: Iterable[Node],
                 tensors: Mapping[str, Tensor] | None = None) -> Graph:
    """Put ``new`` nodes where ``old`` was, adding ``tensors``."""
    nodes: list[Node] = []
    for n in graph.nodes:
        if n is old:
            nodes.extend(new)
        else:
            nodes.append(n)
    pool = dict(graph.tensors)
    pool.update(tensors or {})
    return graph.with_nodes(nodes, pool)


def fresh_name(graph: Graph, hint: str) -> str:
    name, i = hint, 1
    while name in graph.tensors:
        name = f"{hint}_{i}"
        i += 1
    return name
