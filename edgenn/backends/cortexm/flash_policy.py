"""Which layers get compact generated code: measured, under a flash budget.

Weights are int8 in flash in every kernel (the DSP kernels widen them in registers, SXTB16),
so what a build spends flash on beyond the parameters is generated code. It has two forms
(``codesize.py``): *fast* (loops unrolled for the layer's shape) and *compact* (shared
functions taking the shape as arguments). Which form each layer gets is measured, not guessed:

1. build with fast code everywhere and read its flash (the ELF); a build that fits the budget
   (default: the model's int8 parameter bytes + 48 KiB) is the answer, and is not emulated;
2. else build with compact code everywhere; if even that does not fit, it is the answer (the
   final build then reports the overflow);
3. else compact only as many layers as the build needs to fit, those where compact code costs
   the fewest cycles first (:func:`compact_prefix`: per-layer cycles of builds 1 and 2, then
   a bisection over builds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from edgenn.backends.cortexm.kernel import KernelCall
from edgenn.ir import Graph

DEFAULT_HEADROOM_BYTES = 48 * 1024  # flash beyond the int8 parameters, by default


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


def constant_bytes(call: KernelCall) -> int:
    """Bytes of a kernel call's constant arrays (weights, records) in flash."""
    return sum(int(a.values.nbytes) for a in call.arrays)


class LazyCycles(Sequence[int]):
    """Per-layer cycles measured only when first read: the policy needs a build's flash
    always but its cycles only when it compacts part of the model, and an emulated inference
    of a large model costs far more than its build."""

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
    """One candidate build: its flash and per-layer cycles."""

    flash_bytes: int
    layer_cycles: Sequence[int]


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


def plan_code_size(graph: Graph, measure: Callable[[frozenset[int]], Measured],
                   budget_bytes: int | None, compact: bool | None = None) -> frozenset[int]:
    """The layers whose code is generated compact (``measure`` builds and benches a choice of
    compact layers). ``compact`` True / False forces the form of every layer and measures
    nothing; None lets the budget decide (default: :func:`default_budget_bytes`)."""
    everyone = frozenset(range(len(graph.nodes)))
    if compact is not None:
        return everyone if compact else frozenset()
    budget = default_budget_bytes(graph) if budget_bytes is None else budget_bytes
    base = measure(frozenset())
    if base.flash_bytes <= budget:
        return frozenset()
    compacted = measure(everyone)
    if compacted.flash_bytes > budget or len(everyone) < 2:
        return everyone
    return compact_prefix(base, compacted, budget, measure)
