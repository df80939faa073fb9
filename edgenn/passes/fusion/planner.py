"""Choose what to fuse: least latency within a RAM budget, or least RAM within a latency bound.

A candidate cuts every maximal chain into consecutive segments; segments of two or more
members are fused, single members stay ordinary layers. Its peak arena is the exact plan of
the fused graph (``edgenn.memory.plan_graph`` by default, or the caller's ``arena`` function,
e.g. the Cortex-M code generator's plan with kernel scratch); its latency is the sum of the
cost model's cycles over the graph's layers. All candidates are tried when there are at most
``MAX_CANDIDATES``; beyond that a coordinate descent over the chains (each chain's options
tried in turn, the others fixed, until nothing improves) is used.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from edgenn.errors import PlanError
from edgenn.ir import Graph
from edgenn.memory import plan_graph
from edgenn.passes.fusion.chains import Chain, find_chains
from edgenn.passes.fusion.cost import CostModel
from edgenn.passes.fusion.rewrite import apply_fusion

MAX_CANDIDATES = 4096
MAX_SPLIT_LENGTH = 10  # longer chains: whole, unfused, as pairs, or cut once (see segmentations)
MODES = ("none", "all", "auto")

Segmentation = tuple[Chain, ...]  # the fused segments of one maximal chain


@dataclass(frozen=True)
class FusionDecision:
    """The chosen chains, the graph with them fused, and its measured arena and latency."""

    mode: str
    variant: str
    chains: tuple[Chain, ...]
    graph: Graph
    arena_bytes: int
    cycles: float
    unfused_arena_bytes: int
    unfused_cycles: float
    candidates: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)

    def summary(self) -> dict[str, object]:
        return {
            "mode": self.mode, "variant": self.variant,
            "chains": [list(c.names) for c in self.chains],
            "arena_bytes": self.arena_bytes, "unfused_arena_bytes": self.unfused_arena_bytes,
            "estimated_cycles": self.cycles, "unfused_estimated_cycles": self.unfused_cycles,
            "candidates": self.candidates,
        }


def segmentations(chain: Chain) -> list[Segmentation]:
    """Every way to cut ``chain`` into consecutive segments (fused ones: 2+ members).

    A chain longer than ``MAX_SPLIT_LENGTH`` has too many: it is tried unfused, whole, as
    pairs, and cut once at every point (the part before the cut fused, the part after it
    fused or not). Why the single cuts: a network's peak is usually in its first,
    high-resolution stages, so fusing only the early part of a long chain is the plan that
    fits a small RAM budget (MobileNetV1's 27-member chain: its late members' windows cost
    more than the small maps they replace)."""
    n = len(chain)
    if n > MAX_SPLIT_LENGTH:
        pairs = tuple(chain.sub(i, i + 2) for i in range(0, n - 1, 2))
        result: list[Segmentation] = [(), (chain,), pairs]
        for cut in range(2, n - 1):
            result.append((chain.sub(0, cut),))
            if n - cut >= 2:
                result.append((chain.sub(0, cut), chain.sub(cut, n)))
        return result
    result = []
    for cuts in itertools.product((False, True), repeat=n - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [n]
        result.append(tuple(chain.sub(a, b) for a, b in itertools.pairwise(bounds) if b - a >= 2))
    return result


class _Evaluator:
    """Arena and latency of candidates, each fused graph planned once."""

    def __init__(self, graph: Graph, variant: str, cost: CostModel,
                 arena: Callable[[Graph], int]) -> None:
        self.graph, self.variant, self.cost, self.arena_fn = graph, variant, cost, arena
        self.cache: dict[tuple[tuple[str, ...], ...], tuple[int, float, Graph]] = {}
        self.base = sum(cost.node(graph, n) for n in graph.nodes)

    def __call__(self, chains: Sequence[Chain]) -> tuple[int, float, Graph]:
        key = tuple(sorted(c.names for c in chains))
        if key not in self.cache:
            fused = apply_fusion(self.graph, chains, self.variant)
            cycles = self.base + sum(
                self.cost.chain(self.graph, c, self.variant)
                - sum(self.cost.node(self.graph, m) for m in c.nodes) for c in chains)
            self.cache[key] = (self.arena_fn(fused), cycles, fused)
        return self.cache[key]


def _default_arena(graph: Graph) -> int:
    return plan_graph(graph).peak_bytes


def plan_fusion(graph: Graph, mode: str = "auto", ram_budget: int | None = None,
                latency_bound: float | None = None,
                cost: Mapping[object, float] | CostModel | None = None,
                variant: str = "ring_hoisted_pair",
                arena: Callable[[Graph], int] | None = None,
                splits: bool = True, residuals: bool = True) -> FusionDecision:
    """Decide which chains of ``graph`` to fuse.

    ``none``: nothing; ``all``: every maximal chain; ``auto``: the candidate with the least
    latency whose arena fits ``ram_budget`` (ties: smaller arena), or, when only
    ``latency_bound`` is given, the smallest arena within that many cycles (ties: faster).
    A budget or bound that no candidate meets raises PlanError naming both numbers.
    ``splits=False``: each chain is tried only unfused or whole (the two plans a caller has
    measured), not cut into segments. ``residuals=False``: chains stop before their residual
    Adds (a build that may skip residual blocks keeps the Adds its skips are found by).
    """
    if mode not in MODES:
        raise PlanError(f"graph {graph.name!r}: unknown fusion mode {mode!r}; "
                        f"choose one of {', '.join(MODES)}")
    evaluate = _Evaluator(graph, variant, CostModel.from_mapping(cost), arena or _default_arena)
    chains = find_chains(graph, residuals)
    base_arena, base_cycles, _ = evaluate(())
    if mode != "auto":
        chosen: Sequence[Chain] = chains if mode == "all" else ()
        arena_b, cycles, fused = evaluate(chosen)
        _check(graph, mode, arena_b, cycles, ram_budget, latency_bound)
        return FusionDecision(mode, variant, tuple(chosen), fused, arena_b, cycles,
                              base_arena, base_cycles)

    by_latency = ram_budget is not None or latency_bound is None

    def score(c: tuple[int, float, Graph]) -> tuple[bool, float, float]:
        arena_b, cycles, _ = c
        ok = (ram_budget is None or arena_b <= ram_budget) and (
            latency_bound is None or cycles <= latency_bound)
        return (not ok, cycles, arena_b) if by_latency else (not ok, arena_b, cycles)

    options = [segmentations(c) if splits else [(), (c,)] for c in chains]
    total = 1
    for opts in options:
        total *= len(opts)
    if total <= MAX_CANDIDATES:
        best = min((tuple(itertools.chain.from_iterable(pick)) for pick in
                    itertools.product(*options)), key=lambda cand: score(evaluate(cand)))
        tried = total
    else:
        best, tried = _descend(options, lambda cand: score(evaluate(cand)))
    arena_b, cycles, fused = evaluate(best)
    if score((arena_b, cycles, fused))[0]:
        _infeasible(graph, evaluate, ram_budget, latency_bound)
    return FusionDecision(mode, variant, tuple(best), fused, arena_b, cycles, base_arena,
                          base_cycles, tried)


def _descend(options: list[list[Segmentation]],
             score: Callable[[tuple[Chain, ...]], tuple[bool, float, float]],
             ) -> tuple[tuple[Chain, ...], int]:
    """Coordinate descent: from 'all fused', improve one chain's choice at a time."""
    # why the widest option, not a fixed index: segmentations() lists the whole chain first
    # and the unfused option first only for long chains; the whole chain (its residual Add
    # included) covers the most nodes in the fewest segments. From a start that does not fit
    # a budget, one chain's change at a time cannot fit it when the peak recurs in many
    # blocks (MobileNetV2's 14 like blocks): each changed alone leaves the others' peak
    pick = [max(opts, key=lambda o: (sum(len(c.names) for c in o), -len(o)))
            for opts in options]
    tried = 0

    def flat(p: list[Segmentation]) -> tuple[Chain, ...]:
        return tuple(itertools.chain.from_iterable(p))

    improved = True
    while improved:
        improved = False
        for i, opts in enumerate(options):
            for opt in opts:
                trial = [*pick[:i], opt, *pick[i + 1:]]
                tried += 1
                if score(flat(trial)) < score(flat(pick)):
                    pick, improved = trial, True
    return flat(pick), tried


