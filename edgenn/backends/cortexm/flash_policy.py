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
   builds of prefixes of that order: first the one the per-layer flash of builds 1 and 2
   predicts, then its neighbour unless the prediction corrected by what the first build
   measured settles it, then a bisection over what is left, if anything). With a folder to
   build in, the first prefix is built there with the final settings: when it is the answer
   (VWW), it is the result, and no build is made again.
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


class LazySequence(Sequence[int]):
    """Per-layer figures measured only when first read: the policy needs a build's flash
    always but its per-layer cycles (an emulated inference, which for a large model costs
    far more than its build) and flash only when it compacts part of the model."""

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
    """One candidate build: its flash, per-layer cycles and per-layer flash (the layer's own
    symbols, ``emulator.flashmap``; empty when unknown)."""

    flash_bytes: int
    layer_cycles: Sequence[int]
    layer_flash: Sequence[int] = ()


def predicted_flash(base: Measured, compacted: Measured,
                    order: Sequence[int]) -> list[int] | None:
    """The flash each prefix of ``order`` (0 to n layers compact) is predicted to take: each
    layer's own bytes from the fast or the compact build, plus the compact build's bytes no
    layer owns (shared kernels, runtime). None when the per-layer flash is unknown."""
    n = len(order)
    if len(base.layer_flash) != n or len(compacted.layer_flash) != n:
        return None
    flash = compacted.flash_bytes - sum(compacted.layer_flash) + sum(base.layer_flash)
    out = [flash]
    for i in order:
        flash += compacted.layer_flash[i] - base.layer_flash[i]
        out.append(flash)
    return out


def predicted_prefix(base: Measured, compacted: Measured, order: Sequence[int],
                     budget: int) -> int | None:
    """The shortest prefix of ``order`` whose build the per-layer flash predicts to fit
    (:func:`predicted_flash`; at least 1, at most n). None when the per-layer flash is
    unknown."""
    flash = predicted_flash(base, compacted, order)
    if flash is None:
        return None
    n = len(order)
    return next((k for k in range(1, n) if flash[k] <= budget), n)


# why a margin: a mixed build's bytes no layer owns differ from the compact build's (gcc
# shares and inlines helpers differently), so a prediction is off by an offset that a
# measured prefix shows (VWW: -1,102 B at 30 of 31 layers, -1,146 B at 29); the neighbour is
# taken as measured only when its corrected prediction clears the budget by more than that
# offset again plus this margin
CALIBRATED_MARGIN_BYTES = 1024


def settled_by_prediction(predicted: int, offset: int, budget: int) -> bool:
    """Whether a prefix predicted at ``predicted`` bytes surely does not fit, given a measured
    neighbour's prediction ``offset`` (actual - predicted)."""
    return predicted + offset > budget + abs(offset) + CALIBRATED_MARGIN_BYTES


Prefetch = Callable[[Sequence[frozenset[int]]], None]
"""Builds the given choices of compact layers at once, ahead of their ``measure`` calls (a
speed-up only: ``measure`` returns the same figures with or without it)."""


def compact_prefix(base: Measured, compacted: Measured, budget: int,
                   measure_prefix: Callable[[frozenset[int]], Measured],
                   prefetch: Prefetch | None = None) -> frozenset[int]:
    """The fewest layers to compact, cheapest in cycles first, for the build to fit ``budget``.

    ``base`` is the all-fast build, ``compacted`` the all-compact one (which fits). Layers are
    ordered by the cycles compact code costs them (measured, per layer); the shortest prefix of
    that order whose build fits is found by builds (``measure_prefix``), since a layer's share
    of flash is not fully visible per layer (gcc inlines and shares code): the predicted
    prefix (:func:`predicted_prefix`) first, then its neighbour, which settle it when the
    prediction is right, then a bisection of the rest. The neighbour is not built when the
    prediction, corrected by the offset the guess's build measured, puts it over the budget
    by a clear margin (:func:`settled_by_prediction`). ``prefetch``: the predicted prefix and
    its shorter neighbour (both built when the prediction is right) are built at once, unless
    the neighbour is predicted far over the budget.
    """
    n = len(base.layer_cycles)
    order = sorted(range(n), key=lambda i: (compacted.layer_cycles[i] - base.layer_cycles[i], i))
    lo, hi = 0, n  # invariant: prefix hi fits (the all-compact build), prefix lo does not

    def fits(k: int) -> bool:
        return measure_prefix(frozenset(order[:k])).flash_bytes <= budget

    predicted = predicted_flash(base, compacted, order)
    guess = predicted_prefix(base, compacted, order, budget)
    if guess is not None and hi - lo > 1:
        # why clamp: a prediction of "every layer" (the per-layer flash under-counts what
        # compact code saves, e.g. shared helpers) usually means "all but a few": the prefix
        # one short of it and its neighbour are then the first builds, not a bisection from
        # the middle
        guess = min(max(guess, lo + 1), hi - 1)
    if predicted is not None and guess is not None and lo < guess < hi:
        # why no prefetch of a far neighbour: its prediction is over the budget by more than
        # predictions err, so the calibrated prediction usually settles it without a build
        far = guess - 1 > lo and predicted[guess - 1] > budget + 2 * CALIBRATED_MARGIN_BYTES
        if prefetch is not None and guess - 1 > lo and not far:
            # why both: when the guess fits (the usual case) its neighbour is measured next;
            # the two builds (one model C compile each, one core each) run side by side
            prefetch([frozenset(order[:guess]), frozenset(order[:guess - 1])])
        measured = measure_prefix(frozenset(order[:guess]))
        # the guess's measured flash calibrates the prediction of its neighbours: the one
        # on the side the guess settles is built only when its corrected prediction does
        # not settle it (usually one build in all, VWW)
        offset = measured.flash_bytes - predicted[guess]
        if measured.flash_bytes <= budget:
            hi = guess
            if hi - 1 > lo:
                if settled_by_prediction(predicted[hi - 1], offset, budget):
                    lo = hi - 1
                else:
                    hi, lo = (hi - 1, lo) if fits(hi - 1) else (hi, hi - 1)
        else:
            lo = guess
            if lo + 1 < hi:
                hi, lo = (lo + 1, lo) if fits(lo + 1) else (hi, lo + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return frozenset(order[:hi])


def plan_code_size(graph: Graph, measure: Callable[[frozenset[int]], Measured],
                   budget_bytes: int | None, compact: bool | None = None,
                   fast: Measured | None = None,
                   prefetch: Prefetch | None = None) -> frozenset[int]:
    """The layers whose code is generated compact (``measure`` builds and benches a choice of
    compact layers; ``fast``: the all-fast build when already measured; ``prefetch``: see
    :func:`compact_prefix`). ``compact`` True /
    False forces the form of every layer and measures nothing; None lets the budget decide
    (default: :func:`default_budget_bytes`)."""
    everyone = frozenset(range(len(graph.nodes)))
    if compact is not None:
        return everyone if compact else frozenset()
    budget = default_budget_bytes(graph) if budget_bytes is None else budget_bytes
    base = measure(frozenset()) if fast is None else fast
    if base.flash_bytes <= budget:
        return frozenset()
    compacted = measure(everyone)
    if compacted.flash_bytes > budget or len(everyone) < 2:
        return everyone
    return compact_prefix(base, compacted, budget, measure, prefetch)
