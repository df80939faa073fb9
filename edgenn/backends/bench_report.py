"""``BenchReport``: what every executable's ``bench()`` returns, in one schema.

Every target answers the same questions (which layers ran where, with which kernel, at what
cost, in how much memory) and a few of its own (a Cortex-M core's skip switch cost, a host
schedule's CPU time, an accelerator's DRAM traffic). The common answers are typed fields, read
the same way for every target by the CLI's one printer and by benchmarks; the target's own
answers go in ``extra`` (JSON-ready) and, per layer, in ``LayerReport.extra``. ``detail`` keeps
the backend's native result object for programmatic use (not serialised).

Times say what they are: ``time_basis`` names the cycle model, the simulator or the wall clock
behind ``total_ms`` and the layers' ``ms``, so a simulated figure is never read as a measured one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from edgenn.backends.timing import TimedRuns
from edgenn.errors import EdgennError

SCHEMA = "edgenn.bench/1"

D = TypeVar("D")


@dataclass(frozen=True)
class LayerReport:
    """One runtime layer's figures; None where the target has no such figure."""

    index: int
    name: str
    op: str
    where: str  # the unit that ran it: "cortex-m4", "host", "ref", "vta", "cpu", ...
    kernel: str
    macs: int | None = None
    cycles: int | None = None
    instructions: int | None = None
    ms: float | None = None
    shape: tuple[int, ...] | None = None  # the layer's output shape (batch 1)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "op": self.op, "where": self.where,
                "kernel": self.kernel, "macs": self.macs, "cycles": self.cycles,
                "instructions": self.instructions, "ms": self.ms,
                "shape": list(self.shape) if self.shape is not None else None,
                "extra": dict(self.extra)}


@dataclass(frozen=True)
class Column:
    """A target-specific per-layer column: ``LayerReport.extra[key]`` under ``header``."""

    key: str
    header: str
    fmt: str = ""  # format spec for numbers ("", ",", ".3f", ".1%")


@dataclass(frozen=True)
class BenchReport(Generic[D]):
    """One benchmark of one executable (the JSON schema is ``to_json``)."""

    model: str
    target: str
    title: str  # what ran on what: core and clock, accelerator preset, CPU topology
    time_basis: str  # what ``total_ms`` / layer ``ms`` are: a cycle model, simulated, measured
    layers: tuple[LayerReport, ...]
    total_ms: float | None = None
    total_cycles: int | None = None
    total_instructions: int | None = None
    total_macs: int | None = None
    arena_bytes: int | None = None
    flash_bytes: int | None = None
    ram_bytes: int | None = None
    stack_bytes: int | None = None
    columns: tuple[Column, ...] = ()  # target-specific per-layer columns worth printing
    log: tuple[str, ...] = ()  # lines printed before the table (e.g. DarkNet's layer log)
    summary: tuple[str, ...] = ()  # lines printed after the table (totals, memory)
    notes: tuple[str, ...] = ()  # caveats: what the figures do not model
    extra: Mapping[str, Any] = field(default_factory=dict)
    # the backend's native result (BenchResult, HostBenchResult, NetworkReport; None for ref)
    detail: D = field(kw_only=True, compare=False, repr=False)

    def with_extra(self, **more: Any) -> BenchReport[D]:
        """A copy with more target-specific entries (e.g. the CLI's skip configurations)."""
        return replace(self, extra={**self.extra, **more})

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "model": self.model, "target": self.target, "title": self.title,
            "time_basis": self.time_basis, "total_ms": self.total_ms,
            "total_cycles": self.total_cycles, "total_instructions": self.total_instructions,
            "total_macs": self.total_macs, "arena_bytes": self.arena_bytes,
            "flash_bytes": self.flash_bytes, "ram_bytes": self.ram_bytes,
            "stack_bytes": self.stack_bytes, "notes": list(self.notes),
            "layers": [layer.to_json() for layer in self.layers], "extra": dict(self.extra),
        }


@dataclass(frozen=True)
class BenchSettings(TimedRuns):
    """How to benchmark: the timed runs (``TimedRuns``) for measured targets, the clock for
    cycle models.

    A target uses what applies to it (a cycle-model emulation is deterministic: one run).
    """

    clock_mhz: float = 64.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.clock_mhz > 0:
            raise EdgennError(f"bench needs a clock above 0 MHz (got {self.clock_mhz:g} MHz)")
