"""Thread schedules: which clusters run a layer, with how many threads, and each one's share.

A ``ThreadSchedule`` is a tuple of ``ClusterWork(cluster, threads, share)``. The layer's
output partitions (rows or channel blocks, ``plan.partition_count``) are split between the
clusters in proportion to ``share`` (largest-remainder rounding, so the counts add up exactly),
and each cluster's partitions equally between its threads. A thread of a pinned schedule is
bound to one CPU of its cluster (thread i to the cluster's i-th CPU), so two threads of one
cluster never share a core and every measurement sees the same placement.

``ClusterWork(ANY_CLUSTER, n, 1.0)`` is the unpinned form: n threads that the OS places and
migrates over every CPU of the topology. ``default_schedule`` builds it the way Arm Compute
Library does (``CPPScheduler`` with ``get_threads_hint()``): as many threads as the *smallest*
cluster has cores, equal split, no affinity, so on big.LITTLE the big cores wait for the
LITTLE ones at every layer's barrier. It is the baseline the tuner is measured against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgenn.backends.host.topology import Topology, TopologyError

#: ``ClusterWork.cluster`` of unpinned threads: any CPU of the topology.
ANY_CLUSTER = -1

#: The pool's hard limit on threads per layer (``EDGENN_POOL_MAX_THREADS`` in threadpool.c).
MAX_THREADS = 256

_SHARE_TOLERANCE = 1e-6


class ScheduleError(TopologyError):
    """A schedule that does not fit the topology (bad cluster, too many threads, shares)."""


@dataclass(frozen=True)
class ClusterWork:
    """``threads`` threads on cluster ``cluster`` computing ``share`` of the layer's output."""

    cluster: int
    threads: int
    share: float


