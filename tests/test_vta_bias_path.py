"""Every VTA GEMM schedule adds the bias the same way: one LOAD ACC of the bias into a scratch
accumulator row, then a GEMM reset and one ALU ADD broadcasting it over the tile. No schedule
broadcasts it by a stride-0 LOAD ACC per tile row (one DMA latency per row), which would make
the baselines slower for a reason that is not their tiling."""

from __future__ import annotations

import numpy as np
import pytest

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.gemm import SCHEDULES, build_program, run_gemm, time_gemm
from edgenn.backends.vta.isa import AluInsn, AluOp, MemInsn, MemType, Opcode
from edgenn.backends.vta.schedules.common import GemmProblem, place_operands

FAST = SCHEDULES[-1]  # the pipelined schedule; the baselines come first


def _program(schedule: str, m: int, k: int, n: int):  # type: ignore[no-untyped-def]
    config = VtaConfig.preset()
    problem = GemmProblem(m, k, n, "int32", 0, True)
    dram, ops = place_operands(problem, config)
    program, _ = build_program(problem, schedule, config, dram, ops)
    return program.insns


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("shape", [(784, 64, 128), (200, 48, 2100)])
def test_bias_is_one_row_load_and_an_alu_add(schedule: str, shape: tuple[int, int, int]) -> None:
    insns = _program(schedule, *shape)
    acc_loads = [i for i in insns if isinstance(i, MemInsn) and i.opcode == Opcode.LOAD
                 and i.mem_type == MemType.ACC]
    adds = [i for i in insns if isinstance(i, AluInsn) and i.alu_op == AluOp.ADD]
    assert acc_loads and all(i.y_size == 1 for i in acc_loads)  # one row: never broadcast
    assert len(adds) >= len(acc_loads)  # each loaded row is added by the ALU (maybe reused)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_bias_results_stay_exact(schedule: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (90, 70), dtype=np.int8)
    b = rng.integers(-128, 128, (70, 300), dtype=np.int8)
    bias = rng.integers(-(2**20), 2**20, 300, dtype=np.int32)
    got = run_gemm(a, b, schedule=schedule, out="int32", bias=bias).result
    want = a.astype(np.int64) @ b.astype(np.int64) + bias
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_784x64x128_lead_is_measured_with_the_same_bias_path() -> None:
    # the layer where the stride-0 broadcast inflated the fast schedule's lead most
    t = {s: time_gemm(784, 64, 128, schedule=s, out="int32", has_bias=True).time_ms
         for s in SCHEDULES}
    assert t[FAST] < t["optimized"] < t["tiled2"]
    assert round(t["optimized"] / t[FAST], 2) == 1.85  # 2.26x with the old broadcast path
