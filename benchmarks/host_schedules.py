"""Thread schedules on the host, without tuning: what pinning, shares and emulation do.

For each model (random weights, ImageNet shape) with the default kernel of every layer:
the real cores (1 pinned thread, all cores pinned, the ACL-like default: unpinned) and an
emulated big.LITTLE (1+1:0.43: the big core alone, the LITTLE core alone, the ACL-like default,
an equal split and the capacity-proportional 70/30 split), plus the pool's dispatch overhead.
The point is the ratios: LITTLE / big should be ~1/0.43 = 2.33, equal split / 70-30 ~1.66.

    .venv/bin/python benchmarks/host_schedules.py [--models mobilenet_v2,resnet18]
        [--size 224] [--repeats 10] [--out benchmarks/results/host_schedules.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgenn.api import load_model
from edgenn.backends.host.executable import HostExecutable, compile_host
from edgenn.backends.host.schedule import (
    ThreadSchedule,
    default_schedule,
    parse_schedule,
    single_cluster,
    split_partitions,
)
from edgenn.backends.host.threadpool import Dispatch, address, release_caller
from edgenn.backends.host.topology import Topology, detect_topology, parse_emulation
from edgenn.backends.ref import compile_ref
from edgenn.cc import Source, load_library
from edgenn.cli.console import console, table
from edgenn.ir import Graph
from edgenn.models import zoo
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
EMULATION = "1+1:0.43"


def build(name: str, size: int, tmp: Path) -> Graph:
    path = tmp / f"{name}.onnx"
    onnx.save(getattr(zoo, name)(size=size), str(path))
    return load_model(path)


def interleaved_ms(exes: dict[str, HostExecutable], repeats: int) -> dict[str, float]:
    """Median latency of each executable, timed round-robin (one run of each per round) so
    that the load of other processes on a shared machine falls on all of them alike."""
    times: dict[str, list[float]] = {label: [] for label in exes}
    for exe in exes.values():
        exe.measure(repeats=1, warmup=2, cpu_repeats=0)
    for _ in range(repeats):
        for label, exe in exes.items():
            times[label].append(exe.measure(repeats=1, warmup=0, cpu_repeats=0).median_ms)
    return {label: statistics.median(t) for label, t in times.items()}


def cpu_critical_ms(exes: dict[str, HostExecutable], repeats: int) -> dict[str, float]:
    """The load-independent estimate (``HostBenchResult.cpu_critical_ms``) of each."""
    out = {}
    for label, exe in exes.items():
        value = exe.measure(repeats=1, warmup=0, cpu_repeats=repeats).cpu_critical_ms
        assert value is not None
        out[label] = value
    return out


def ref_ms(graph: Graph, repeats: int) -> float:
    exe = compile_ref(graph)
    x = np.random.default_rng(0).random((1, *graph.external_shape(graph.inputs[0])[1:]),
                                        dtype=np.float32)
    times = []
    for _ in range(max(3, repeats // 3)):
        start = time.perf_counter()
        exe.run(x)
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def dispatch_overhead_us(topology: Topology) -> dict[str, float]:
    """Median time of an empty layer through the pool, Python call included."""
    src = ("#include <stdint.h>\nvoid noop_run(const float *a, const float *b, const float *c,"
           " float *d, float *e, int32_t f, int32_t g) { (void)a; (void)b; (void)c; (void)d;"
           " (void)e; (void)f; (void)g; }\n")
    with tempfile.TemporaryDirectory() as tmp:
        lib = load_library([Source("noop.c", src)], ["-O2"], cache_dir=tmp, name="noop")
        fn = ctypes.cast(lib.noop_run, ctypes.c_void_p).value
        assert fn
        out: dict[str, float] = {}
        x, y = np.zeros(1, np.float32), np.zeros(8, np.float32)
        n = len(topology.clusters[0].cpus)
        for label, sched in (("1 thread", single_cluster(0, 1)),
                             (f"{n} threads pinned", single_cluster(0, n)),
                             (f"{n} threads unpinned", default_schedule(topology, n))):
            d = Dispatch(fn, None, None, split_partitions(sched, topology, 8), 0)
            times = []
            at_x, at_y = address(x), address(y)
            for _ in range(2000):  # as inside a network: addresses known, caller kept bound
                start = time.perf_counter_ns()
                d.run_at(at_x, at_y, keep_bound=True)
                times.append((time.perf_counter_ns() - start) / 1e3)
            release_caller()
            out[f"{label}: median"] = statistics.median(times[200:])
            out[f"{label}: min"] = min(times[200:])
    return out


def measure_model(graph: Graph, repeats: int) -> dict[str, Any]:
    real = detect_topology()
    n = len(real.cpus)
    emu = parse_emulation(EMULATION)
    configs: dict[str, tuple[str | ThreadSchedule, Topology]] = {
        "real: 1 thread pinned": (single_cluster(0, 1), real),
        f"real: {n} threads pinned": (single_cluster(0, n), real),
        f"real: default ({default_schedule(real).describe()})": ("default", real),
    }
    emulated = {
        "big only": single_cluster(0, 1),
        "LITTLE only": single_cluster(1, 1),
        f"default ({default_schedule(emu).describe()})": "default",
        "equal split 50/50": parse_schedule("0:1:0.5+1:1:0.5"),
        "capacity split 70/30": parse_schedule("0:1:0.7+1:1:0.3"),
    }
    for label, sched in emulated.items():
        configs[f"emulated {EMULATION}: {label}"] = (sched, emu)
    exes = {label: compile_host(graph, schedule=sched, topology=topo)
            for label, (sched, topo) in configs.items()}
    figures = {"ref (numpy)": ref_ms(graph, repeats), **interleaved_ms(exes, repeats)}
    cpu = cpu_critical_ms(exes, max(3, repeats // 2))
    return {"latency_ms": figures, "ratios": ratios(figures, n),
            "cpu_critical_ms": cpu, "cpu_critical_ratios": ratios(cpu, n)}


def ratios(figures: dict[str, float], n: int) -> dict[str, float]:
    e = f"emulated {EMULATION}: "
    default_key = next(k for k in figures if k.startswith(e + "default"))
    out = {
        f"{n} threads pinned vs 1": figures["real: 1 thread pinned"]
        / figures[f"real: {n} threads pinned"],
        "emulated LITTLE / big (ideal 2.33)": figures[e + "LITTLE only"]
        / figures[e + "big only"],
        "emulated big / 70-30 (ideal 1.43)": figures[e + "big only"]
        / figures[e + "capacity split 70/30"],
        "emulated equal / 70-30 (ideal 1.66)": figures[e + "equal split 50/50"]
        / figures[e + "capacity split 70/30"],
        "emulated default / 70-30": figures[default_key] / figures[e + "capacity split 70/30"],
    }
    if "ref (numpy)" in figures:
        out["host 1 thread vs ref"] = figures["ref (numpy)"] / figures["real: 1 thread pinned"]
    return out


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mobilenet_v2,resnet18")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                              "host_schedules.json"))
    args = parser.parse_args()
    real = detect_topology()
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "repeats": args.repeats,
        "topology": real.describe(), "emulation": EMULATION, "size": args.size,
        "note": "default kernel configuration per layer; emulated figures: LITTLE threads "
                "busy-wait (1/c - 1) x their CPU time (threadpool.c); CPU critical path: per "
                "layer the busiest thread's CPU time, summed (load-independent estimate)",
        "dispatch_overhead_us": dispatch_overhead_us(real), "models": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            graph = build(name, args.size, Path(tmp))
            result["models"][name] = data = measure_model(graph, args.repeats)
            cpu = data["cpu_critical_ms"]
            console.print(table(f"{name} {args.size}x{args.size}",
                                ["configuration", "ms", "CPU critical path ms"],
                                [(k, f"{v:.2f}", f"{cpu[k]:.2f}" if k in cpu else "")
                                 for k, v in data["latency_ms"].items()]))
            console.print(table(f"{name}: ratios", ["ratio", "wall clock", "CPU critical path"],
                                [(k, f"{v:.2f}", _fmt(data["cpu_critical_ratios"].get(k)))
                                 for k, v in data["ratios"].items()]))
    console.print(table("pool dispatch overhead (empty layer, Python call included)",
                        ["schedule", "us"],
                        [(k, f"{v:.1f}") for k, v in result["dispatch_overhead_us"].items()]))
    atomic_write_bytes(args.out, json.dumps(with_version(result), indent=2).encode())
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
