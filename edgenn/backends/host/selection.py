"""Which kernel configuration and thread schedule each layer gets.

``schedule="default"`` is the rule-based baseline (Arm Compute Library): the kernels' fixed
method rules (``default_config``) and ``default_schedule`` (threads = the smallest cluster's
core count, unpinned, equal split). ``schedule="tuned"`` looks every layer up in the tuning
database by (workload key, target fingerprint) and applies the best record; a layer without a
usable record falls back to the default and the report says why. A ``ThreadSchedule`` applies
that schedule, with the default configuration, to every layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.host.binding import KernelLibrary
from edgenn.backends.host.schedule import ScheduleError, ThreadSchedule, default_schedule
from edgenn.backends.host.topology import Topology
from edgenn.errors import EdgennError
from edgenn.ir import Graph, Node
from edgenn.utils import user_cache_dir

MODES = ("tuned", "default")


@dataclass(frozen=True)
class LayerChoice:
    """A layer's configuration and schedule, and where they came from (for the report)."""

    config: Any
    schedule: ThreadSchedule
    source: str  # "tuned", "default", "given", or "default: <why no record applies>"
    tuned_ms: float | None = None  # the record's measured median, when tuned


def default_db_url() -> str:
    """The tuning database used when none is given: the tuner's default
    (``edgenn.tune.database.default_db_url``, the same folder), without importing the tuner."""
    return f"sqlite:///{user_cache_dir('tuning.db')}"


class Selector:
    """Chooses per layer; one instance per compilation (caches the fingerprint)."""

    def __init__(self, kernels: KernelLibrary, topology: Topology,
                 mode: str | ThreadSchedule = "tuned", threads: int | None = None,
                 db: str | None = None) -> None:
        if isinstance(mode, str) and mode not in MODES:
            raise EdgennError(f"unknown schedule {mode!r} (available: {', '.join(MODES)}, "
                              "or a ThreadSchedule)")
        if threads is not None and threads < 1:
            raise EdgennError(f"--threads must be >= 1, got {threads}")
        self.kernels = kernels
        self.topology = topology
        self.mode = mode
        self.threads = threads
        self.db = db
        self.fallback = default_schedule(topology, threads)
        self._fingerprint: str | None = None
        if isinstance(mode, ThreadSchedule):
            mode.validate(topology)
            if threads is not None and mode.threads > threads:
                raise EdgennError(f"the schedule {mode.describe(topology)} uses {mode.threads} "
                                  f"threads, more than --threads {threads}")

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            from edgenn.backends.host.fingerprint import target_fingerprint

            self._fingerprint = target_fingerprint(self.topology)
        return self._fingerprint

    def choose(self, node: Node, graph: Graph) -> LayerChoice:
        if isinstance(self.mode, ThreadSchedule):
            return LayerChoice(self.kernels.default_config(node, graph), self.mode, "given")
        if self.mode == "default":
            return LayerChoice(self.kernels.default_config(node, graph), self.fallback, "default")
        return self._tuned(node, graph)

    def _tuned(self, node: Node, graph: Graph) -> LayerChoice:
        try:
            from edgenn.tune.database import best_record
            from edgenn.tune.workload import workload_key
        except ImportError as err:  # why: the tuner's packages (optuna) are an optional extra
            return self.fallback_choice(node, graph, f"tuning database unavailable ({err})")

        # why max_threads: the database then returns the best record within --threads, which
        # may be a slower but smaller schedule, rather than the overall best we could not use.
        record = best_record(self.db or default_db_url(), workload_key(node, graph),
                             self.fingerprint, max_threads=self.threads)
        why = "no tuning record" + (f" within --threads {self.threads}" if self.threads else "")
        if record is not None:
            schedule = record.schedule
            try:
                schedule.validate(self.topology)
            except ScheduleError as err:
                why = f"record does not fit this topology ({err})"
            else:
                if self.threads is not None and schedule.threads > self.threads:
                    why = (f"record uses {schedule.threads} threads, more than "
                           f"--threads {self.threads}")
                else:
                    return LayerChoice(record.config, schedule, "tuned",
                                       float(record.median_ms))
        return self.fallback_choice(node, graph, why)

    def fallback_choice(self, node: Node, graph: Graph, why: str) -> LayerChoice:
        """The default configuration and schedule, with the reason no tuned one applies."""
        return LayerChoice(self.kernels.default_config(node, graph), self.fallback,
                           f"default: {why}")
