"""The search space of one layer: kernel (algorithm x micro-kernel) x thread schedule.

A *point* is a flat ``{name: value}`` dict, the way optuna sees a trial's parameters:

- ``algorithm``: convolution method (``winograd``, ``im2col``, ``direct``, ...);
- ``variant[<algorithm>]``: the kernel config within that algorithm (micro-kernel, blocking),
  present only when the algorithm has more than one;
- ``clusters``: ``default`` (the ACL-like rule: as many threads as the smallest cluster has
  cores, equal split, no pinning; ``threads[default]`` says how many) or the clusters used,
  e.g. ``0``, ``1``, ``0+1``;
- ``threads[<c>]``: threads pinned to cluster ``c`` (1 .. its cores, all clusters together at
  most ``max_threads``);
- ``share[<subset>]`` (two clusters): the first cluster's part of the work in steps of
  ``share_step`` (an int: 11 means 11 x 0.05 = 55%); ``shares[<subset>]`` (three or more): the
  parts as ``"6/6/8"`` steps.

Every parameter except the first two is conditional: it exists only when its parent chose it,
which is how TPE sees the tree (optuna's define-by-run). :meth:`LayerSpace.points` enumerates
the same points in grid order; :meth:`LayerSpace.suggest` draws one through an optuna trial.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

Point = dict[str, Any]
K = TypeVar("K")

DEFAULT = "default"
MODES = ("all", "kernel", "schedule")


class Suggester(Protocol):
    """What :meth:`LayerSpace.suggest` needs of an optuna ``Trial``."""

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any: ...

    def suggest_int(self, name: str, low: int, high: int) -> int: ...


@dataclass(frozen=True)
class ScheduleChoice:
    """A schedule decision: ``work`` = ((cluster, threads, share), ...) pinned; empty ``work``
    is the rule-based default with ``default_threads`` unpinned threads."""

    work: tuple[tuple[int, int, float], ...] = ()
    default_threads: int = 0

    @property
    def is_default(self) -> bool:
        return not self.work

    @property
    def threads(self) -> int:
        return sum(t for _, t, _ in self.work) if self.work else self.default_threads

    @property
    def label(self) -> str:
        if not self.work:
            return f"{DEFAULT} ({self.default_threads}t unpinned)"
        return "+".join(f"c{c}:{t}t@{share:.0%}" for c, t, share in self.work)


def point_key(point: Point) -> str:
    """Canonical text of a point: equal points, equal keys (the dedupe identity)."""
    return json.dumps(point, sort_keys=True, separators=(",", ":"))


def kernel_label(config: Any) -> str:
    """A short, stable name for a kernel config: algorithm, micro-kernel and the other field
    values that differ from their defaults (``im2col/8x12``, ``im2col/8x12/channels``)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        parts = []
        for f in dataclasses.fields(config):
            value = getattr(config, f.name)
            always = f.name in ("algorithm", "microkernel")
            if value is None or value is False or value == () or (
                    value == f.default and not always):
                continue
            value = getattr(value, "value", value)  # enums by value
            parts.append("x".join(map(str, value)) if isinstance(value, tuple) else str(value))
        return "/".join(parts) or "default"
    label = getattr(config, "label", None)
    return label if isinstance(label, str) else str(config)


