"""``optimized``: Algorithm 3 of the ZCU102 GEMM study (docs/references.md).

A 16 x kblock panel of A is loaded once and every 16x16 tile of B for all of N is streamed
through it (one LOAD per tile); the accumulator buffer is filled with as many 16-row output
panels as it holds before they are requantised and stored. LOAD and GEMM are pipelined:
the A panel and the B tiles of one column are double-buffered, and the tokens say when a
column of tiles is loaded (load -> compute) and when its buffer is consumed (compute -> load).

Its arithmetic intensity is 2 x 16 x 256 ops per 256-byte B tile = 32 ops/byte: the ridge
point of the 128-bit bus; and each tile is its own DMA, so the read latency is paid per tile.
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
    load_a,
    requantize,
    store_planes,
)


def build(problem: GemmProblem, b: ProgramBuilder, ops: Operands) -> dict[str, Any]:
    config = b.config
    tk_max = config.inp_depth // (2 * 16)  # two 16-row A panels (double buffer)
    tk_max = min(tk_max, config.wgt_depth // 2)  # two columns of B tiles (double buffer)
    tk_max = min(tk_max, problem.kb)
    tn_acc, panels_per_fill = acc_block(problem, config.acc_depth, problem.mt)
    sync = Sync.of(b)
    inp_last: list[int | None] = [None, None]
    wgt_last: list[int | None] = [None, None]
    acc_free: int | None = None
    panels_loaded = columns_loaded = 0
    bias_cols: int | None = None  # the n0 whose bias the scratch row holds
    for n0 in range(0, problem.nb, tn_acc):
        tn = min(tn_acc, problem.nb - n0)
        for mt0 in range(0, problem.mt, panels_per_fill):
            panels = min(panels_per_fill, problem.mt - mt0)
            rows = min(16 * panels, problem.m - 16 * mt0)
            sync.st2c.wait(acc_free)
            init_acc(b, problem, ops, 0, 16 * panels, tn, n0,
                     scratch=16 * panels_per_fill * tn_acc, load_bias=bias_cols != n0)
            bias_cols = n0
            for p in range(panels):
                for k0 in range(0, problem.kb, tk_max):
                    tk = min(tk_max, problem.kb - k0)
                    h = panels_loaded % 2
                    panels_loaded += 1
                    sync.c2ld.wait(inp_last[h])
                    load_a(b, problem, ops, h * 16 * tk_max, mt0 + p, 1, k0, tk)
                    for j in range(tn):
                        s = columns_loaded % 2
                        columns_loaded += 1
                        sync.c2ld.wait(wgt_last[s])
                        for kk in range(tk):  # stream the column tile by tile
                            b.load_2d(MemType.WGT, s * tk_max + kk,
                                      ops.b_tile(problem, n0 + j, k0 + kk), 1, 1, 1)
                        sync.ld2c.wait(sync.ld2c.signal())
                        b.gemm(gemm_kernel(16 * p * tn + j, h * 16 * tk_max, s * tk_max, 1, tk, 1,
                                           acc_row_stride=tn))
                        inp_last[h] = wgt_last[s] = sync.c2ld.signal()
            requantize(b, problem, 0, rows, tn)
            acc_free = store_planes(b, sync, problem, ops, 0, rows, tn, 16 * mt0, n0)
    return {"a_panel": [16, 16 * tk_max], "acc_fill": [16 * panels_per_fill, 16 * tn_acc],
            "b_stream": "one 16x16 tile per LOAD", "buffers": "A panel and B column doubled"}