def _check(graph: Graph, mode: str, arena_b: int, cycles: float, ram_budget: int | None,
           latency_bound: float | None) -> None:
    if ram_budget is not None and arena_b > ram_budget:
        raise PlanError(f"graph {graph.name!r}: with --fuse {mode} the arena needs {arena_b} "
                        f"bytes, over the RAM budget of {ram_budget} bytes")
    if latency_bound is not None and cycles > latency_bound:
        raise PlanError(f"graph {graph.name!r}: with --fuse {mode} the estimated latency is "
                        f"{cycles:.0f} cycles, over the bound of {latency_bound:.0f}")


def _infeasible(graph: Graph, evaluate: _Evaluator, ram_budget: int | None,
                latency_bound: float | None) -> None:
    arenas = [a for a, _, _ in evaluate.cache.values()]
    cycles = [c for _, c, _ in evaluate.cache.values()]
    if ram_budget is not None and min(arenas) > ram_budget:
        raise PlanError(f"graph {graph.name!r}: no fusion plan fits the RAM budget of "
                        f"{ram_budget} bytes; the smallest arena is {min(arenas)} bytes")
    if latency_bound is not None and min(cycles) > latency_bound:
        raise PlanError(f"graph {graph.name!r}: no fusion plan meets the latency bound of "
                        f"{latency_bound:.0f} cycles; the fastest takes {min(cycles):.0f}")
    raise PlanError(f"graph {graph.name!r}: no fusion plan fits both the RAM budget of "
                    f"{ram_budget} bytes and the latency bound of {latency_bound:.0f} cycles "
                    f"(smallest arena {min(arenas)} bytes, fastest {min(cycles):.0f} cycles)")
