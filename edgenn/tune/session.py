"""Tuning a whole model: one study per distinct workload, each to the trial budget.

Layers with the same workload key (same op, shapes and attributes) share a study, so
ResNet's repeated blocks are tuned once. The report keeps each layer's history, from which the
model-level convergence curve is built: after t trials per layer, the sum over layers of
(occurrences x best median so far), an estimate of the model's latency that the strategies'
curves are compared on (the whole model is measured by ``edgenn bench --target host``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgenn.ir import Graph, Node
from edgenn.tune.database import TuningDatabase, redact_url
from edgenn.tune.errors import TuningError
from edgenn.tune.measure import MeasureProtocol
from edgenn.tune.space import LayerSpace, Point
from edgenn.tune.strategies import STRATEGIES, make_strategy
from edgenn.tune.tuner import LayerTuner, LayerTuneResult, Measurer, TrialEvent
from edgenn.tune.workload import workload_key


class TuningTarget(Protocol):
    """What the session needs of a backend (``target.HostTarget``; stand-ins in tests)."""

    fingerprint: str

    def describe(self) -> str: ...

    def layers(self, graph: Graph) -> list[Node]: ...

    def space(self, node: Node, graph: Graph, *, share_step: float = 0.05,
              mode: str = "all") -> LayerSpace[Any]: ...

    def measurer(self, node: Node, graph: Graph, space: LayerSpace[Any],
                 protocol: MeasureProtocol = ..., check: str = ...) -> Measurer: ...


@dataclass
class LayerJob:
    """One distinct workload of the model and the nodes that have it."""

    key: str
    node: Node
    nodes: list[str]
    space: LayerSpace[Any]


@dataclass
class LayerReport:
    key: str
    nodes: list[str]
    op: str
    output_shape: list[int]
    space_size: int
    baseline_point: Point
    result: LayerTuneResult

    @property
    def count(self) -> int:
        return len(self.nodes)

    @property
    def baseline_ms(self) -> float | None:
        return self.result.value_of(self.baseline_point)

    @property
    def best_ms(self) -> float | None:
        best = self.result.best
        return best[1] if best else None

    @property
    def best_attrs(self) -> dict[str, Any]:
        best = self.result.best
        return best[3] if best else {}

    @property
    def gain_pct(self) -> float | None:
        """How much faster the best is than the baseline, as Cha, Kwon and Lee
        (2023) report it:
        (baseline / best - 1) x 100."""
        base, best = self.baseline_ms, self.best_ms
        return (base / best - 1) * 100 if base and best else None

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.key, "nodes": self.nodes, "op": self.op,
            "output_shape": self.output_shape, "space_size": self.space_size,
            "measured_this_run": self.result.measured, "trials": self.result.finished,
            "stopped": self.result.stopped, "baseline_ms": self.baseline_ms,
            "best_ms": self.best_ms, "gain_pct": self.gain_pct,
            "best_kernel": self.best_attrs.get("kernel"),
            "best_schedule": self.best_attrs.get("schedule_text",
                                                 self.best_attrs.get("schedule_label")),
            "best_so_far_ms": self.result.best_so_far(),
            "trials_detail": [
                {"number": n, "ms": v, "point": p, "kernel": a.get("kernel"),
                 "schedule": a.get("schedule_label"), "strategy": a.get("strategy"),
                 "error": a.get("error")}
                for n, v, p, a in self.result.history],
        }


@dataclass
class ModelTuneReport:
    model: str
    strategy: str
    trials: int
    target: str
    fingerprint: str
    db: str
    layers: list[LayerReport] = field(default_factory=list)

    def _estimate(self, pick: Callable[[LayerReport], float | None]) -> float | None:
        values = [(pick(r), r.count) for r in self.layers]
        if not values or any(v is None for v, _ in values):
            return None
        return sum(float(v) * n for v, n in values if v is not None)

    @property
    def baseline_ms(self) -> float | None:
        """Sum of the layers' baseline medians (x occurrences)."""
        return self._estimate(lambda r: r.baseline_ms)

    @property
    def tuned_ms(self) -> float | None:
        return self._estimate(lambda r: r.best_ms)

    def convergence(self) -> list[float]:
        """Model estimate after each trial index (every layer's best so far, x occurrences);
        starts once every layer has a successful trial."""
        curves = [r.result.best_so_far() for r in self.layers]
        length = max((len(c) for c in curves), default=0)
        out = []
        for t in range(length):
            total = 0.0
            for curve, report in zip(curves, self.layers, strict=True):
                if not curve:
                    break
                value = curve[min(t, len(curve) - 1)]
                if value is None:
                    break
                total += value * report.count
            else:
                out.append(total)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "strategy": self.strategy, "trials": self.trials,
                "target": self.target, "fingerprint": self.fingerprint, "db": self.db,
                "baseline_ms_estimate": self.baseline_ms, "tuned_ms_estimate": self.tuned_ms,
                "convergence_ms": self.convergence(),
                "layers": [r.to_json() for r in self.layers]}


def plan_layers(graph: Graph, target: TuningTarget, *, share_step: float = 0.05,
                mode: str = "all") -> list[LayerJob]:
    """The distinct workloads of ``graph`` that ``target`` compiles, in graph order."""
    jobs: dict[str, LayerJob] = {}
    for node in target.layers(graph):
        key = workload_key(node, graph)
        if key in jobs:
            jobs[key].nodes.append(node.name)
        else:
            jobs[key] = LayerJob(key, node, [node.name],
                                 target.space(node, graph, share_step=share_step, mode=mode))
    return list(jobs.values())


def tune_model(graph: Graph, target: TuningTarget, db: TuningDatabase, *, strategy: str = "tpe",
               trials: int = 200, seed: int = 0, protocol: MeasureProtocol | None = None,
               share_step: float = 0.05, mode: str = "all", check: str = "first",
               jobs: list[LayerJob] | None = None,
               on_layer: Callable[[int, LayerJob, int], None] | None = None,
               on_trial: Callable[[TrialEvent], None] | None = None) -> ModelTuneReport:
    """Tune every layer of ``graph`` on ``target`` into ``db`` (see the module docstring).

    ``on_layer(index, job, finished_before)`` is called as a layer starts, ``on_trial`` after
    each measurement: the CLI's progress bar.
    """
    if strategy not in STRATEGIES:
        raise TuningError(f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})")
    if trials < 1:
        raise TuningError(f"--trials must be >= 1, got {trials}")
    jobs = jobs if jobs is not None else plan_layers(graph, target, share_step=share_step,
                                                     mode=mode)
    if not jobs:
        raise TuningError(f"model {graph.name!r} has no layer the host kernels compile: "
                          "nothing to tune")
    report = ModelTuneReport(graph.name, strategy, trials, target.describe(),
                             target.fingerprint, redact_url(db.url))
    for index, job in enumerate(jobs):
        out = job.node.outputs[0]
        study = db.study(job.key, target.fingerprint,
                         {"op": job.node.op, "example_node": job.node.name,
                          "example_model": graph.name, "target": target.describe()})
        if on_layer is not None:
            on_layer(index, job, len(db.finished(study)))
        layer_strategy = make_strategy(strategy, job.space, seed=seed * 7919 + index)
        measurer = target.measurer(job.node, graph, job.space, protocol or MeasureProtocol(),
                                   check)
        result = LayerTuner(db, study, layer_strategy, measurer, budget=trials,
                            on_trial=on_trial).run()
        report.layers.append(LayerReport(
            job.key, job.nodes, job.node.op, list(graph.tensor(out).shape), len(job.space),
            job.space.default_point, result))
    return report
