"""A numpy stand-in for ``edgenn.backends.vta.gemm.run_gemm`` (same signature), tests only.

It computes what the accelerator computes (int8 x int8, int32 accumulators that wrap, bias
loaded first) with a made-up cycle count: the network code was developed against it before
the simulator existed, and it now checks that ``compile_vta(gemm=...)`` accepts any engine
with ``run_gemm``'s signature.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.backends.vta.gemm import GemmReport, GemmRun


def run_gemm(a: np.ndarray, b: np.ndarray, *, schedule: str = "tall_pipelined", config: Any = None,
             out: str = "int8", shift: int = 0, bias: np.ndarray | None = None) -> GemmRun:
    assert a.dtype == np.int8 and b.dtype == np.int8 and a.shape[1] == b.shape[0]
    m, k = a.shape
    n = b.shape[1]
    acc = a.astype(np.int64) @ b.astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    acc = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    result = np.clip(acc >> shift, -128, 127).astype(np.int8) if out == "int8" else acc
    tiles = m * -(-k // 16) * -(-n // 16)
    cycles = tiles + 100
    ms = cycles / 333.33e3
    return GemmRun(result, GemmReport(
        m=m, k=k, n=n, schedule=schedule, preset="standin", cycles=cycles, time_ms=ms,
        gops=2 * m * k * n / (ms * 1e6), peak_gops=170.7, gemm_utilization=tiles / cycles,
        dram_bytes={"uop": 0, "inp": m * k, "wgt": k * n, "acc": 4 * n,
                    "out": m * n * (4 if out == "int32" else 1)},
        module_busy_cycles={"load": 0, "compute": cycles, "store": 0}, instructions=1,
        assumed={"standin": 1.0}, host_pack_ms=0.0))
