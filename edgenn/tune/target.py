"""The host backend as the tuner sees it: layers, their spaces, and a measurer per layer.

Everything host-specific lives here (topology, fingerprint, kernel library, ``LayerBench``,
``ThreadSchedule``); the space, strategies, database and loop know none of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgenn.errors import EdgennError
from edgenn.ir import Graph, Node
from edgenn.tune.codec import to_json
from edgenn.tune.database import qualified_name
from edgenn.tune.measure import MeasureProtocol, measure
from edgenn.tune.space import LayerSpace, Point, ScheduleChoice, kernel_label
from edgenn.tune.tuner import TrialResult

CHECKS = ("first", "always", "never")


class HostTarget:
    """This machine (or an emulated big.LITTLE on it) with the host kernel library.

    ``threads`` caps the threads of a schedule (and is the default schedule's count, as
    ``compile_host(threads=...)`` uses it); ``topology`` / ``emulate_hetero`` / ``kernels``
    as for ``compile_host``.
    """

    def __init__(self, topology: Any = None, *, emulate_hetero: str | None = None,
                 threads: int | None = None, kernels: Any = None) -> None:
        from edgenn.backends.host.binding import kernel_library
        from edgenn.backends.host.fingerprint import target_fingerprint
        from edgenn.backends.host.schedule import default_schedule
        from edgenn.backends.host.topology import host_topology

        if topology is not None and emulate_hetero:
            raise EdgennError("give either emulate_hetero or topology, not both")
        if threads is not None and threads < 1:
            raise EdgennError(f"--threads must be >= 1, got {threads}")
        self.topology = topology if topology is not None else host_topology(emulate_hetero)
        self.kernels = kernels if kernels is not None else kernel_library()
        self.max_threads = threads
        self.fingerprint = target_fingerprint(self.topology)
        self.default_threads = default_schedule(self.topology, threads).threads

    @property
    def cluster_cores(self) -> tuple[int, ...]:
        return tuple(c.size for c in self.topology.clusters)

    def describe(self) -> str:
        return str(self.topology.describe())

    def layers(self, graph: Graph) -> list[Node]:
        """The nodes the host backend compiles (and so can tune), in graph order."""
        from edgenn.backends.host.executable import check_float, host_nodes

        check_float(graph)  # one clear error for a quantized model
        names = host_nodes(graph, self.kernels)
        return [n for n in graph.nodes if n.name in names]

    def space(self, node: Node, graph: Graph, *, share_step: float = 0.05,
              mode: str = "all") -> LayerSpace[Any]:
        return LayerSpace(self.kernels.candidate_configs(node, graph), self.cluster_cores,
                          default_kernel=self.kernels.default_config(node, graph),
                          default_threads=self.default_threads, max_threads=self.max_threads,
                          share_step=share_step, mode=mode)

    def schedule(self, choice: ScheduleChoice) -> Any:
        """The backend's ``ThreadSchedule`` for a schedule choice."""
        from edgenn.backends.host.schedule import ClusterWork, ThreadSchedule, default_schedule

        if choice.is_default:
            return default_schedule(self.topology, choice.default_threads)
        return ThreadSchedule(tuple(ClusterWork(c, t, s) for c, t, s in choice.work))

    def measurer(self, node: Node, graph: Graph, space: LayerSpace[Any],
                 protocol: MeasureProtocol | None = None,
                 check: str = "first") -> HostLayerMeasurer:
        from edgenn.backends.host.layer_bench import LayerBench

        bench = LayerBench(node, graph, self.topology, kernels=self.kernels)
        return HostLayerMeasurer(bench, space, self, protocol or MeasureProtocol(), check)


@dataclass
class HostLayerMeasurer:
    """Measures points of one layer through ``LayerBench``.

    ``check``: ``first`` compares a kernel config's output with the reference runtime the
    first time it runs (a config that fails is not timed again), ``always`` on every trial,
    ``never`` not at all. A candidate that does not compile, does not fit the topology or
    fails the check is a failed trial with the reason, not an error of the run.
    """

    bench: Any  # LayerBench
    space: LayerSpace[Any]
    target: HostTarget
    protocol: MeasureProtocol = MeasureProtocol()
    check: str = "first"
    failed: dict[str, str] = field(default_factory=dict)  # kernel label -> why
    checked: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise EdgennError(f"unknown check policy {self.check!r}: choose {', '.join(CHECKS)}")

    def __call__(self, point: Point) -> TrialResult:
        from edgenn.backends.host.threadpool import release_caller

        try:
            return self._measure(point)
        finally:
            # why: a pinned task 0 may leave this thread bound to its CPUs; the next trial and
            # the topology check want the process's own mask back
            release_caller()

    def _measure(self, point: Point) -> TrialResult:
        config, choice = self.space.decode(point)
        label = kernel_label(config)
        attrs: dict[str, Any] = {"kernel": label, "schedule_label": choice.label,
                                 "config": to_json(config),
                                 "config_type": qualified_name(type(config))}
        try:
            schedule = self.target.schedule(choice).validate(self.target.topology)
            attrs.update(schedule=to_json(schedule), schedule_type=qualified_name(type(schedule)),
                         threads=int(schedule.threads),
                         schedule_text=schedule.describe(self.target.topology))
            if label in self.failed:
                return TrialResult(None, {**attrs, "error": self.failed[label]})
            try:
                self.bench.prepare(config, schedule)
            except EdgennError as err:  # the schedule is valid: the kernel did not build
                self.failed[label] = _one_line(err)  # why: it will not build next time either
                raise
            if self.check == "always" or (self.check == "first" and label not in self.checked):
                self.checked.add(label)
                if not self.bench.check():
                    why = (f"output differs from the reference runtime (max relative error "
                           f"{self.bench.max_rel_error:.3g})")
                    self.failed[label] = why
                    return TrialResult(None, {**attrs, "error": why})
                attrs["max_rel_error"] = self.bench.max_rel_error
            m = measure(self.bench.run_once, self.protocol)
        except EdgennError as err:
            return TrialResult(None, {**attrs, "error": _one_line(err)})
        return TrialResult(m.median_ms, {
            **attrs, "samples_ms": [round(s, 6) for s in m.samples_ms],
            "spread": round(m.spread, 4), "warmup": m.warmup, "cache_flushed": m.flushed,
            "idle_ms": m.idle_ms,
            "emulated": bool(self.target.topology.emulated)})


def _one_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
