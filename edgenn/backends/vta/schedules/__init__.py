"""GEMM schedules: each turns a ``GemmProblem`` into an instruction stream.

``tiled2`` and ``optimized`` are the paper's Algorithms 2 and 3; ``ours`` goes past them
(docs/vta.md explains how). Every schedule is ``build(problem, builder, operands) -> tiling``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgenn.backends.vta.runtime import ProgramBuilder
from edgenn.backends.vta.schedules import optimized, ours, tiled2
from edgenn.backends.vta.schedules.common import GemmProblem, Operands

ScheduleFn = Callable[[GemmProblem, ProgramBuilder, Operands], dict[str, Any]]

SCHEDULE_BUILDERS: dict[str, ScheduleFn] = {
    "tiled2": tiled2.build,
    "optimized": optimized.build,
    "ours": ours.build,
}
