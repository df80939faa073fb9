"""``run_gemm``: one int8 GEMM on the simulated accelerator, with its timing report.

The host packs A, B and the bias into the accelerator's layouts in (simulated) DRAM, a
schedule emits the instruction stream, the simulator runs it (data and timing), and the host
unpacks C. ``GemmReport`` separates the accelerator's simulated time (``time_ms``: cycles at the
preset's clock) from the host work measured on this machine (``host_pack_ms``: packing and
instruction generation in Python; not a model of the board's CPU) and from the modelled host
work of the board's own CPU (``board_host_ms``, named terms, see ``board_host``): ``wall_ms``
= ``time_ms`` + those terms is what a wall clock on the board would show, the measure of the ZCU102
GEMM study (docs/references.md).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from edgenn.backends.vta import sim
from edgenn.backends.vta.board_host import BoardHost
from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.dram import Dram
from edgenn.backends.vta.errors import VtaError
from edgenn.backends.vta.isa import MemType
from edgenn.backends.vta.layout import join_planes, unpack_c
from edgenn.backends.vta.runtime import Program, ProgramBuilder
from edgenn.backends.vta.schedules import (
    DEFAULT_SCHEDULE,
    SCHEDULE_BUILDERS,
    SCHEDULES,
    schedule_name,
)
from edgenn.backends.vta.schedules.common import OUTPUTS, GemmProblem, Operands, place_operands
from edgenn.backends.vta.timing import MEM_KEYS, SimStats
from edgenn.errors import ShapeError

# why SCHEDULES is listed: callers import the schedule names from here, beside run_gemm
__all__ = ["SCHEDULES", "GemmReport", "GemmRun", "board_host_cost", "build_program", "run_gemm",
           "time_gemm"]


@dataclass
class GemmReport:
    """Simulated cost of one GEMM. ``to_json()`` gives every field."""

    m: int
    k: int
    n: int
    schedule: str
    preset: str
    cycles: int
    time_ms: float
    gops: float
    peak_gops: float
    gemm_utilization: float
    dram_bytes: dict[str, int]
    module_busy_cycles: dict[str, int]
    instructions: int
    assumed: dict[str, float]
    host_pack_ms: float
    clock_mhz: float = 0.0
    bus_bits: int = 0
    out: str = "int8"
    insn_counts: dict[str, int] = field(default_factory=dict)
    tiling: dict[str, Any] = field(default_factory=dict)
    board_host_ms: dict[str, float] = field(default_factory=dict)

    @property
    def board_host_total_ms(self) -> float:
        return sum(self.board_host_ms.values())

    @property
    def wall_ms(self) -> float:
        """Device time plus the board's modelled host work: what the ZCU102 GEMM study's
        Table 2 measures."""
        return self.time_ms + self.board_host_total_ms

    @property
    def percent_of_peak(self) -> float:
        return 100.0 * self.gops / self.peak_gops

    @property
    def total_dram_bytes(self) -> int:
        return sum(self.dram_bytes.values())

    @property
    def ops_per_byte(self) -> float:
        """Arithmetic intensity actually achieved: 2 M K N over every DRAM byte moved."""
        return 2.0 * self.m * self.k * self.n / max(1, self.total_dram_bytes)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["percent_of_peak"] = self.percent_of_peak
        d["ops_per_byte"] = self.ops_per_byte
        d["board_host_total_ms"] = self.board_host_total_ms
        d["wall_ms"] = self.wall_ms
        return d


@dataclass
class GemmRun:
    result: np.ndarray  # int8 or int32 [M, N]
    report: GemmReport


def _check(a: Any, b: Any, out: str, shift: int, bias: Any) -> None:
    if out not in OUTPUTS:
        raise VtaError(f"unknown output {out!r} (available: {', '.join(OUTPUTS)})")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, np.ndarray) or x.dtype != np.int8 or x.ndim != 2:
            what = f"{x.dtype}{list(x.shape)}" if isinstance(x, np.ndarray) else type(x).__name__
            raise ShapeError(f"run_gemm: {name} must be a 2-D int8 array, got {what}")
    if a.shape[1] != b.shape[0] or 0 in a.shape or 0 in b.shape:
        raise ShapeError(f"run_gemm: cannot multiply {list(a.shape)} by {list(b.shape)}")
    if not isinstance(shift, int | np.integer) or not 0 <= shift <= 31:
        raise VtaError(f"run_gemm: shift {shift!r} must be an integer in 0..31")
    if shift and out != "int8":
        raise VtaError("run_gemm: shift applies to int8 output only")
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.int32
                             or bias.shape != (b.shape[1],)):
        what = f"{bias.dtype}{list(bias.shape)}" if isinstance(bias, np.ndarray) else bias
        raise ShapeError(f"run_gemm: bias must be int32 [{b.shape[1]}], got {what}")


def build_program(problem: GemmProblem, schedule: str, config: VtaConfig, dram: Dram,
                  ops: Operands) -> tuple[Program, dict[str, Any]]:
    builder = ProgramBuilder(config, dram)
    tiling = SCHEDULE_BUILDERS[schedule](problem, builder, ops)
    return builder.finish(), tiling


def board_host_cost(problem: GemmProblem, stats: SimStats,
                    board: BoardHost | None = None) -> dict[str, float]:
    """The board CPU's modelled work for this call (``board_host.BoardHost``)."""
    board = board or BoardHost()
    return board.cost_ms(instructions=stats.instructions,
                         packed_bytes=problem.packed_operand_bytes,
                         unpacked_bytes=problem.m * problem.n * (4 if problem.out == "int32"
                                                                 else 1),
                         insn_bytes=stats.dram_bytes["insn"], uop_bytes=stats.dram_bytes["uop"])


