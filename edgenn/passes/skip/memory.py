"""One static arena valid for every skip configuration, plus each configuration's own peak.

Union rule: steps are node indices of the FULL graph (a skip replacement node takes its
block's Add index). For each configuration, every buffer has a live interval (a skipped
block's internal buffers have none; its input ``x`` lives until the last reader of the block
output, which reads ``x``'s bytes when the replacement is an alias, or until the Add step
when it is a requantize). A buffer's union lifetime spans all its intervals; the greedy
planner on union lifetimes never overlaps two buffers alive together in ANY configuration,
because each configuration's intervals lie inside the union ones. ``plan_for_configs``
re-checks this for every configuration anyway.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from edgenn.errors import PlanError
from edgenn.ir import Graph
from edgenn.memory import Buffer, MemoryPlan, check_plan, get_planner, graph_buffers, plan_graph
from edgenn.memory.lifetimes import reshape_aliases
from edgenn.memory.plan import DEFAULT_ALIGNMENT
from edgenn.passes.skip.apply import apply_skip
from edgenn.passes.skip.blocks import Block, find_blocks
from edgenn.passes.skip.config import SkipConfig, default_configs


@dataclass(frozen=True)
class SkipMemoryPlan:
    """``plan``: one arena (offsets by full-graph tensor name) valid for every configuration
    in ``peak_bytes_per_config``; that dict gives each configuration's own planned peak.

    ``buffers_per_config`` holds each configuration's live buffers in full-graph steps and
    ``aliases_per_config`` its tensor -> owning buffer map (a skipped alias block's output
    reads its input's bytes), so ``offsets_for(config)`` is where every tensor lives then.
    """

    plan: MemoryPlan
    peak_bytes_per_config: dict[SkipConfig, int]
    buffers_per_config: Mapping[SkipConfig, tuple[Buffer, ...]] = field(default_factory=dict)
    aliases_per_config: Mapping[SkipConfig, Mapping[str, str]] = field(default_factory=dict)

    @property
    def configs(self) -> list[SkipConfig]:
        return list(self.peak_bytes_per_config)

    def offsets_for(self, config: SkipConfig) -> dict[str, int]:
        """Byte offset of every tensor the configuration touches (aliases resolved)."""
        config = frozenset(config)
        if config not in self.buffers_per_config:
            raise PlanError(f"skip configuration {sorted(config)} is not in this plan")
        offsets = {b.name: self.plan.offsets[b.name] for b in self.buffers_per_config[config]}
        offsets.update({alias: self.plan.offsets[owner]
                        for alias, owner in self.aliases_per_config[config].items()})
        return offsets

    def check(self) -> SkipMemoryPlan:
        """Raise PlanError unless the arena is valid for every configuration."""
        for config, bufs in self.buffers_per_config.items():
            try:
                check_plan(self.plan, bufs)
            except PlanError as err:
                raise PlanError(f"skip configuration {sorted(config) or 'full'}: {err}") from None
        return self


def config_buffers(graph: Graph, config: SkipConfig, blocks: list[Block] | None = None,
                   ) -> tuple[list[Buffer], dict[str, str], Graph]:
    """The live buffers of ``apply_skip(graph, config)`` with steps in full-graph indices,
    its alias map (tensor -> owning buffer) and the skipped graph itself."""
    skipped = apply_skip(graph, config, blocks)
    full_step = {out: i for i, node in enumerate(graph.nodes) for out in node.outputs}
    # why: a kept node produces the same tensors as in the full graph; a replacement node
    # produces its block's output, whose full-graph producer is the block's Add.
    step_map = [full_step[node.outputs[0]] for node in skipped.nodes]
    # (The last node is kept or is a replacement standing at the last Add, so graph outputs
    # still live to the full graph's last step.)
    bufs = [Buffer(b.name, b.size, step_map[b.first_use], step_map[b.last_use])
            for b in graph_buffers(skipped)]
    return bufs, reshape_aliases(skipped), skipped


def plan_for_configs(graph: Graph, configs: Iterable[SkipConfig] | None = None,
                     planner: str = "greedy", alignment: int = DEFAULT_ALIGNMENT,
                     ) -> SkipMemoryPlan:
    """One arena valid for every configuration in ``configs`` (default: ``default_configs``,
    all 2**N up to ten blocks, else the full network and each block skipped alone), checked
    configuration by configuration, and each configuration's own peak (its graph planned
    alone)."""
    blocks = find_blocks(graph)
    chosen = default_configs(blocks) if configs is None else [frozenset(c) for c in configs]
    if not chosen:
        raise PlanError(f"graph {graph.name!r}: no skip configuration to plan for")
    per_config: dict[SkipConfig, tuple[Buffer, ...]] = {}
    aliases: dict[SkipConfig, dict[str, str]] = {}
    peaks: dict[SkipConfig, int] = {}
    union: dict[str, tuple[int, int, int]] = {}  # name -> (size, first, last)
    for config in dict.fromkeys(chosen):
        bufs, alias_map, skipped = config_buffers(graph, config, blocks)
        per_config[config], aliases[config] = tuple(bufs), alias_map
        peaks[config] = plan_graph(skipped, planner=planner, alignment=alignment).peak_bytes
        for b in bufs:
            size, first, last = union.get(b.name, (b.size, b.first_use, b.last_use))
            union[b.name] = (size, min(first, b.first_use), max(last, b.last_use))
    union_bufs = sorted((Buffer(n, s, f, e) for n, (s, f, e) in union.items()),
                        key=lambda b: (b.first_use, b.last_use))
    plan = get_planner(planner, alignment).plan(union_bufs)
    stable = _stable_aliases(aliases, set(plan.offsets))
    offsets = {**plan.offsets, **{a: plan.offsets[o] for a, o in stable.items()}}
    plan = MemoryPlan(offsets, plan.peak_bytes, plan.alignment, plan.buffers, stable,
                      plan.planner)
    return SkipMemoryPlan(check_plan(plan), peaks, per_config, aliases).check()


def config_peak(graph: Graph, config: SkipConfig, blocks: list[Block] | None = None,
                planner: str = "greedy", alignment: int = DEFAULT_ALIGNMENT) -> int:
    """The arena ``config`` needs on its own (``apply_skip(graph, config)`` planned alone):
    one plan, whatever the number of blocks (``peak_bytes_per_config`` without a union).

    Not validated (why: ``inspect`` calls this once per block, and validating the skipped
    graph was 3/4 of the time; a plan needs only the tensors' sizes and lifetimes). The
    skipped graph keeps the valid ``graph``'s nodes in order, and each replacement writes its
    block's output tensor from the block's input, which ``find_blocks`` requires to have the
    same shape and dtype, so the removal cannot make a size or a lifetime wrong;
    ``tests/test_skip_default.py`` compares the figure with the validated graph's plan."""
    return plan_graph(apply_skip(graph, config, blocks, validate=False), planner=planner,
                      alignment=alignment).peak_bytes


def _stable_aliases(aliases: Mapping[SkipConfig, Mapping[str, str]],
                    buffers: set[str]) -> dict[str, str]:
    """Reshape aliases that hold in every configuration where the tensor exists; a skipped
    block's output aliases its input only in some configurations (it has its own buffer in
    others), so it is left to ``offsets_for``."""
    stable: dict[str, str] = {}
    conflicting: set[str] = set(buffers)
    for m in aliases.values():
        for alias, owner in m.items():
            if stable.setdefault(alias, owner) != owner:
                conflicting.add(alias)
    return {a: o for a, o in stable.items() if a not in conflicting}
