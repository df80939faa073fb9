"""The arena plan of a generated project: the graph's tensors plus one scratch buffer per layer.

A layer's scratch buffer lives only at that layer's step, so the planner may reuse its bytes
for any tensor not alive at the same step. ``external`` tensors (graph inputs read in place
from the caller's buffer, ``--input-buffer caller``) get no bytes here: they are outside the
arena, so no layer writes its output over them and no Reshape aliases them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from edgenn.backends.cortexm.targets import Core
from edgenn.errors import EdgennError
from edgenn.ir import Graph, Node
from edgenn.memory import (
    Buffer,
    MemoryPlan,
    check_plan,
    get_planner,
    graph_buffers,
    reshape_aliases,
    state_offsets,
)


def scratch_name(index: int) -> str:
    return f"__scratch_{index}"


def buffers_with_scratch(graph: Graph, scratch_bytes: Sequence[int],
                         external: frozenset[str] = frozenset()) -> list[Buffer]:
    """``graph_buffers(graph)`` plus ``Buffer(scratch, size, i, i)`` per layer that needs it."""
    # why node_scratch=False: kernels report their scratch (a fused chain's rings) themselves.
    bufs = graph_buffers(graph, node_scratch=False, external=external)
    bufs += [Buffer(scratch_name(i), int(n), i, i) for i, n in enumerate(scratch_bytes) if n > 0]
    return bufs


def in_place_pairs(graph: Graph, bufs: Sequence[Buffer], in_place: Iterable[int],
                   external: frozenset[str] = frozenset(),
                   ) -> tuple[dict[str, str], list[Buffer]]:
    """(output -> input buffer, the buffers with each such pair merged into one).

    A layer ``i`` in ``in_place`` (its kernel reads every input byte an output byte depends
    on before it writes that output byte, and writes no other bytes) may write its output over
    its first input when that input dies at this layer: the input buffer's last use is step
    ``i`` and it is not (an alias of) a graph output. The merged buffer keeps the input's name
    and first use, lasts until the output's last use and is as large as the larger of the two.
    An ``external`` input has no buffer in ``bufs``: it is never written over.
    """
    owners = reshape_aliases(graph, external)
    outputs = {owners.get(o, o) for o in graph.outputs}
    merged = {b.name: b for b in bufs}  # insertion order kept: the planner sees the same order
    pairs: dict[str, str] = {}
    for i in sorted(set(in_place)):
        node = graph.nodes[i]
        if not node.inputs or not node.inputs[0] or len(node.outputs) != 1:
            continue
        src = owners.get(node.inputs[0], node.inputs[0])
        src = pairs.get(src, src)  # an input that is itself an in-place output
        out = node.outputs[0]
        if src not in merged or out not in merged or src in outputs:
            continue
        if merged[src].last_use != i:
            continue
        a, b = merged[src], merged.pop(out)
        merged[src] = Buffer(src, max(a.size, b.size), a.first_use, b.last_use)
        pairs[out] = src
    return pairs, list(merged.values())


def state_aliases(graph: Graph, state_in_place: Iterable[int]) -> dict[str, str]:
    """{new-state tensor: its state variable's read tensor} for the variables whose new value
    the layer computing it may write over the old one (its kernel's ``state_in_place``):
    when no other layer reads the old value, the two have the same size and the new value
    is neither a graph output (a run that restores the state afterwards reads outputs) nor
    under a Reshape alias, the new value lives in the variable's slot of the state area: no
    planned buffer, and no copy at the end of the invocation (``codegen/state.py``)."""
    layers = set(state_in_place)
    if not layers or not graph.state:
        return {}
    producer = {o: i for i, n in enumerate(graph.nodes) for o in n.outputs if o}
    owners = set(reshape_aliases(graph).values())
    outputs = set(graph.outputs)
    out: dict[str, str] = {}
    for s in graph.state:
        i = producer.get(s.write)
        if s.write == s.read or i not in layers or s.write in owners or s.write in outputs:
            continue
        readers = {k for k, n in enumerate(graph.nodes) if s.read in n.inputs}
        if readers != {i} or graph.tensor(s.write).nbytes != graph.tensor(s.read).nbytes:
            continue
        out[s.write] = s.read
    return out


INPUT_BUFFERS = ("arena", "caller")


def external_tensors(graph: Graph, input_buffer: str = "arena") -> frozenset[str]:
    """The tensors the arena does not hold: with ``input_buffer="caller"`` the graph inputs
    (read in place from the caller's buffers), else none."""
    if input_buffer not in INPUT_BUFFERS:
        raise EdgennError(f"input buffer {input_buffer!r}: choose one of "
                          f"{', '.join(INPUT_BUFFERS)}")
    return frozenset(graph.inputs) if input_buffer == "caller" else frozenset()


def plan_arena(graph: Graph, scratch_bytes: Sequence[int], planner: str = "greedy",
               in_place: Iterable[int] = (), state_in_place: Iterable[int] = (),
               external: frozenset[str] = frozenset()) -> MemoryPlan:
    """Offsets of every tensor (Reshape aliases included) and scratch buffer, self-checked.

    ``in_place``: indices of layers whose kernels can write their output over their input
    (:func:`in_place_pairs` decides where that is allowed); such outputs share the input's
    offset and appear in the plan's ``aliases`` when that makes the arena smaller.
    ``state_in_place``: indices of layers that may write their new state over the old one;
    the new values of :func:`state_aliases` get no buffer here (the caller gives them their
    variable's slot when it places the state area). ``external``: graph inputs outside the
    arena (no offset in the plan; see the module docstring).
    """
    in_slot = state_aliases(graph, state_in_place)
    plain = [b for b in buffers_with_scratch(graph, scratch_bytes, external)
             if b.name not in in_slot]
    plan = check_plan(get_planner(planner).plan(plain))
    pairs, bufs = in_place_pairs(graph, plain, in_place, external)
    if pairs:
        # why: a merged buffer lives longer than either half, and the greedy placement can do
        # worse with it: keep the in-place plan only when its arena is smaller
        shared = check_plan(get_planner(planner).plan(bufs))
        if shared.peak_bytes < plan.peak_bytes:
            plan = shared
        else:
            pairs = {}
    offsets = dict(plan.offsets)
    aliases = dict(pairs)
    for out, src in pairs.items():
        offsets[out] = offsets[src]
    for alias, owner in reshape_aliases(graph, external).items():
        offsets[alias] = offsets[owner]
        aliases[alias] = owner
    return MemoryPlan(offsets, plan.peak_bytes, plan.alignment, plan.buffers, aliases,
                      plan.planner)


def firmware_arena_bytes(graph: Graph, core: Core,
                         layers: dict[object, tuple[int, bool, bool]] | None = None,
                         input_buffer: str = "arena") -> int:
    """The arena the generated firmware would allocate: tensors plus each kernel's scratch
    (the graph inputs too unless ``input_buffer`` is ``"caller"``: :func:`external_tensors`).

    ``layers``: a cache of each node's (scratch bytes, in place, state in place), by node, for
    a caller that plans many graphs sharing nodes (the fusion planner's candidates: a kernel's
    prepare is the slow part, and a node's figures do not depend on which other chains are
    fused)."""
    from edgenn.backends.cortexm.selection import select_kernel

    def figures(n: Node) -> tuple[int, bool, bool]:
        key = (n.name, n.op, n.inputs, n.outputs)
        if layers is not None and key in layers:
            return layers[key]
        call = select_kernel(n, graph, core).prepare(n, graph, core)
        figure = call.scratch_bytes, bool(call.in_place), bool(call.state_in_place)
        if layers is not None:
            layers[key] = figure
        return figure

    calls = [figures(n) for n in graph.nodes]
    # why in_place too: this must be the arena generate() plans, in-place layers included
    peak = plan_arena(graph, [scratch for scratch, _, _ in calls],
                      in_place=[i for i, (_, in_place, _) in enumerate(calls) if in_place],
                      state_in_place=[i for i, (_, _, state) in enumerate(calls)
                                      if state],
                      external=external_tensors(graph, input_buffer)).peak_bytes
    if graph.state:  # the state area follows the planned buffers (project._with_state_area)
        peak = state_offsets(graph, peak)[1]
    return max(16, peak)
