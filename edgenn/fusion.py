"""Layer fusion as users ask for it: ``--fuse none|all|auto``, a variant, a RAM budget.

The variants (``--fusion-variant``), slowest address arithmetic first:

- ``layer_by_layer``: no fusion, every layer writes its whole output map;
- ``ring_modulo``: fused chain, each tap's ring address computed per pixel with a modulo;
- ``ring_hoisted``: fused chain, the ring's row addresses hoisted out of the pixel loop;
- ``ring_hoisted_pair`` (default): ``ring_hoisted`` + two adjacent output pixels per step,
  each weight pair loaded once for two SMLAD dual multiply-accumulates.

Hyphenated spellings (``ring-hoisted-pair``) are accepted.

The mechanics live in ``edgenn.passes.fusion`` (chains, rings, planner); this module turns the
CLI / API options into a fused graph for a target. For a Cortex-M target, ``auto`` measures:
it builds the layer-by-layer firmware and the all-fused one once each, and gives the planner
the emulated cycles of every layer and of every fused chain; the arena of each candidate is the
firmware's own (tensors plus kernel scratch, rings included).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from edgenn.backends.options import option
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.passes.fusion import VARIANTS as RING_VARIANTS
from edgenn.passes.fusion import FusionDecision, find_chains, plan_fusion
from edgenn.passes.fusion.planner import MODES as FUSE_MODES

LAYER_BY_LAYER = "layer_by_layer"
# every --fusion-variant: layer by layer, then the fused-chain kernels of passes.fusion
FUSION_VARIANTS = (LAYER_BY_LAYER, *RING_VARIANTS)
BEST_VARIANT = "ring_hoisted_pair"

__all__ = ["BEST_VARIANT", "FUSE_MODES", "FUSION_VARIANTS", "LAYER_BY_LAYER",
           "FusionOptions", "fuse_for_target", "fusion_options", "fusion_variant_name",
           "measured_costs"]


def fusion_variant_name(name: str) -> str:
    """The canonical spelling of a variant name (``ring-hoisted-pair`` -> ``ring_hoisted_pair``);
    an unknown name comes back normalised for the caller to reject."""
    return name.strip().lower().replace("-", "_")


@dataclass(frozen=True)
class FusionOptions:
    """Layer fusion as every compiling command takes it (``compile_model``'s ``fuse``,
    ``fusion_variant``, ``ram_budget``, ``latency_bound``; None: no fusion)."""

    fuse: str | None = option(
        "--fuse", choices=FUSE_MODES,
        help="fuse Conv2D chains through rolling row buffers (default: none, or all when a "
             "ring_* --fusion-variant is given)")
    fusion_variant: str | None = option(
        "--fusion-variant", type=fusion_variant_name, choices=FUSION_VARIANTS, metavar="VARIANT",
        help="layer_by_layer (no fusion); ring_modulo (fused, per-pixel modulo into the ring); "
             "ring_hoisted (fused, row addresses hoisted per output row); ring_hoisted_pair "
             "(ring_hoisted + two output pixels per step with SMLAD; the default)")
    ram_budget: int | None = option(
        "--ram-budget", type=int,
        help="with --fuse auto: the fastest plan whose arena fits this many bytes")
    latency_bound: float | None = option(
        "--latency-bound", type=float,
        help="with --fuse auto and no budget: the smallest arena within N cycles")


def fuse_for_target(graph: Graph, target: str = "ref", fuse: str = "none",
                    variant: str = BEST_VARIANT, ram_budget: int | None = None,
                    latency_bound: float | None = None) -> FusionDecision:
    """Decide and apply fusion; ``decision.graph`` is what to compile."""
    if fuse not in FUSE_MODES:
        raise EdgennError(f"unknown --fuse {fuse!r} ({', '.join(FUSE_MODES)})")
    ring_variant = fusion_variant_name(variant)
    if ring_variant not in FUSION_VARIANTS:
        raise EdgennError(f"unknown --fusion-variant {variant!r} ({', '.join(FUSION_VARIANTS)})")
    if ring_variant == LAYER_BY_LAYER:  # whatever --fuse says
        fuse, ring_variant = "none", BEST_VARIANT
    arena = None
    cost: dict[object, float] | None = None
    if target != "ref":
        from edgenn.backends.cortexm.codegen.memory import firmware_arena_bytes
        from edgenn.backends.cortexm.targets import get_core

        core = get_core(target)

        def arena(g: Graph) -> int:
            return firmware_arena_bytes(g, core)

        if fuse == "auto" and find_chains(graph) and core.cycle_model:
            cost = measured_costs(graph, target, ring_variant)
    return plan_fusion(graph, fuse, ram_budget=ram_budget, latency_bound=latency_bound,
                       cost=cost, variant=ring_variant, arena=arena)


MAX_MEASURED_SUBCHAINS = 24  # beyond this, the rest of the sub-chains are estimated


def measured_costs(graph: Graph, target: str, ring_variant: str) -> dict[object, float]:
    """Emulated cycles of each unfused layer and of each candidate fused (sub-)chain.

    Every segment the planner may choose is measured on its own build, so the planner never
    compares a measured figure with an analytic one for the same decision.
    """
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.evaluate import bench_input
    from edgenn.passes.fusion import apply_fusion, segmentations

    x = bench_input(graph)
    cost: dict[object, float] = {}
    for layer in compile_cortexm(graph, core=target).bench(x).layers:
        cost[layer.name] = float(layer.cycles or 0)
    candidates = {seg.names: seg for chain in find_chains(graph)
                  for split in segmentations(chain) for seg in split}
    for names, chain in list(candidates.items())[:MAX_MEASURED_SUBCHAINS]:
        fused = apply_fusion(graph, [chain], ring_variant)
        node = next(n for n in fused.nodes if n.op == "FusedConvChain")
        layers = compile_cortexm(fused, core=target).bench(x).layers
        cost[names] = float(next(layer.cycles or 0 for layer in layers if layer.name == node.name))
    return cost


def fusion_options(options: dict[str, Any]) -> dict[str, Any]:
    """Split fusion keywords out of compile options (the rest go to the backend)."""
    keys = [f.name for f in fields(FusionOptions)]
    return {k: options.pop(k) for k in keys if k in options}
