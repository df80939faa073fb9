"""GEMM schedules: each turns a ``GemmProblem`` into an instruction stream.

``tiled2`` (plain two-stage tiling, one buffer per operand) and ``optimized`` (a 16-row A
panel with B tiles streamed through it, LOAD and GEMM double-buffered) are the two schedules
of the ZCU102 study whose GEMM table ``benchmarks/vta_gemm_table.py`` reproduces (its
Algorithms 2 and 3; docs/references.md). ``tall_pipelined`` goes past them: taller output
tiles, long DMA rows, whole-block GEMM instructions, LOAD / GEMM / STORE all overlapped, the
bias added from a scratch accumulator row, tile sizes searched (docs/vta.md). Every schedule is
``build(problem, builder, operands) -> tiling``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgenn.backends.vta.errors import VtaScheduleError
from edgenn.backends.vta.runtime import ProgramBuilder
from edgenn.backends.vta.schedules import optimized, tall_pipelined, tiled2
from edgenn.backends.vta.schedules.common import GemmProblem, Operands

ScheduleFn = Callable[[GemmProblem, ProgramBuilder, Operands], dict[str, Any]]

SCHEDULE_BUILDERS: dict[str, ScheduleFn] = {
    "tiled2": tiled2.build,
    "optimized": optimized.build,
    "tall_pipelined": tall_pipelined.build,
}
SCHEDULES = tuple(SCHEDULE_BUILDERS)
DEFAULT_SCHEDULE = "tall_pipelined"


def schedule_name(name: str) -> str:
    """``name`` when it is a schedule's; any other name raises (one line, the choices)."""
    if name not in SCHEDULE_BUILDERS:
        raise VtaScheduleError(f"unknown VTA schedule {name!r} (available: "
                               f"{', '.join(SCHEDULES)})")
    return name
