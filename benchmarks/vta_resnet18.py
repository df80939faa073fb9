"""ResNet-18 int8 on the VTA-class accelerator simulator vs the host reference runtime.

ResNet-18 (224x224, random He-initialised weights, seeded) is quantized to int8 on a few
random calibration images; every Conv2D / FullyConnected runs on the simulated accelerator
(im2col on the host, GEMM with int32 read-back, requantization on the host) for each GEMM
schedule, the rest on the reference runtime. Reported per layer and in total: simulated
accelerator time and GOPS at the preset's clock (333 MHz ZCU102 by default), the measured host
time around it, and the reference runtime's own measured time for the same layer in the same
run. Also measured: what reading the int32 accumulators back costs against an int8 store
(the price of bit-exact requantization on the CPU). Every run is checked bit-exact against the
reference runtime. Host times are the minimum over many runs with BLAS on one thread
(``--blas-threads``). Writes benchmarks/results/vta_resnet18.json.

    .venv/bin/python benchmarks/vta_resnet18.py [--size 224] [--repeats 5] [--preset zcu102]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from edgenn.backends.ref import RefExecutable, compile_ref
from edgenn.backends.vta.executable import compile_vta
from edgenn.backends.vta.gemm import SCHEDULES, time_gemm
from edgenn.backends.vta.schedules import DEFAULT_SCHEDULE as FAST  # the pipelined one
from edgenn.cli.console import console, progress, table
from edgenn.ir import Graph
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
# the ZCU102 GEMM study's ResNet-18 figures
PAPER = {"speedup_vs_cpu": 2.3, "layer_gops": (20.0, 35.0)}


def resnet18_int8(size: int, seed: int, calibration: int) -> Graph:
    import onnx

    from edgenn.api import load_model, quantize_model
    from edgenn.models.zoo import resnet18

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resnet18.onnx"
        onnx.save(resnet18(seed=seed, size=size), path)
        graph = load_model(path)
    rng = np.random.default_rng(seed)
    cal = rng.standard_normal((calibration, 3, size, size)).astype(np.float32)
    return quantize_model(graph, cal)


class RefTimer:
    """Host time of every reference layer: the least disturbed of many runs. Samples are taken
    at several points of the benchmark (the machine is shared: interference comes and goes,
    and only ever adds time, hence the minimum). The first run is a warm-up (lazy imports,
    BLAS start-up, first-touch allocations) and is not timed."""

    def __init__(self, graph: Graph, x: np.ndarray) -> None:
        self.exe: RefExecutable = compile_ref(graph)
        self.x = x
        self.samples: list[list[float]] = [[] for _ in self.exe.layers]
        self.outputs = self._run(timed=False)

    def _run(self, timed: bool) -> list[np.ndarray]:
        values = {self.exe.graph.inputs[0]: self.x}
        for i, layer in enumerate(self.exe.layers):
            args = [values[t.name] for t in layer.inputs if t is not None and not t.is_const]
            start = time.perf_counter()
            outs = layer.run(*args)
            if timed:
                self.samples[i].append(1e3 * (time.perf_counter() - start))
            for t, arr in zip(layer.outputs, outs, strict=True):
                values[t.name] = arr
        return [values[name] for name in self.exe.graph.outputs]

    def sample(self, runs: int) -> None:
        for _ in range(runs):
            self._run(timed=True)

    def layer_ms(self) -> list[float]:
        return [min(s) for s in self.samples]


def int8_store_cost(exe: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """The same GEMM with an int8 store (ALU shift + clip on the accelerator, not bit-exact
    with TFLite): what the int32 read-back of the bit-exact path costs in cycles and bytes."""
    report = time_gemm(entry["m"], entry["k"], entry["n"], schedule=exe.target.schedule,
                       config=exe.target.config, out="int8", shift=8, has_bias=True)
    groups = entry["groups"]
    return {"cycles": groups * report.cycles, "ms": groups * report.time_ms,
            "out_bytes": groups * report.dram_bytes["out"]}


def run_schedule(graph: Graph, x: np.ndarray, ref_out: Any, schedule: str,
                 args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """One simulated inference: its report (with the int8-store comparison) and its log."""
    exe = compile_vta(graph, preset=args.preset, schedule=schedule, bus_bits=args.bus_bits)
    start = time.perf_counter()
    out = exe.run(x)
    report = exe.report()
    report["simulation_wall_s"] = time.perf_counter() - start
    report["bit_exact"] = all(np.array_equal(a, b) for a, b in zip(out, ref_out, strict=True))
    for entry in report["layers"]:
        if entry["where"] == "vta":
            entry["int8_store"] = int8_store_cost(exe, entry)
    return report, exe.log()


def host_repeats(graph: Graph, x: np.ndarray, schedule: str, args: argparse.Namespace,
                 count: int) -> list[list[float]]:
    """Per-layer host time of ``count`` more runs (the host work is the same for every
    schedule, so the fastest one to simulate serves)."""
    exe = compile_vta(graph, preset=args.preset, schedule=schedule, bus_bits=args.bus_bits)
    runs = []
    for _ in range(count):
        exe.run(x)
        runs.append([e["host_ms"] for e in exe.report()["layers"]])
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--calibration", type=int, default=4, help="random calibration images")
    parser.add_argument("--repeats", type=int, default=5,
                        help="host timing repeats (reference runtime, host side of vta runs)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads of the host runs (default 1: on a shared, "
                             "oversubscribed machine a threaded BLAS is slower and noisier)")
    parser.add_argument("--preset", default="zcu102")
    parser.add_argument("--bus-bits", type=int, default=None)
    parser.add_argument("--schedules", default=",".join(SCHEDULES))
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/vta_resnet18.json"))
    args = parser.parse_args()
    with threadpool_limits(limits=args.blas_threads):
        run_benchmark(args)


def run_benchmark(args: argparse.Namespace) -> None:
    schedules = [s for s in args.schedules.split(",") if s]

    graph = resnet18_int8(args.size, args.seed, args.calibration)
    x = np.random.default_rng(args.seed + 1).integers(
        -128, 128, size=(1, *graph.external_shape(graph.inputs[0])[1:]), dtype=np.int8)
    results: dict[str, Any] = {}
    logs: dict[str, list[str]] = {}
    extra = max(0, args.repeats - len(schedules))
    with progress("ResNet-18 on VTA", 2 + len(schedules)) as advance:
        ref = RefTimer(graph, x)
        ref.sample(args.repeats)
        advance()
        for schedule in schedules:
            results[schedule], logs[schedule] = run_schedule(graph, x, ref.outputs, schedule,
                                                             args)
            ref.sample(args.repeats)
            advance()
        host_runs = [[e["host_ms"] for e in r["layers"]] for r in results.values()]
        host_runs += host_repeats(graph, x, FAST if FAST in schedules else schedules[-1],
                                  args, extra)
        ref.sample(args.repeats)
        advance()
    ref_ms = ref.layer_ms()
    # why the minimum over runs: the host work does not depend on the schedule, and on a
    # shared machine interference only adds time.
    host_ms = [min(col) for col in zip(*host_runs, strict=True)]

    layers = []
    for i, node in enumerate(graph.nodes):
        row: dict[str, Any] = {"index": i, "name": node.name, "op": node.op,
                               "ref_ms": ref_ms[i], "host_ms": host_ms[i]}
        for schedule, report in results.items():
            row[schedule] = report["layers"][i]
        layers.append(row)
    first = results[schedules[0]]
    on_vta = [i for i, e in enumerate(first["layers"]) if e["where"] == "vta"]
    host = {"total_ms": sum(host_ms), "offloaded_layers_ms": sum(host_ms[i] for i in on_vta),
            "cpu_layers_ms": sum(h for i, h in enumerate(host_ms) if i not in on_vta),
            "runs": len(host_runs)}
    ref_total = sum(ref_ms)
    totals = {}
    for schedule, report in results.items():
        t = report["totals"]
        offloaded = [report["layers"][i] for i in on_vta]
        int32_cycles = sum(e["cycles"] for e in offloaded)
        int8_cycles = sum(e["int8_store"]["cycles"] for e in offloaded)
        total_ms = t["vta_ms"] + host["total_ms"]
        totals[schedule] = {
            "vta_ms": t["vta_ms"], "vta_cycles": t["vta_cycles"], "vta_gops": t["vta_gops"],
            "host_ms": host["total_ms"], "total_ms": total_ms,
            "speedup_vs_ref_runtime": ref_total / total_ms,
            "vta_only_speedup_vs_ref_runtime": ref_total / t["vta_ms"],
            "dram_bytes": t["dram_bytes"], "bit_exact": report["bit_exact"],
            # modelled board CPU work to drive the accelerator (not in total_ms; board_host.py)
            "board_control_ms": t["board_control_ms"],
            "total_with_board_control_ms": total_ms + t["board_control_ms"],
            "int8_store_cycles": int8_cycles,
            "int32_readback_extra_cycles_pct": 100.0 * (int32_cycles / int8_cycles - 1.0),
            "host_ms_this_run": t["host_ms"], "simulation_wall_s": report["simulation_wall_s"],
        }
    print_tables(layers, totals, schedules, ref_total)
    out = {
        "model": "resnet18", "date": dt.date.today().isoformat(), "size": args.size,
        "seed": args.seed, "preset": first["preset"],
        "clock_mhz": first["clock_mhz"], "bus_bits": first["bus_bits"],
        "ref_runtime_ms": ref_total, "ref_runtime_runs": len(ref.samples[0]), "host": host,
        "repeats": args.repeats, "blas_threads": args.blas_threads,
        "load_average_at_end": os.getloadavg(),
        "totals": totals, "layers": layers, "assumed": first["assumed"], "paper": PAPER,
        "time_note": "vta_ms is simulated (timing model at the preset's clock); host_ms and "
                     "ref_ms are measured on this machine (numpy), the minimum over repeats; "
                     "total_ms = vta_ms + host_ms",
        "log": logs,
    }
    atomic_write_bytes(args.json, json.dumps(with_version(out), indent=2).encode())
    console.print(f"wrote {args.json}")


def print_tables(layers: list[dict[str, Any]], totals: dict[str, Any], schedules: list[str],
                 ref_total: float) -> None:
    last = schedules[-1]
    rows = []
    for row in layers:
        e = row[last]
        if e["where"] != "vta":
            continue
        cells = [row["index"], f"{e['m']}x{e['k']}x{e['n']}", f"{row['ref_ms']:.2f}",
                 f"{row['host_ms']:.2f}"]
        cells += [f"{row[s]['vta_ms']:.3f}" for s in schedules]
        cells += [f"{e['gops']:.1f}", f"{100 * e['gemm_utilization']:.0f}%"]
        if len(schedules) > 1:
            cells.append(f"{row[schedules[-2]]['vta_ms'] / e['vta_ms']:.2f}x")
        cells.append(f"{100 * (e['cycles'] / e['int8_store']['cycles'] - 1):+.0f}%")
        rows.append(cells)
    cols = ["#", "GEMM MxKxN", "ref ms", "host ms", *(f"{s} ms" for s in schedules),
            f"{last} GOPS",
            f"{last} util"]
    if len(schedules) > 1:
        cols.append(f"{schedules[-2]}/{last}")
    cols.append("int32 out cost")
    console.print(table("ResNet-18 int8, offloaded layers: VTA ms simulated; ref ms (whole layer "
                        "on the reference runtime) and host ms (im2col + requant) measured",
                        cols, rows, right_align_from=1))
    trows = [("reference runtime (host)", "", "", "", f"{ref_total:.1f}", "1.00x", "", "")]
    for s in schedules:
        t = totals[s]
        trows.append((
            s, f"{t['vta_ms']:.2f}", f"{t['vta_gops']:.1f}", f"{t['host_ms']:.1f}",
            f"{t['total_ms']:.1f}", f"{t['speedup_vs_ref_runtime']:.2f}x",
            f"{t['vta_only_speedup_vs_ref_runtime']:.2f}x", "yes" if t["bit_exact"] else "NO",
        ))
    console.print(table("ResNet-18 int8 in total", [
        "run", "VTA ms (sim)", "VTA GOPS", "host ms", "total ms", "ref/total", "ref/VTA",
        "bit-exact"], trows, right_align_from=1))


if __name__ == "__main__":
    main()
