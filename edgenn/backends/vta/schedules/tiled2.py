"""``tiled2``: plain two-stage tiling, Algorithm 2 of the ZCU102 GEMM study.

Stage 1 cuts C into blocks sized to the accumulator buffer (the k loop accumulates on chip);
stage 2 walks the block's 16x16 sub-tile triples: for every (m, k, n) triple one 16x16 A tile
and one 16x16 B tile (blocks of equal size) are loaded and multiplied by one GEMM of 16
micro-ops (one per row of the A tile). After its last k block the C block is requantised and
stored.

There is one buffer per operand, so LOAD and GEMM strictly alternate through the tokens
(load -> compute "data ready", compute -> load "buffer consumed"), as in VTA's own
``blocked_gemm_test`` with one virtual thread: only the STORE of a C block overlaps anything.
"""

from __future__ import annotations

from typing import Any

from edgenn.backends.vta.isa import MemType
from edgenn.backends.vta.runtime import ProgramBuilder
from edgenn.backends.vta.schedules.common import (
    GemmProblem,
    Operands,
    Sync,
    acc_block,
    gemm_kernel,
    init_acc,
    requantize,
    store_planes,
)


def build(problem: GemmProblem, b: ProgramBuilder, ops: Operands) -> dict[str, Any]:
    config = b.config
    # C block: as many columns as acc allows, then as many row groups (bias scratch row after)
    bn, bm_groups = acc_block(problem, config.acc_depth, problem.mt)
    sync = Sync.of(b)
    consumed: int | None = None  # token of the last GEMM (it frees the single A / B buffers)
    acc_free: int | None = None
    bias_cols: int | None = None  # the n0 whose bias the scratch row holds
    for mt0 in range(0, problem.mt, bm_groups):
        groups = min(bm_groups, problem.mt - mt0)
        rows = min(16 * groups, problem.m - 16 * mt0)
        for n0 in range(0, problem.nb, bn):
            tn = min(bn, problem.nb - n0)
            sync.st2c.wait(acc_free)
            init_acc(b, problem, ops, 0, 16 * groups, tn, n0, scratch=16 * bm_groups * bn,
                     load_bias=bias_cols != n0)
            bias_cols = n0
            for kb in range(problem.kb):
                for g in range(groups):
                    for j in range(tn):
                        sync.c2ld.wait(consumed)
                        b.load_2d(MemType.INP, 0, ops.a_tile(problem, mt0 + g, kb), 1, 16, 16)
                        b.load_2d(MemType.WGT, 0, ops.b_tile(problem, n0 + j, kb), 1, 1, 1)
                        sync.ld2c.wait(sync.ld2c.signal())
                        b.gemm(gemm_kernel(16 * g * tn + j, 0, 0, 1, 1, 1, acc_row_stride=tn))
                        consumed = sync.c2ld.signal()
            requantize(b, problem, 0, rows, tn)
            acc_free = store_planes(b, sync, problem, ops, 0, rows, tn, 16 * mt0, n0)
    return {"c_block": [16 * bm_groups, 16 * bn], "sub_tile": [16, 16, 16],
            "buffers": "single (load and GEMM alternate)"}
