"""Fusable convolution chains: consecutive int8 Conv2D nodes joined by single-use tensors.

A chain ``[c0, c1, ..., cn]`` reads one activation (``input``), writes one (``output``) and
passes ``intermediates[k]`` (the output of ``ck``) only to ``c(k+1)``: no other node reads it
and it is not a graph output, so the full map never has to exist. Activations were already
fused into the convolutions by the import passes (``activation`` attribute).

A chain may end in a **residual Add** (an identity shortcut: MobileNetV2's inverted residual
block, a ResNet basic block): when the last member's output is read only by an int8 ``Add``
whose other operand is the chain's own input, of the same shape, the Add becomes the chain's
last step (``residual``): the last member's output (``intermediates[-1]``) then never exists
as a whole map either, each of its rows is added to the same row of the chain input (which
the chain reads anyway) and the chain's ``output`` is the Add's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.passes.rewrite import single_consumer


@dataclass(frozen=True)
class ConvGeom:
    """What the row schedule needs of one member: kernel, strides, pads and map sizes."""

    kh: int
    kw: int
    sh: int
    sw: int
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    in_hwc: tuple[int, int, int]
    out_hwc: tuple[int, int, int]

    def input_rows(self, oy: int) -> tuple[int, int]:
        """Input rows ``[lo, hi)`` that output row ``oy`` reads, clipped to the map."""
        lo = oy * self.sh - self.pads[0]
        return max(lo, 0), min(lo + self.kh, self.in_hwc[0])


@dataclass(frozen=True)
class Chain:
    """Two or more Conv2D nodes fused into one FusedConvChain node."""

    members: tuple[Node, ...]
    input: Tensor
    intermediates: tuple[Tensor, ...]
    output: Tensor
    geoms: tuple[ConvGeom, ...]
    # the residual Add folded in as the last step (its other operand is ``input``); then
    # ``intermediates[-1]`` is the last member's output and ``output`` the Add's
    residual: Node | None = None

    def __post_init__(self) -> None:
        extra = self.residual is not None
        if len(self.members) < 2 or len(self.intermediates) != len(self.members) - 1 + extra:
            raise ValueError("a chain needs two or more members and one intermediate between each")

    @property
    def names(self) -> tuple[str, ...]:
        """The nodes the chain replaces (the residual Add last)."""
        tail = () if self.residual is None else (self.residual.name,)
        return (*(m.name for m in self.members), *tail)

    @property
    def nodes(self) -> tuple[Node, ...]:
        """The nodes the chain replaces: the members, then the residual Add."""
        return self.members if self.residual is None else (*self.members, self.residual)

    @property
    def conv_output(self) -> Tensor:
        """The last member's output (the Add's operand when there is a residual)."""
        return self.output if self.residual is None else self.intermediates[-1]

    def sub(self, start: int, stop: int) -> Chain:
        """Members ``[start, stop)`` as a chain of their own (at least two); it keeps the
        residual Add only when it is the whole chain (the Add needs the chain's input)."""
        if (start, stop) == (0, len(self.members)):
            return self
        tensors = (self.input, *self.intermediates[:len(self.members) - 1], self.conv_output)
        return Chain(self.members[start:stop], tensors[start], self.intermediates[start:stop - 1],
                     tensors[stop], self.geoms[start:stop])

    def __len__(self) -> int:
        return len(self.members)

    def __str__(self) -> str:
        return f"chain {' -> '.join(self.names)}"


Lookup = Callable[[str], Tensor]


def conv_geom(tensor: Lookup, node: Node) -> ConvGeom:
    x, w, y = tensor(node.inputs[0]), tensor(node.inputs[1]), tensor(node.outputs[0])
    sh, sw = (int(s) for s in node.attr("strides", (1, 1)))
    pt, pl, pb, pr = (int(p) for p in node.attr("pads", (0, 0, 0, 0)))
    return ConvGeom(int(w.shape[1]), int(w.shape[2]), sh, sw, (pt, pl, pb, pr),
                    (x.shape[1], x.shape[2], x.shape[3]), (y.shape[1], y.shape[2], y.shape[3]))


def is_fusable_conv(graph: Graph, node: Node) -> bool:
    """An int8 Conv2D with constant weights, dilation 1 and one rank-4 output."""
    if node.op != "Conv2D" or len(node.outputs) != 1 or len(node.inputs) < 2:
        return False
    x, w = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    if x.dtype is not DType.INT8 or x.is_const or not w.is_const or len(x.shape) != 4:
        return False
    if len(node.inputs) > 2 and node.inputs[2] and not graph.tensor(node.inputs[2]).is_const:
        return False
    return tuple(node.attr("dilations", (1, 1))) == (1, 1)


def make_chain(tensor: Lookup, members: Sequence[Node], residual: Node | None = None) -> Chain:
    """The chain of ``members`` (and its residual Add), tensors looked up with ``tensor``."""
    geoms = tuple(conv_geom(tensor, m) for m in members)
    if residual is None:
        return Chain(tuple(members), tensor(members[0].inputs[0]),
                     tuple(tensor(m.outputs[0]) for m in members[:-1]),
                     tensor(members[-1].outputs[0]), geoms)
    return Chain(tuple(members), tensor(members[0].inputs[0]),
                 tuple(tensor(m.outputs[0]) for m in members), tensor(residual.outputs[0]),
                 geoms, residual)


def chain_of_node(graph: Graph, node: Node) -> Chain:
    """The Chain a FusedConvChain node was made from (its intermediates are in its attrs)."""
    pool = {t.name: t for t in node.attr("intermediates", ())}
    return make_chain(lambda name: pool[name] if name in pool else graph.tensor(name),
                      node.attr("members"), node.attr("residual", None))


def fused_names(node: Node) -> tuple[str, ...]:
    """The names of the nodes a FusedConvChain node replaces (``Chain.names``)."""
    residual = node.attr("residual", None)
    tail = () if residual is None else (residual.name,)
    return (*(m.name for m in node.attr("members")), *tail)


def residual_add(graph: Graph, members: Sequence[Node]) -> Node | None:
    """The Add that takes ``members``' output and the chain's input (an identity shortcut), or
    None. Both operands and the output int8 with the same shape (no broadcast: each output
    row is one row of each operand), the last member's output read by that Add alone and not
    a graph output, the chain input computed (not a constant), every member of stride 1 (the
    rows of the output then follow the input's one for one: what lets the Cortex-M chain
    write its output over the input, ``fused_rows``)."""
    if any(tuple(int(s) for s in m.attr("strides", (1, 1))) != (1, 1) for m in members):
        return None
    x, last = members[0].inputs[0], members[-1].outputs[0]
    add = single_consumer(graph, last)
    if add is None or add.op != "Add" or len(add.inputs) != 2 or len(add.outputs) != 1:
        return None
    if sorted(add.inputs) != sorted((x, last)) or x == last:
        return None
    tensors = [graph.tensor(n) for n in (x, last, add.outputs[0])]
    if any(t.dtype is not DType.INT8 or t.is_const or t.shape != tensors[0].shape
           for t in tensors) or len(tensors[0].shape) != 4:
        return None
    return add


def _next_member(graph: Graph, node: Node) -> Node | None:
    user = single_consumer(graph, node.outputs[0])
    if user is None or not is_fusable_conv(graph, user) or user.inputs[0] != node.outputs[0]:
        return None
    # why: a node reading the intermediate twice (e.g. as a weight too) is not a plain chain.
    if node.outputs[0] in user.inputs[1:]:
        return None
    return user


def find_chains(graph: Graph, residuals: bool = True) -> list[Chain]:
    """Every maximal fusable chain of ``graph`` (two or more members), in execution order;
    each with the residual Add that ends it, if any (``residuals=False``: none)."""
    chains: list[Chain] = []
    taken: set[str] = set()
    for node in graph.nodes:
        if node.name in taken or not is_fusable_conv(graph, node):
            continue
        prev = graph.producer(node.inputs[0])
        if prev is not None and is_fusable_conv(graph, prev) and _next_member(graph, prev) is node:
            continue  # not the head of its chain: it is picked up from the head
        members = [node]
        nxt = _next_member(graph, node)
        while nxt is not None:
            members.append(nxt)
            nxt = _next_member(graph, nxt)
        if len(members) >= 2:
            taken.update(m.name for m in members)
            residual = residual_add(graph, members) if residuals else None
            chains.append(make_chain(graph.tensor, members, residual))
    return chains
