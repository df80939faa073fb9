"""The ZCU102 GEMM study's Table 2 (docs/references.md) on the simulated VTA: ten GEMM
shapes x tiled2 / optimized / tall_pipelined.

    .venv/bin/python benchmarks/vta_gemm_table.py [--preset zcu102] [--bus-bits 128] [--check]

Times are the timing model's cycles at the preset's clock (333.33 MHz on the ZCU102: the
study's board), GOPS = 2 M K N / time, % of the 170.7 GOPS peak; DRAM bytes per buffer and
GEMM utilisation per shape; the study's measured milliseconds beside ours (they include the
board's host work, which ours report separately); ratios optimized / tiled2 and
tall_pipelined / optimized. Cycles do not depend on the data, so the table runs the timing
model alone;
``--check`` also runs every GEMM functionally on random data and compares it with numpy.

Writes benchmarks/results/vta_gemm_table.json and vta_gemm_roofline.png.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.vta.board_host import BoardHost
from edgenn.backends.vta.config import PRESETS, VtaConfig
from edgenn.backends.vta.gemm import SCHEDULES, GemmReport, run_gemm, time_gemm
from edgenn.backends.vta.schedules import DEFAULT_SCHEDULE as FAST  # the pipelined one
from edgenn.cli.console import console, progress, table
from edgenn.cli.vta_gemm_cmd import reference
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# (M, K, N): the ZCU102 GEMM study's milliseconds: CPU, 2-stage tiling, optimized 2-stage
PAPER: dict[tuple[int, int, int], tuple[float, float, float]] = {
    (128, 128, 128): (6.7, 1.7, 0.6),
    (256, 256, 256): (51.3, 4.9, 2.6),
    (512, 512, 512): (403.0, 28.9, 10.6),
    (1024, 1024, 1024): (3208.9, 184.8, 58.4),
    (4096, 576, 64): (905.0, 59.9, 19.1),
    (1024, 1152, 128): (448.8, 34.5, 10.3),
    (256, 1152, 128): (112.2, 10.8, 4.7),
    (256, 2304, 256): (446.7, 39.5, 14.2),
    (64, 2304, 512): (225.1, 18.9, 14.4),
    (64, 4608, 512): (452.3, 42.5, 28.1),
}
# (assumed DRAM read latency, bus bits): the sensitivity runs of --sensitivity
SENSITIVITY = ((32, 128), (48, 128), (64, 128), (48, 64))
RESNET = [s for s in PAPER if len(set(s)) > 1]  # the six non-square shapes: ResNet-18 layers
PAPER_KEY = {"tiled2": 1, "optimized": 2}


def measure(shape: tuple[int, int, int], schedule: str, config: VtaConfig,
            check: bool) -> tuple[GemmReport, bool | None]:
    if not check:
        return time_gemm(*shape, schedule=schedule, config=config), None
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(-128, 128, shape[:2], dtype=np.int8)
    b = rng.integers(-128, 128, shape[1:], dtype=np.int8)
    run = run_gemm(a, b, schedule=schedule, config=config)
    return run.report, bool(np.array_equal(run.result, reference(a, b, None, "int8", 0)))


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fit_insn_ns(rows: list[dict[str, Any]]) -> float:
    """The per-instruction host cost that best explains the study's wall times (least squares
    on relative error) given our device times and the board model's other terms."""
    num = den = 0.0
    for r in rows:
        if r["schedule"] not in PAPER_KEY:
            continue
        paper = PAPER[tuple(r["shape"])][PAPER_KEY[r["schedule"]]]
        other = r["board_host_total_ms"] - r["board_host_ms"]["instruction_generation"]
        x = r["instructions"] * 1e-6 / paper  # ms per ns of instruction cost, relative
        num += x * (paper - r["time_ms"] - other) / paper
        den += x * x
    return num / den


def ratio_summary(by: dict[Any, dict[str, Any]], key: str) -> dict[str, Any]:
    """optimized / tiled2 and tall_pipelined / optimized on the time field ``key`` of every row."""
    opt_t2 = [by[s, "tiled2"][key] / by[s, "optimized"][key] for s in PAPER]
    fast_opt = [by[s, "optimized"][key] / by[s, FAST][key] for s in PAPER]
    fast_opt_resnet = [by[s, "optimized"][key] / by[s, FAST][key] for s in RESNET]
    return {"optimized_over_tiled2": {"per_shape": opt_t2, "mean": sum(opt_t2) / len(opt_t2),
                                      "geomean": geomean(opt_t2)},
            "tall_pipelined_over_optimized": {
                "per_shape": fast_opt, "mean": sum(fast_opt) / len(fast_opt),
                "resnet18_mean": sum(fast_opt_resnet) / len(fast_opt_resnet),
                "resnet18_min": min(fast_opt_resnet),
                "resnet18_geomean": geomean(fast_opt_resnet)}}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by = {(tuple(r["shape"]), r["schedule"]): r for r in rows}
    device = ratio_summary(by, "time_ms")
    paper_ratio = [PAPER[s][1] / PAPER[s][2] for s in PAPER]
    device["optimized_over_tiled2"]["paper_mean"] = sum(paper_ratio) / len(paper_ratio)
    return {
        **device,
        "tall_pipelined_percent_of_peak_1024": by[(1024, 1024, 1024), FAST]["percent_of_peak"],
        # device time + the board CPU's modelled work (board_host): the study's measure
        "wall": ratio_summary(by, "wall_ms"),
        "insn_ns_fit": fit_insn_ns(rows),
    }


