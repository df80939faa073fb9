"""``edgenn vta-gemm --m M --k K --n N --schedule tiled2|optimized|tall_pipelined [--check]
[--json OUT]``: one int8 GEMM on the simulated VTA-class accelerator, with its timing report.

``--check`` compares the result with numpy (int32 accumulation, then the same shift and clip)
and exits 2 on any difference. Times are the timing model's cycles at the preset's clock.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from edgenn.backends.vta.config import DEFAULT_PRESET, PRESETS, VtaConfig
from edgenn.backends.vta.gemm import SCHEDULES, GemmRun, run_gemm
from edgenn.backends.vta.schedules import DEFAULT_SCHEDULE
from edgenn.cli.console import console, table
from edgenn.cli.options import add_json_option, staged_path, write_json
from edgenn.errors import EdgennError
from edgenn.outputs import staged_files
from edgenn.utils import atomic_write_bytes


class CheckFailed(EdgennError):
    """``--check`` found a difference between the accelerator and numpy."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("vta-gemm", help="run one int8 GEMM on the simulated VTA accelerator")
    p.add_argument("--m", type=int, required=True, help="rows of A and C")
    p.add_argument("--k", type=int, required=True, help="columns of A, rows of B")
    p.add_argument("--n", type=int, required=True, help="columns of B and C")
    p.add_argument("--schedule", choices=SCHEDULES, default=DEFAULT_SCHEDULE,
                   help=f"GEMM schedule (default {DEFAULT_SCHEDULE})")
    p.add_argument("--preset", choices=tuple(PRESETS), default=DEFAULT_PRESET,
                   help="board: clock and AXI width")
    p.add_argument("--bus-bits", type=int, default=None, help="override the preset's AXI width")
    p.add_argument("--output-type", dest="out", choices=("int8", "int32"),
                   default="int8",
                   help="int8: shift and clip on the ALU; int32: whole accumulators")
    p.add_argument("--shift", type=int, default=0, help="int8 output: arithmetic right shift")
    p.add_argument("--bias", action="store_true", help="add a random int32 bias per column")
    p.add_argument("--seed", type=int, default=0, help="seed of the random operands")
    p.add_argument("--check", action="store_true",
                   help="compare with numpy; exit 2 on any difference")
    add_json_option(p, "the report")
    p.add_argument("--dump", default=None, metavar="TXT",
                   help="write the disassembled instruction stream here")
    p.set_defaults(func=run)


def reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, out: str,
              shift: int) -> np.ndarray:
    """numpy's answer: int32 accumulation, plus bias, then shift and clip for int8."""
    acc = a.astype(np.int64) @ b.astype(np.int64)
    if bias is not None:
        acc = acc + bias
    acc32 = acc.astype(np.int32)  # the accelerator wraps at 32 bits; so does this
    if out == "int32":
        return acc32
    return np.clip(acc32 >> shift, -128, 127).astype(np.int8)


def run(args: argparse.Namespace) -> int:
    if min(args.m, args.k, args.n) < 1:
        raise EdgennError(f"--m/--k/--n must be positive, got {args.m}x{args.k}x{args.n}")
    config = VtaConfig.preset(args.preset)
    if args.bus_bits is not None:
        config = config.with_bus_bits(args.bus_bits)
    rng = np.random.default_rng(args.seed)
    a = rng.integers(-128, 128, (args.m, args.k), dtype=np.int8)
    b = rng.integers(-128, 128, (args.k, args.n), dtype=np.int8)
    bias = rng.integers(-(1 << 20), 1 << 20, args.n, dtype=np.int32) if args.bias else None
    gemm = run_gemm(a, b, schedule=args.schedule, config=config, out=args.out,
                    shift=args.shift, bias=bias)
    print_report(gemm)
    info = gemm.report.to_json()
    if args.check:
        expected = reference(a, b, bias, args.out, args.shift)
        bad = int(np.count_nonzero(gemm.result != expected))
        info["check"] = {"mismatches": bad, "equal": bad == 0}
    # why staged: the report and the dump appear together, or neither (edgenn.outputs)
    with staged_files() as stage:
        write_json(staged_path(stage, args.json), info)
        if args.dump:
            from edgenn.backends.vta.gemm import build_program
            from edgenn.backends.vta.schedules.common import GemmProblem, place_operands

            problem = GemmProblem(args.m, args.k, args.n, args.out, args.shift, args.bias)
            dram, ops = place_operands(problem, config)
            program, _ = build_program(problem, args.schedule, config, dram, ops)
            atomic_write_bytes(stage.path(args.dump),
                               (program.disassemble() + "\n").encode())
    if args.check:
        if info["check"]["mismatches"]:
            raise CheckFailed(f"{info['check']['mismatches']} of {args.m * args.n} outputs differ "
                              f"from numpy ({args.schedule}, {args.m}x{args.k}x{args.n})")
        console.print("check: equal to numpy's int8 matmul (int32 accumulation)")
    return 0


def print_report(gemm: GemmRun) -> None:
    r = gemm.report
    rows = [
        ("schedule", r.schedule),
        ("board", f"{r.preset}, {r.clock_mhz:g} MHz, {r.bus_bits}-bit AXI"),
        ("cycles", f"{r.cycles:,}"), ("time (simulated)", f"{r.time_ms:.4f} ms"),
        ("throughput", f"{r.gops:.1f} GOPS ({r.percent_of_peak:.1f}% of {r.peak_gops:.1f})"),
        ("GEMM utilisation", f"{100 * r.gemm_utilization:.1f}%"),
        ("DRAM bytes", ", ".join(f"{k} {v:,}" for k, v in r.dram_bytes.items())),
        ("busy cycles", ", ".join(f"{k} {v:,}" for k, v in r.module_busy_cycles.items())),
        ("instructions", f"{r.instructions:,}"),
        ("tiling", json.dumps(r.tiling)),
        ("host (this machine)", f"{r.host_pack_ms:.1f} ms packing + instruction generation"),
        ("board host (model)", ", ".join(f"{k} {v:.3f}" for k, v in r.board_host_ms.items())
         + " ms"),
        ("wall (model)", f"{r.wall_ms:.4f} ms = simulated + board host"),
        ("assumed", ", ".join(f"{k}={v:g}" for k, v in r.assumed.items())),
    ]
    console.print(table(f"VTA GEMM {r.m}x{r.k}x{r.n} -> {r.out}", ["", "value"], rows,
                        right_align_from=2))
