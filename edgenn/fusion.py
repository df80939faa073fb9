"""Layer fusion as users ask for it: ``--fuse none|all|auto``, a variant, a RAM budget.

The variants (``--fusion-variant``), slowest address arithmetic first:

- ``layer_by_layer``: no fusion, every layer writes its whole output map;
- ``ring_modulo``: fused chain, each tap's ring address computed per pixel with a modulo;
- ``ring_hoisted``: fused chain, the ring's row addresses hoisted out of the pixel loop;
- ``ring_hoisted_pair`` (default): ``ring_hoisted`` + two adjacent output pixels per step,
  each weight pair loaded once for two SMLAD dual multiply-accumulates.

Hyphenated spellings (``ring-hoisted-pair``) are accepted.

The mechanics live in ``edgenn.passes.fusion`` (chains, rings, planner); this module turns the
CLI / API options into a fused graph for a target. For a Cortex-M core with the cycle model,
``auto`` measures (``edgenn.backends.cortexm.fusion_auto``): it builds the layer-by-layer
firmware and the all-fused one once each, and gives the planner the emulated cycles of every
layer and of every fused chain; the arena of each candidate is the firmware's own (tensors
plus kernel scratch, windows included). ``auto`` is the command line's default there.
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
           "FusionOptions", "checked_variant", "fuse_for_target", "fusion_options",
           "fusion_variant_name"]


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
        help="fuse Conv2D chains through rolling row buffers: none, all, or auto (measure "
             "both, fuse a chain where it is no slower or a budget asks; default: auto on a "
             "Cortex-M core with the cycle model, else none; all when a ring_* "
             "--fusion-variant is given)")
    fusion_variant: str | None = option(
        "--fusion-variant", type=fusion_variant_name, choices=FUSION_VARIANTS, metavar="VARIANT",
        help="layer_by_layer (no fusion); ring_modulo (fused, per-pixel modulo into the ring); "
             "ring_hoisted (fused, row addresses hoisted per output row); ring_hoisted_pair "
             "(ring_hoisted + two output pixels per step with SMLAD; the default)")
    ram_budget: int | None = option(
        "--ram-budget", type=int,
        help="with --fuse auto: the fastest plan whose arena fits this many bytes (a budget "
             "no plan fits: an error naming the smallest arena)")
    latency_bound: float | None = option(
        "--latency-bound", type=float,
        help="with --fuse auto and no budget: the smallest arena within N cycles")


def checked_variant(variant: str) -> str:
    """The canonical name of a ``--fusion-variant``; EdgennError for an unknown one."""
    name = fusion_variant_name(variant)
    if name not in FUSION_VARIANTS:
        raise EdgennError(f"unknown --fusion-variant {variant!r} ({', '.join(FUSION_VARIANTS)})")
    return name


def fuse_for_target(graph: Graph, target: str = "ref", fuse: str = "none",
                    variant: str = BEST_VARIANT, ram_budget: int | None = None,
                    latency_bound: float | None = None, residuals: bool = True,
                    input_buffer: str = "arena") -> FusionDecision:
    """Decide and apply fusion; ``decision.graph`` is what to compile.

    ``auto`` on a Cortex-M core with the cycle model measures (``backends.cortexm.fusion_auto``:
    the layer-by-layer and the all-fused firmware, built and emulated once each); elsewhere
    the planner ranks candidates with its analytic cost model. ``residuals=False``: chains
    stop before residual Adds (a build with skip support finds its blocks by them).
    ``input_buffer``: the firmware's (``"caller"``: the inputs are not in the arena)."""
    if fuse not in FUSE_MODES:
        raise EdgennError(f"unknown --fuse {fuse!r} ({', '.join(FUSE_MODES)})")
    ring_variant = checked_variant(variant)
    if ring_variant == LAYER_BY_LAYER:  # whatever --fuse says
        fuse, ring_variant = "none", BEST_VARIANT
    arena = None
    if target != "ref":
        from edgenn.backends.cortexm.codegen.memory import firmware_arena_bytes
        from edgenn.backends.cortexm.targets import get_core

        core = get_core(target)

        def arena(g: Graph) -> int:
            return firmware_arena_bytes(g, core, input_buffer=input_buffer)

        if fuse == "auto" and find_chains(graph, residuals) and core.cycle_model:
            from edgenn.backends.cortexm.fusion_auto import AutoFusionReport, compile_auto

            report: AutoFusionReport = compile_auto(target, graph, ring_variant, ram_budget,
                                                    latency_bound, residuals,
                                                    input_buffer=input_buffer).fusion_report
            return report.decision
    return plan_fusion(graph, fuse, ram_budget=ram_budget, latency_bound=latency_bound,
                       variant=ring_variant, arena=arena, residuals=residuals)


def fusion_options(options: dict[str, Any]) -> dict[str, Any]:
    """Split fusion keywords out of compile options (the rest go to the backend)."""
    keys = [f.name for f in fields(FusionOptions)]
    return {k: options.pop(k) for k in keys if k in options}