class LayerSpace(Generic[K]):
    """All kernel x schedule choices for one layer on one target.

    ``kernels``: the applicable kernel configs (each with an ``algorithm`` attribute);
    ``cluster_cores``: cores per cluster of the target (index = cluster id);
    ``default_kernel``: the rule-based choice (measured first; the baseline);
    ``default_threads``: threads of the default schedule (ACL: the smallest cluster's cores);
    ``mode``: ``all``, ``kernel`` (schedule fixed to the default) or ``schedule`` (kernel fixed
    to the default): the Kernel-only and Schedule-only rows of Cha, Kwon and
    Lee (2023).
    """

    def __init__(self, kernels: Sequence[K], cluster_cores: Sequence[int], *,
                 default_kernel: K | None = None, default_threads: int | None = None,
                 max_threads: int | None = None, share_step: float = 0.05,
                 mode: str = "all") -> None:
        if not kernels:
            raise ValueError("a layer space needs at least one kernel config")
        if mode not in MODES:
            raise ValueError(f"unknown space mode {mode!r} (choose from {', '.join(MODES)})")
        units = round(1 / share_step)
        if units < 2 or abs(units * share_step - 1) > 1e-9:
            raise ValueError(f"share step {share_step} must divide 1 into at least 2 parts")
        self.default_kernel = default_kernel if default_kernel is not None else kernels[0]
        ordered = [self.default_kernel]
        for k in kernels:  # equal configs are one point
            if k not in ordered:
                ordered.append(k)
        if mode == "schedule":
            ordered = ordered[:1]
        self.kernels: dict[str, K] = {}
        for config in ordered:
            label = kernel_label(config)
            if label in self.kernels:
                raise ValueError(f"two kernel configs share the label {label!r}")
            self.kernels[label] = config
        self.algorithms: dict[str, list[str]] = {}
        for label, config in self.kernels.items():
            self.algorithms.setdefault(str(getattr(config, "algorithm", label)), []).append(label)
        self._algorithm_of = {lb: a for a, labels in self.algorithms.items() for lb in labels}
        self.cluster_cores = tuple(int(n) for n in cluster_cores)
        self.max_threads = min(max_threads or sum(self.cluster_cores), sum(self.cluster_cores))
        self.default_threads = default_threads or min(self.cluster_cores)
        self.units = units
        self.mode = mode
        self.subsets: list[tuple[int, ...]] = [] if mode == "kernel" else [
            s for r in range(1, len(self.cluster_cores) + 1)
            for s in itertools.combinations(range(len(self.cluster_cores)), r)
            if r <= self.max_threads]
        self._points: list[Point] | None = None

    # -- labels ---------------------------------------------------------------------------
    @staticmethod
    def subset_label(subset: Sequence[int]) -> str:
        return "+".join(map(str, subset))

    @property
    def cluster_choices(self) -> list[str]:
        return [DEFAULT, *(self.subset_label(s) for s in self.subsets)]

    @property
    def default_point(self) -> Point:
        """The rule-based baseline: default kernel, default schedule."""
        return self.point(kernel_label(self.default_kernel), self.default_schedule)

    @property
    def default_schedule(self) -> ScheduleChoice:
        return ScheduleChoice((), self.default_threads)

    # -- points <-> decisions -------------------------------------------------------------
    def point(self, kernel: str, schedule: ScheduleChoice) -> Point:
        algorithm = self._algorithm_of[kernel]
        p: Point = {"algorithm": algorithm}
        if len(self.algorithms[algorithm]) > 1:
            p[f"variant[{algorithm}]"] = kernel
        if schedule.is_default:
            p["clusters"] = DEFAULT
            p["threads[default]"] = schedule.default_threads
            return p
        subset = tuple(c for c, _, _ in schedule.work)
        label = self.subset_label(subset)
        p["clusters"] = label
        for c, threads, _ in schedule.work:
            p[f"threads[{c}]"] = threads
        steps = [round(share * self.units) for _, _, share in schedule.work]
        if len(subset) == 2:
            p[f"share[{label}]"] = steps[0]
        elif len(subset) > 2:
            p[f"shares[{label}]"] = "/".join(map(str, steps))
        return p

    def decode(self, point: Point) -> tuple[K, ScheduleChoice]:
        """The kernel config and schedule of a point (``KeyError`` if not of this space)."""
        algorithm = point["algorithm"]
        labels = self.algorithms[algorithm]
        kernel = point[f"variant[{algorithm}]"] if len(labels) > 1 else labels[0]
        if kernel not in labels:
            raise KeyError(kernel)
        if point["clusters"] == DEFAULT:
            return self.kernels[kernel], ScheduleChoice((), int(point["threads[default]"]))
        subset = tuple(int(c) for c in str(point["clusters"]).split("+"))
        label = self.subset_label(subset)
        if len(subset) == 1:
            steps = [self.units]
        elif len(subset) == 2:
            steps = [int(point[f"share[{label}]"])]
            steps.append(self.units - steps[0])
        else:
            steps = [int(s) for s in str(point[f"shares[{label}]"]).split("/")]
        work = tuple((c, int(point[f"threads[{c}]"]), s / self.units)
                     for c, s in zip(subset, steps, strict=True))
        return self.kernels[kernel], ScheduleChoice(work)

    def contains(self, point: Point) -> bool:
        try:
            kernel, schedule = self.decode(point)
        except (KeyError, ValueError, TypeError):
            return False
        return point_key(self.point(kernel_label(kernel), schedule)) == point_key(point) and \
            self._valid_schedule(schedule)

    def _valid_schedule(self, schedule: ScheduleChoice) -> bool:
        if schedule.is_default:
            return schedule.default_threads == self.default_threads
        subset = tuple(c for c, _, _ in schedule.work)
        return (subset in self.subsets
                and all(1 <= t <= self.cluster_cores[c] for c, t, _ in schedule.work)
                and sum(t for _, t, _ in schedule.work) <= self.max_threads
                and all(0 < s < 1 or len(subset) == 1 for _, _, s in schedule.work))

    # -- enumeration (grid order) ---------------------------------------------------------
    def schedules(self) -> Iterator[ScheduleChoice]:
        """Every schedule: the default first, then by cluster subset, threads, shares."""
        yield self.default_schedule  # the default is in every mode
        for subset in self.subsets:
            for threads in self._thread_counts(subset):
                for steps in self._share_steps(len(subset)):
                    yield ScheduleChoice(tuple(
                        (c, t, s / self.units) for c, t, s in zip(subset, threads, steps,
                                                                  strict=True)))

    def _thread_counts(self, subset: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        ranges = [range(1, self.cluster_cores[c] + 1) for c in subset]
        for combo in itertools.product(*ranges):
            if sum(combo) <= self.max_threads:
                yield combo

    def _share_steps(self, k: int) -> Iterator[tuple[int, ...]]:
        if k == 1:
            yield (self.units,)
            return
        # compositions of `units` into k positive parts, first part ascending
        for cuts in itertools.combinations(range(1, self.units), k - 1):
            bounds = (0, *cuts, self.units)
            yield tuple(b - a for a, b in itertools.pairwise(bounds))

    def points(self) -> list[Point]:
        """Every point in grid order: kernels (the default first) outer, schedules inner."""
        if self._points is None:
            schedules = list(self.schedules())
            self._points = [self.point(k, s) for k in self.kernels for s in schedules]
        return self._points

    def __len__(self) -> int:
        return len(self.points())

    def distance(self, a: Point, b: Point) -> float:
        """How far apart two points are: 1 per differing categorical or missing parameter,
        the step distance over the range for an ordinal one (threads, shares)."""
        d = 0.0
        for name in a.keys() | b.keys():
            x, y = a.get(name), b.get(name)
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                span = self.units if name.startswith("share[") else max(self.cluster_cores)
                d += abs(x - y) / span
            else:
                d += 1.0
        return d

    # -- optuna ---------------------------------------------------------------------------
    def suggest(self, trial: Suggester) -> Point:
        """Draw a point through an optuna trial (define-by-run; conditional parameters)."""
        algorithm = trial.suggest_categorical("algorithm", list(self.algorithms))
        labels = self.algorithms[algorithm]
        kernel = (trial.suggest_categorical(f"variant[{algorithm}]", labels)
                  if len(labels) > 1 else labels[0])
        clusters = trial.suggest_categorical("clusters", self.cluster_choices)
        if clusters == DEFAULT:
            n = trial.suggest_int("threads[default]", self.default_threads, self.default_threads)
            return self.point(kernel, ScheduleChoice((), n))
        subset = tuple(int(c) for c in str(clusters).split("+"))
        threads, used = [], 0
        for j, c in enumerate(subset):
            # why: keep the total within max_threads whatever the draw, leaving one thread
            # for each cluster still to come
            high = min(self.cluster_cores[c], self.max_threads - used - (len(subset) - j - 1))
            threads.append(trial.suggest_int(f"threads[{c}]", 1, high))
            used += threads[-1]
        label = self.subset_label(subset)
        if len(subset) == 1:
            steps: tuple[int, ...] = (self.units,)
        elif len(subset) == 2:
            first = trial.suggest_int(f"share[{label}]", 1, self.units - 1)
            steps = (first, self.units - first)
        else:
            choices = ["/".join(map(str, s)) for s in self._share_steps(len(subset))]
            steps = tuple(int(s) for s in
                          trial.suggest_categorical(f"shares[{label}]", choices).split("/"))
        work = tuple((c, t, s / self.units) for c, t, s in zip(subset, threads, steps,
                                                                strict=True))
        return self.point(kernel, ScheduleChoice(work))

    def distributions(self, point: Point) -> dict[str, Any]:
        """The optuna distributions :meth:`suggest` uses for ``point``'s parameters."""
        recorder = _Recorder(point)
        self.suggest(recorder)
        return recorder.distributions


class _Recorder:
    """A fake trial that answers with a given point's values and notes the distributions."""

    def __init__(self, point: Point) -> None:
        self.point = point
        self.distributions: dict[str, Any] = {}

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any:
        from optuna.distributions import CategoricalDistribution

        self.distributions[name] = CategoricalDistribution(list(choices))
        return self.point[name]

    def suggest_int(self, name: str, low: int, high: int) -> int:
        from optuna.distributions import IntDistribution

        self.distributions[name] = IntDistribution(low, high)
        return int(self.point[name])