def _report(problem: GemmProblem, schedule: str, config: VtaConfig, stats: SimStats,
            host_ms: float, tiling: dict[str, Any]) -> GemmReport:
    time_ms = config.cycles_to_ms(stats.cycles)
    gops = 2.0 * problem.m * problem.k * problem.n / (time_ms * 1e-3) / 1e9 if time_ms else 0.0
    return GemmReport(
        m=problem.m, k=problem.k, n=problem.n, schedule=schedule, preset=config.preset_name,
        cycles=stats.cycles, time_ms=time_ms, gops=gops, peak_gops=config.peak_gops,
        gemm_utilization=stats.gemm_utilization,
        dram_bytes={key: stats.dram_bytes[key] for key in (*MEM_KEYS, "insn")},
        module_busy_cycles=dict(stats.busy), instructions=stats.instructions,
        assumed=config.assumed_constants(), host_pack_ms=host_ms, clock_mhz=config.clock_mhz,
        bus_bits=config.bus_bits, out=problem.out, insn_counts=dict(stats.insn_counts),
        tiling=tiling, board_host_ms=board_host_cost(problem, stats))


def run_gemm(a: np.ndarray, b: np.ndarray, *, schedule: str = DEFAULT_SCHEDULE,
             config: VtaConfig | None = None, out: str = "int8", shift: int = 0,
             bias: np.ndarray | None = None) -> GemmRun:
    """``a @ b`` (int8 [M, K] x int8 [K, N], int32 accumulation, plus ``bias`` int32 [N]) on the
    simulated accelerator.

    ``out="int8"``: ALU SHR by ``shift``, clip with MIN 127 / MAX -128, STORE.
    ``out="int32"``: the whole accumulators, stored as four byte planes (STORE the low byte,
    ALU SHR 8, STORE, ...) and joined on the host: exact.
    """
    schedule = schedule_name(schedule)
    _check(a, b, out, shift, bias)
    config = config or VtaConfig.preset()
    problem = GemmProblem(a.shape[0], a.shape[1], b.shape[1], out, int(shift), bias is not None)
    t0 = time.perf_counter()
    dram, ops = place_operands(problem, config, a, b, bias)
    program, tiling = build_program(problem, schedule, config, dram, ops)
    host_ms = (time.perf_counter() - t0) * 1e3
    stats = sim.run(sim.Machine(config, dram), list(program.insns))
    t1 = time.perf_counter()
    planes = [unpack_c(dram.elems(MemType.OUT)[c: c + problem.m * problem.nb], problem.m,
                       problem.n) for c in ops.c]
    result = planes[0].copy() if out == "int8" else join_planes(planes)
    host_ms += (time.perf_counter() - t1) * 1e3
    return GemmRun(result, _report(problem, schedule, config, stats, host_ms, tiling))


def time_gemm(m: int, k: int, n: int, *, schedule: str = DEFAULT_SCHEDULE,
              config: VtaConfig | None = None, out: str = "int8", shift: int = 0,
              has_bias: bool = False) -> GemmReport:
    """The report of ``run_gemm`` for an (M, K, N) GEMM without moving data: timing only.

    Cycles do not depend on the values, so this is what benchmarks of large shapes use.
    """
    schedule = schedule_name(schedule)
    if min(m, k, n) < 1:
        raise ShapeError(f"time_gemm: empty GEMM {m}x{k}x{n}")
    config = config or VtaConfig.preset()
    problem = GemmProblem(m, k, n, out, int(shift), has_bias)
    t0 = time.perf_counter()
    dram, ops = place_operands(problem, config)
    program, tiling = build_program(problem, schedule, config, dram, ops)
    host_ms = (time.perf_counter() - t0) * 1e3
    stats = sim.run(sim.Machine(config, dram), list(program.insns), functional=False)
    return _report(problem, schedule, config, stats, host_ms, tiling)

