"""A pure-Python stand-in target for the tuner's tests: a synthetic cost per point, no C.

The cost model is a small big.LITTLE story: kernels have a base time, the big cluster runs at
1.0, the LITTLE one at 0.43, a layer's time is its slowest cluster's share over its speed, and
the unpinned default pays a migration penalty. Deterministic, so strategies can be compared;
``delay_s`` makes a measurement take real time (for kill-and-resume and two-worker tests) and
``log`` appends one line per measurement started and finished.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgenn.ir import Graph, Node
from edgenn.tune.codec import to_json
from edgenn.tune.database import qualified_name, register_decision_type
from edgenn.tune.measure import MeasureProtocol
from edgenn.tune.space import LayerSpace, Point, ScheduleChoice, kernel_label
from edgenn.tune.tuner import TrialResult


@register_decision_type
@dataclass(frozen=True)
class FakeConfig:
    algorithm: str
    microkernel: str = "none"


@dataclass(frozen=True)
class FakeWork:
    cluster: int
    threads: int
    share: float


@register_decision_type
@dataclass(frozen=True)
class FakeSchedule:
    clusters: tuple[FakeWork, ...]
    pinned: bool = True

    @property
    def threads(self) -> int:
        return sum(w.threads for w in self.clusters)


KERNELS = [FakeConfig("im2col", "8x12"), FakeConfig("im2col", "8x6"),
           FakeConfig("indirect", "6x16"), FakeConfig("indirect", "4x24"),
           FakeConfig("winograd_2x2", "8x12"), FakeConfig("direct", "8x4")]
BASE_MS = {"im2col/8x12": 5.0, "im2col/8x6": 5.6, "indirect/6x16": 4.4, "indirect/4x24": 4.9,
           "winograd_2x2/8x12": 3.1, "direct/8x4": 9.0}
SPEED = (1.0, 0.43)
FINGERPRINT = "fake-x86-1x1.00+1x0.43e"


def synthetic_ms(space: LayerSpace[Any], point: Point, scale: float = 1.0) -> float:
    config, choice = space.decode(point)
    base = BASE_MS[kernel_label(config)] * scale
    if choice.is_default:  # unpinned: the OS migrates, big waits for LITTLE
        return base * 1.9
    return base * max(share / (SPEED[c] * threads ** 0.9) for c, threads, share in choice.work)


def schedule_of(choice: ScheduleChoice) -> FakeSchedule:
    if choice.is_default:
        return FakeSchedule((FakeWork(-1, choice.default_threads, 1.0),), pinned=False)
    return FakeSchedule(tuple(FakeWork(c, t, s) for c, t, s in choice.work))


@dataclass
class SyntheticMeasurer:
    space: LayerSpace[Any]
    delay_s: float = 0.0
    log: Path | None = None
    scale: float = 1.0
    fail_kernel: str | None = None

    def __call__(self, point: Point) -> TrialResult:
        config, choice = self.space.decode(point)
        schedule = schedule_of(choice)
        label = kernel_label(config)
        self._log("start", point)
        if self.delay_s:
            time.sleep(self.delay_s)
        attrs = {"kernel": label, "schedule_label": choice.label, "config": to_json(config),
                 "config_type": qualified_name(FakeConfig), "schedule": to_json(schedule),
                 "schedule_type": qualified_name(FakeSchedule), "threads": schedule.threads}
        if label == self.fail_kernel:
            self._log("done", point)
            return TrialResult(None, {**attrs, "error": "does not compile (stand-in)"})
        ms = synthetic_ms(self.space, point, self.scale)
        self._log("done", point)
        return TrialResult(ms, {**attrs, "samples_ms": [ms]})

    def _log(self, what: str, point: Point) -> None:
        if self.log is not None:
            from edgenn.tune.database import param_hash

            with self.log.open("a") as f:
                f.write(f"{what} {param_hash(point)}\n")


def fake_space(mode: str = "all", max_threads: int | None = None,
               share_step: float = 0.05) -> LayerSpace[FakeConfig]:
    return LayerSpace(KERNELS, (1, 1), default_kernel=KERNELS[0], default_threads=1,
                      max_threads=max_threads, share_step=share_step, mode=mode)


class FakeTarget:
    """The session's target protocol over the synthetic cost (every Conv2D / FC layer)."""

    fingerprint = FINGERPRINT

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    def describe(self) -> str:
        return "1 big + 1 LITTLE @0.43 (stand-in), emulated"

    def layers(self, graph: Graph) -> list[Node]:
        return [n for n in graph.nodes if n.op in ("Conv2D", "FullyConnected")]

    def space(self, node: Node, graph: Graph, *, share_step: float = 0.05,
              mode: str = "all") -> LayerSpace[Any]:
        return fake_space(mode, share_step=share_step)

    def measurer(self, node: Node, graph: Graph, space: LayerSpace[Any],
                 protocol: MeasureProtocol | None = None, check: str = "first"
                 ) -> SyntheticMeasurer:
        out = graph.tensor(node.outputs[0])
        return SyntheticMeasurer(space, self.delay_s, scale=out.size / 1000.0)