@dataclass(frozen=True)
class ThreadSchedule:
    """How one layer's work is spread over the clusters; the shares add up to 1."""

    clusters: tuple[ClusterWork, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "clusters", tuple(self.clusters))
        if not self.clusters:
            raise ScheduleError("a thread schedule needs at least one cluster")
        if any(w.threads < 1 for w in self.clusters):
            raise ScheduleError(f"every cluster of a schedule needs >= 1 thread: {self}")
        if any(w.share < 0 for w in self.clusters):
            raise ScheduleError(f"negative share in {self}")
        total = sum(w.share for w in self.clusters)
        if abs(total - 1.0) > _SHARE_TOLERANCE:
            raise ScheduleError(f"the shares of a schedule add up to {total:g}, not 1: {self}")
        indices = [w.cluster for w in self.clusters]
        if len(set(indices)) != len(indices):
            raise ScheduleError(f"a cluster appears twice in {self}")
        if ANY_CLUSTER in indices and len(indices) > 1:
            raise ScheduleError("unpinned threads (cluster -1) cannot be mixed with pinned ones")
        if self.threads > MAX_THREADS:
            raise ScheduleError(f"{self.threads} threads: the pool runs at most {MAX_THREADS}")

    @property
    def pinned(self) -> bool:
        return self.clusters[0].cluster != ANY_CLUSTER

    @property
    def threads(self) -> int:
        return sum(w.threads for w in self.clusters)

    def validate(self, topology: Topology) -> ThreadSchedule:
        """Raise ``ScheduleError`` unless every cluster exists and has a core per thread."""
        for w in self.clusters:
            if w.cluster == ANY_CLUSTER:
                continue
            if not 0 <= w.cluster < len(topology.clusters):
                raise ScheduleError(
                    f"schedule uses cluster {w.cluster}; the topology has "
                    f"{len(topology.clusters)} ({topology.describe()})")
            size = topology.clusters[w.cluster].size
            if w.threads > size:
                raise ScheduleError(
                    f"schedule pins {w.threads} threads to cluster {w.cluster} "
                    f"({topology.clusters[w.cluster].name}), which has {size} CPU(s)")
        return self

    def describe(self, topology: Topology | None = None) -> str:
        """``"big 1t 70% + LITTLE 1t 30%"`` or ``"2t unpinned, equal split"``."""
        if not self.pinned:
            return f"{self.threads}t unpinned, equal split"
        parts = []
        for w in self.clusters:
            name = (topology.clusters[w.cluster].name
                    if topology and 0 <= w.cluster < len(topology.clusters) else f"c{w.cluster}")
            parts.append(f"{name} {w.threads}t {100 * w.share:.0f}%")
        return " + ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as tuning records store it."""
        return {"clusters": [{"cluster": w.cluster, "threads": w.threads, "share": w.share}
                             for w in self.clusters]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThreadSchedule:
        try:
            return cls(tuple(ClusterWork(int(c["cluster"]), int(c["threads"]),
                                         float(c["share"])) for c in data["clusters"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ScheduleError(f"malformed thread schedule {data!r}: {err}") from None


def unpinned(threads: int) -> ThreadSchedule:
    """``threads`` unpinned threads, equal split (what a rule-based library does)."""
    return ThreadSchedule((ClusterWork(ANY_CLUSTER, threads, 1.0),))


def default_schedule(topology: Topology, threads: int | None = None) -> ThreadSchedule:
    """Arm Compute Library's rule: threads = the smallest cluster's core count, unpinned,
    equal split. ``threads`` overrides the count (ACL's ``set_num_threads``)."""
    count = threads if threads is not None else min(c.size for c in topology.clusters)
    return unpinned(count)


def single_cluster(cluster: int, threads: int) -> ThreadSchedule:
    """All the work on one cluster."""
    return ThreadSchedule((ClusterWork(cluster, threads, 1.0),))


def parse_schedule(spec: str) -> ThreadSchedule:
    """A schedule from ``"CLUSTER:THREADS:SHARE[+...]"``, e.g. ``"0:1:0.7+1:1:0.3"`` (cluster
    0 with one thread doing 70%, cluster 1 with one thread doing 30%); ``"any:2"`` is two
    unpinned threads. Shares may be omitted everywhere for an equal split per thread."""
    items = [part.strip() for part in spec.split("+")]
    parsed: list[tuple[int, int, float | None]] = []
    for item in items:
        fields = item.split(":")
        try:
            if len(fields) not in (2, 3):
                raise ValueError
            cluster = ANY_CLUSTER if fields[0] in ("any", "-1") else int(fields[0])
            parsed.append((cluster, int(fields[1]),
                           float(fields[2]) if len(fields) == 3 else None))
        except ValueError:
            raise ScheduleError(
                f"bad schedule {spec!r}: expected CLUSTER:THREADS[:SHARE] joined by +, "
                "e.g. 0:1:0.7+1:1:0.3") from None
    shares = [s for _, _, s in parsed]
    if all(s is None for s in shares):
        total = sum(t for _, t, _ in parsed)
        shares = [t / total for _, t, _ in parsed]
    elif any(s is None for s in shares):
        raise ScheduleError(f"bad schedule {spec!r}: give a share for every cluster or none")
    return ThreadSchedule(tuple(ClusterWork(c, t, float(s or 0.0))
                                for (c, t, _), s in zip(parsed, shares, strict=True)))


# --------------------------------------------------------------------------------- binding
@dataclass(frozen=True)
class TaskSpan:
    """One thread's work in a layer run: partitions [begin, end) on ``cpus`` (empty: any)."""

    begin: int
    end: int
    cpus: tuple[int, ...]
    cluster: int

    @property
    def partitions(self) -> int:
        return self.end - self.begin


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` (largest remainder; ties go to
    the earlier entry). The result always adds up to ``total``."""
    if total < 0:
        raise ValueError("total must be >= 0")
    wsum = float(sum(weights))
    if wsum <= 0:
        raise ValueError("weights must not all be zero")
    exact = [total * w / wsum for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def split_partitions(schedule: ThreadSchedule, topology: Topology,
                     partition_count: int) -> tuple[TaskSpan, ...]:
    """The tasks of one layer run: contiguous partition ranges, one per thread that has work.

    Clusters come in schedule order and their ranges are contiguous, so every partition is
    computed exactly once. Threads left with nothing (more threads than partitions) get no
    task: waking them would only add to the barrier.
    """
    schedule.validate(topology)
    per_cluster = apportion(partition_count, [w.share for w in schedule.clusters])
    spans: list[TaskSpan] = []
    start = 0
    for work, count in zip(schedule.clusters, per_cluster, strict=True):
        cpus = (() if work.cluster == ANY_CLUSTER
                else topology.clusters[work.cluster].cpus)
        for t, n in enumerate(apportion(count, [1.0] * work.threads) if count else []):
            if n:
                pin = () if not cpus else (cpus[t],)
                spans.append(TaskSpan(start, start + n, pin, work.cluster))
                start += n
    return tuple(spans)
