"""Which layers may store their weights pre-widened to int16: measured, under a flash budget.

Weights stay int8 in flash by default; the DSP kernels widen them in registers (SXTB16). A few
older kernels keep a copy of the weights pre-widened to int16 instead, which costs about the
layer's int8 weight bytes again in flash and saves some cycles on some shapes (and loses on
others). Whether it pays is measured, not guessed:

1. build with int8 weights everywhere and bench one inference (per-layer cycles, ELF flash);
   if that exceeds the budget, build again with compact generated code (``codesize.py``:
   loops instead of unrolled blocks) and compact only as many layers as needed to fit,
   those where compact code costs the fewest cycles first (:func:`compact_prefix`);
2. if some layer has a widened kernel, build with every such layer widened and bench again;
3. grant the widened kernel to the layers that measured faster, best cycles saved per extra
   flash byte first, while the measured flash of step 1 plus the extra bytes stays within the
   budget (default: the model's int8 parameter bytes + 48 KiB);
4. build the final choice (reusing step 1 or 2 when the choice is all or nothing).

Step 2's extra bytes per layer are exact: the difference of the layers' constant arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from edgenn.backends.cortexm.kernel import KernelCall
from edgenn.backends.cortexm.selection import widened_kernel
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph

DEFAULT_HEADROOM_BYTES = 48 * 1024  # flash beyond the int8 parameters, by default
WIDEN_MODES = ("auto", "none", "all")


def int8_parameter_bytes(graph: Graph) -> int:
    """Bytes of every constant tensor the graph's nodes read (int8 weights, int32 biases)."""
    seen: set[str] = set()
    total = 0
    for node in graph.nodes:
        for name in node.inputs:
            if name and name not in seen and graph.tensor(name).is_const:
                seen.add(name)
                total += graph.tensor(name).nbytes
    return total


def default_budget_bytes(graph: Graph) -> int:
    return int8_parameter_bytes(graph) + DEFAULT_HEADROOM_BYTES


def widen_candidates(graph: Graph, core: Core) -> list[int]:
    """Indices of the layers for which a kernel with pre-widened weights matches."""
    return [i for i, n in enumerate(graph.nodes) if widened_kernel(n, graph, core) is not None]


def constant_bytes(call: KernelCall) -> int:
    return sum(int(a.values.nbytes) for a in call.arrays)


class LazyCycles(Sequence[int]):
    """Per-layer cycles measured only when first read: the policy needs a build's flash
    always but its cycles only when it compacts or widens, and an emulated inference of a
    large model costs far more than its build."""

    def __init__(self, measure: Callable[[], Sequence[int]]) -> None:
        self._measure = measure
        self._values: Sequence[int] | None = None

    def _get(self) -> Sequence[int]:
        if self._values is None:
            self._values = self._measure()
        return self._values

    def __getitem__(self, index: Any) -> Any:
        return self._get()[index]

    def __len__(self) -> int:
        return len(self._get())


@dataclass(frozen=True)
class Measured:
    """One candidate build: its flash, per-layer cycles and per-layer constant bytes."""

    flash_bytes: int
    layer_cycles: Sequence[int]
    layer_const_bytes: Sequence[int]


def choose_widened(base: Measured, wide: Measured, candidates: Sequence[int],
                   budget_bytes: int) -> frozenset[int]:
    """The candidate layers to widen: measured faster, within the budget, best ratio first."""
    options = []
    for i in candidates:
        saved = base.layer_cycles[i] - wide.layer_cycles[i]
        extra = max(0, wide.layer_const_bytes[i] - base.layer_const_bytes[i])
        if saved > 0:
            options.append((saved / max(1, extra), i, extra))
    room = budget_bytes - base.flash_bytes
    chosen: set[int] = set()
    for _, i, extra in sorted(options, reverse=True):
        if extra <= room:
            chosen.add(i)
            room -= extra
    return frozenset(chosen)


@dataclass(frozen=True)
class FlashPlan:
    """The outcome: layers granted widened weights, layers whose code is generated compact."""

    widened: frozenset[int] = frozenset()
    compact: frozenset[int] = frozenset()


def compact_prefix(base: Measured, compacted: Measured, budget: int,
                   measure_prefix: Callable[[frozenset[int]], Measured]) -> frozenset[int]:
    """The fewest layers to compact, cheapest in cycles first, for the build to fit ``budget``.

    ``base`` is the all-fast build, ``compacted`` the all-compact one (which fits). Layers are
    ordered by the cycles compact code costs them (measured, per layer); the shortest prefix of
    that order whose build fits is found by bisection over builds (``measure_prefix``), since
    a layer's share of flash is not fully visible per layer (gcc inlines and shares code).
    """
    n = len(base.layer_cycles)
    order = sorted(range(n), key=lambda i: (compacted.layer_cycles[i] - base.layer_cycles[i], i))
    lo, hi = 0, n  # invariant: prefix hi fits (the all-compact build), prefix lo does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if measure_prefix(frozenset(order[:mid])).flash_bytes <= budget:
            hi = mid
        else:
            lo = mid
    return frozenset(order[:hi])


def plan_widening(graph: Graph, core: Core,
                  measure: Callable[[frozenset[int], frozenset[int]], Measured],
                  budget_bytes: int | None, mode: str = "auto",
                  compact: bool | None = None) -> FlashPlan:
    """Which layers get widened weights and which get compact code (``measure`` builds and
    benches a choice: widened layers, compact layers). ``compact`` True / False forces the
    code form of every layer; None lets the budget decide in ``auto`` mode (the other modes
    generate fast code)."""
    if mode not in WIDEN_MODES:
        raise ValueError(f"widen mode {mode!r}: expected one of {', '.join(WIDEN_MODES)}")
    everyone = frozenset(range(len(graph.nodes)))
    forced = everyone if compact else frozenset()
    candidates = widen_candidates(graph, core)
    if mode == "none":
        return FlashPlan(compact=forced)
    if mode == "all":
        return FlashPlan(frozenset(candidates), forced)
    budget = default_budget_bytes(graph) if budget_bytes is None else budget_bytes
    compact_layers = forced
    base = measure(frozenset(), compact_layers)
    if compact is None and base.flash_bytes > budget:
        compacted = measure(frozenset(), everyone)
        if compacted.flash_bytes > budget or len(everyone) < 2:
            compact_layers, base = everyone, compacted
        else:
            compact_layers = compact_prefix(
                base, compacted, budget, lambda layers: measure(frozenset(), layers))
            base = measure(frozenset(), compact_layers)
    if not candidates or base.flash_bytes >= budget:
        return FlashPlan(frozenset(), compact_layers)
    wide = measure(frozenset(candidates), compact_layers)
    return FlashPlan(choose_widened(base, wide, candidates, budget), compact_layers)