def sensitivity(preset: str) -> list[dict[str, Any]]:
    """The summary of the timing-only table for every (read latency, bus width) of
    SENSITIVITY: what the conclusions owe to the assumed constants."""
    out = []
    for latency, bus in SENSITIVITY:
        config = VtaConfig.preset(preset).with_bus_bits(bus).replace(dram_read_latency=latency)
        rows = []
        for shape in PAPER:
            for sched in SCHEDULES:
                row = time_gemm(*shape, schedule=sched, config=config).to_json()
                row["shape"] = list(shape)
                rows.append(row)
        by = {(tuple(r["shape"]), r["schedule"]): r for r in rows}
        ratios = ratio_summary(by, "time_ms")
        out.append({"read_latency": latency, "bus_bits": bus,
                    "optimized_over_tiled2_mean": ratios["optimized_over_tiled2"]["mean"],
                    "fast_over_optimized_resnet18_mean":
                        ratios["tall_pipelined_over_optimized"]["resnet18_mean"],
                    "fast_percent_of_peak_1024":
                        by[(1024, 1024, 1024), FAST]["percent_of_peak"]})
    return out


def roofline(rows: list[dict[str, Any]], config: VtaConfig, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    ai = np.logspace(-0.5, 3.2, 200)
    ax.plot(ai, np.minimum(config.peak_gops, config.dram_gbs * ai), "k-", lw=1.5,
            label=f"roof: {config.peak_gops:.1f} GOPS, {config.dram_gbs:.2f} GB/s")
    ax.axvline(config.ridge_ops_per_byte, color="0.7", ls=":", lw=1)
    # the roof a stream of one-tile DMAs sees: 256 bytes per (dispatch + latency + beats)
    tile = config.wgt_elem_bytes
    per_tile = config.dispatch + config.dram_read_latency + tile // config.bus_bytes
    small_gbs = tile / per_tile * config.clock_mhz * 1e6 / 1e9
    ax.plot(ai, np.minimum(config.peak_gops, small_gbs * ai), "k--", lw=1,
            label=f"one 256-B tile per DMA: {small_gbs:.2f} GB/s")
    markers = {"tiled2": "s", "optimized": "^", FAST: "o"}
    colors = plt.cm.tab10(np.linspace(0, 1, 10))
    shapes = list(PAPER)
    for r in rows:
        c = colors[shapes.index(tuple(r["shape"]))]
        ax.loglog(r["ops_per_byte"], r["gops"], markers[r["schedule"]], color=c, ms=7,
                  mec="k", mew=0.5)
    for s, c in zip(shapes, colors, strict=True):
        ax.plot([], [], "o", color=c, label="x".join(map(str, s)))
    for name, m in markers.items():
        ax.plot([], [], m, color="w", mec="k", label=name)
    ax.set_xlabel("arithmetic intensity (ops per DRAM byte, all buffers)")
    ax.set_ylabel("GOPS (simulated)")
    ax.set_title(f"VTA GEMM roofline: {config.preset_name}, {config.clock_mhz:.0f} MHz, "
                 f"{config.bus_bits}-bit AXI")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=tuple(PRESETS), default="zcu102")
    ap.add_argument("--bus-bits", type=int, default=None)
    ap.add_argument("--check", action="store_true", help="also run functionally vs numpy")
    ap.add_argument("--read-latency", type=int, default=None,
                    help="override the assumed DRAM read latency (sensitivity runs)")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also time every shape under other read latencies / bus widths "
                         "(SENSITIVITY) and record their summaries")
    ap.add_argument("--out", default=str(RESULTS / "vta_gemm_table.json"))
    args = ap.parse_args()
    config = VtaConfig.preset(args.preset)
    if args.bus_bits:
        config = config.with_bus_bits(args.bus_bits)
    if args.read_latency is not None:
        config = config.replace(dram_read_latency=args.read_latency)
    rows: list[dict[str, Any]] = []
    jobs = [(s, sched) for s in PAPER for sched in SCHEDULES]
    with progress("VTA Table 2", len(jobs)) as advance:
        for shape, schedule in jobs:
            report, ok = measure(shape, schedule, config, args.check)
            row = report.to_json()
            row["shape"] = list(shape)
            row["paper_ms"] = PAPER[shape][PAPER_KEY[schedule]] if schedule in PAPER_KEY else None
            if ok is not None:
                row["bit_exact"] = ok
            rows.append(row)
            advance()
    summary = summarise(rows)
    by = {(tuple(r["shape"]), r["schedule"]): r for r in rows}
    head = ["M, K, N", "paper CPU"]
    for sched in SCHEDULES:
        head += [f"{sched} ms", "paper" if sched in PAPER_KEY else "", "GOPS", "% peak"]
    body = []
    for shape in PAPER:
        line: list[Any] = [", ".join(map(str, shape)), f"{PAPER[shape][0]:.1f}"]
        for sched in SCHEDULES:
            r = by[shape, sched]
            line += [f"{r['time_ms']:.3f}", f"{r['paper_ms']:.1f}" if r["paper_ms"] else "",
                     f"{r['gops']:.1f}", f"{r['percent_of_peak']:.1f}"]
        body.append(line)
    console.print(table(f"Table 2 on the simulated VTA ({config.preset_name}, "
                        f"{config.clock_mhz:.2f} MHz, {config.bus_bits}-bit AXI; paper: ZCU102 "
                        f"wall time incl. host)", head, body))
    traffic = [[", ".join(map(str, s)), sched,
                *(f"{by[s, sched]['dram_bytes'][k]:,}" for k in ("inp", "wgt", "out", "acc",
                                                                 "uop", "insn")),
                f"{100 * by[s, sched]['gemm_utilization']:.1f}%",
                f"{by[s, sched]['ops_per_byte']:.1f}", str(by[s, sched]["instructions"])]
               for s in PAPER for sched in SCHEDULES]
    console.print(table("DRAM bytes per buffer, GEMM utilisation, arithmetic intensity",
                        ["M, K, N", "schedule", "inp", "wgt", "out", "acc", "uop", "insn",
                         "util", "ops/B", "insns"], traffic, right_align_from=2))
    o2 = summary["optimized_over_tiled2"]
    oo = summary["tall_pipelined_over_optimized"]
    console.print(f"optimized / tiled2: mean {o2['mean']:.2f}x (geomean {o2['geomean']:.2f}x; "
                  f"paper mean {o2['paper_mean']:.2f}x)")
    console.print(f"tall_pipelined / optimized: mean {oo['mean']:.2f}x; ResNet-18 shapes mean "
                  f"{oo['resnet18_mean']:.2f}x, min {oo['resnet18_min']:.2f}x")
    peak = summary["tall_pipelined_percent_of_peak_1024"]
    console.print(f"tall_pipelined on 1024^3: {peak:.1f}% of peak")
    wall = [[", ".join(map(str, s)),
             *(f"{by[s, sched]['wall_ms']:.2f}" for sched in SCHEDULES),
             f"{PAPER[s][1]:.1f}", f"{PAPER[s][2]:.1f}",
             f"{by[s, 'tiled2']['wall_ms'] / by[s, 'optimized']['wall_ms']:.2f}x",
             f"{PAPER[s][1] / PAPER[s][2]:.2f}x"] for s in PAPER]
    console.print(table("Board wall time (model) = device + board host work (packing, "
                        "instruction generation, cache flush, launch), ms",
                        ["M, K, N", *SCHEDULES, "paper tiled2", "paper opt", "opt/tiled2",
                         "paper"], wall, right_align_from=1))
    w = summary["wall"]
    console.print(f"wall: optimized / tiled2 mean {w['optimized_over_tiled2']['mean']:.2f}x; "
                  f"tall_pipelined / optimized ResNet-18 shapes mean "
                  f"{w['tall_pipelined_over_optimized']['resnet18_mean']:.2f}x; "
                  f"per-instruction host "
                  f"cost fitted to the study: {summary['insn_ns_fit']:.0f} ns "
                  f"(model uses {BoardHost().insn_ns:.0f} ns)")
    if args.check:
        bad = [r for r in rows if not r.get("bit_exact")]
        console.print("bit-exact vs numpy: " + ("all" if not bad else f"{len(bad)} FAILED"))
    png = Path(args.out).with_name("vta_gemm_roofline.png")
    roofline(rows, config, png)
    payload = {"config": config.describe(), "timing_constants": config.timing_constants(),
               "board_host_constants": BoardHost().constants(),
               "assumed": config.assumed_constants(), "rows": rows, "summary": summary,
               "paper": {"x".join(map(str, s)): v for s, v in PAPER.items()},
               "checked": bool(args.check), "date": dt.date.today().isoformat(),
               "schedules": list(SCHEDULES), "fast_schedule": FAST}
    if args.sensitivity:
        payload["sensitivity"] = sensitivity(args.preset)
    atomic_write_bytes(args.out, (json.dumps(with_version(payload), indent=1) + "\n").encode())
    console.print(f"wrote {args.out} and {png}")


if __name__ == "__main__":
    main()
