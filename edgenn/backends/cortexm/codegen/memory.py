"""The arena plan of a generated project: the graph's tensors plus one scratch buffer per layer.

A layer's scratch buffer lives only at that layer's step, so the planner may reuse its bytes
for any tensor not alive at the same step.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph
from edgenn.memory import (
    Buffer,
    MemoryPlan,
    check_plan,
    get_planner,
    graph_buffers,
    reshape_aliases,
)


def scratch_name(index: int) -> str:
    return f"__scratch_{index}"


def buffers_with_scratch(graph: Graph, scratch_bytes: Sequence[int]) -> list[Buffer]:
    """``graph_buffers(graph)`` plus ``Buffer(scratch, size, i, i)`` per layer that needs it."""
    # why node_scratch=False: kernels report their scratch (a fused chain's rings) themselves.
    bufs = graph_buffers(graph, node_scratch=False)
    bufs += [Buffer(scratch_name(i), int(n), i, i) for i, n in enumerate(scratch_bytes) if n > 0]
    return bufs


def plan_arena(graph: Graph, scratch_bytes: Sequence[int], planner: str = "greedy") -> MemoryPlan:
    """Offsets of every tensor (Reshape aliases included) and scratch buffer, self-checked."""
    plan = check_plan(get_planner(planner).plan(buffers_with_scratch(graph, scratch_bytes)))
    aliases = reshape_aliases(graph)
    offsets = dict(plan.offsets)
    offsets.update({alias: plan.offsets[owner] for alias, owner in aliases.items()})
    return MemoryPlan(offsets, plan.peak_bytes, plan.alignment, plan.buffers, aliases,
                      plan.planner)


def firmware_arena_bytes(graph: Graph, core: Core,
                         widened_layers: frozenset[int] = frozenset()) -> int:
    """The arena the generated firmware would allocate: tensors plus each kernel's scratch."""
    from edgenn.backends.cortexm.kernel import select_kernel

    scratch = [select_kernel(n, graph, core, i in widened_layers).prepare(n, graph, core)
               .scratch_bytes for i, n in enumerate(graph.nodes)]
    return max(16, plan_arena(graph, scratch).peak_bytes)
