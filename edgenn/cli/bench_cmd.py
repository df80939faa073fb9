"""``edgenn bench MODEL --target cortex-m4 [--clock-mhz 64] [--json OUT]``: per-layer cost."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.targets import CORES
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    device_options,
)
from edgenn.cli.console import console, table
from edgenn.cli.options import add_timing_options
from edgenn.evaluate import bench_inputs
from edgenn.ir import Graph
from edgenn.utils import atomic_write_bytes

CYCLE_MODEL_NOTE = (
    "edgenn's Cortex-M4 cycle model (docs/cycle_model.md, the TRM's cycle rules): zero wait "
    "states; flash wait states, caches, bus contention, unaligned accesses and interrupts "
    "ignored"
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="emulate one inference: cycles per layer, memory")
    p.add_argument("model")
    p.add_argument("--target", required=True, choices=(*CORES, "vta", "host"))
    p.add_argument("--clock-mhz", type=float, default=64.0,
                   help="clock for the ms column (a Cortex-M; vta uses its preset's clock)")
    p.add_argument("--json", default=None, help="write the result as JSON here")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="also write the accuracy-vs-cycles Pareto plot over every skip "
                        "configuration (models with skippable blocks; MNIST accuracy)")
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    add_timing_options(p, "with --target host")
    p.set_defaults(func=run)


def bench_report(graph: Graph, target: str, clock_mhz: float, **options: Any) -> dict[str, Any]:
    """Build, run one inference in the emulator, and collect the figures the JSON promises."""
    exe = compile_model(graph, target=target, **options)
    result = exe.bench(*bench_inputs(graph))
    clock_hz = clock_mhz * 1e6
    built = exe.graph  # after fusion, when asked for: its nodes are the layers that ran
    shapes = {n.name: list(built.tensor(n.outputs[0]).shape) for n in built.nodes}
    skipped_blocks = set(getattr(result, "skip", []) or [])
    skipped_layers: dict[int, str] = {}  # layer index -> what runs instead
    for b in getattr(exe, "manifest", {}).get("blocks", []):
        if b["name"] in skipped_blocks:
            for i in b["layers"]:
                skipped_layers[int(i)] = f"skipped {b['name']}"
            if b.get("skipped_as", "alias") != "alias":  # the block's last slot requantizes x
                skipped_layers[int(b["layers"][-1])] += f": {b['skipped_as']} of its input"
    layers = []
    for layer in result.layers:
        cycles = layer.cycles
        if layer.index in skipped_layers:  # not executed in this configuration
            layer = replace(layer, macs=0, kernel=skipped_layers[layer.index])
        layers.append({
            "name": layer.name, "op": layer.op, "kernel": layer.kernel,
            "shape": shapes.get(layer.name), "macs": layer.macs, "cycles": cycles,
            "instructions": layer.instructions,
            "macs_per_cycle": layer.macs / cycles if cycles else None,
            "ms": 1e3 * cycles / clock_hz if cycles is not None else None,
            "flash_bytes": getattr(layer, "flash_bytes", 0),
        })
    total = result.total_cycles
    return {
        "model": graph.name, "target": target, "core": result.core,
        "total_cycles": total, "total_instructions": result.total_instructions,
        "total_macs": sum(layer["macs"] for layer in layers),
        "ms": 1e3 * total / clock_hz if total is not None else None,
        "layers": layers, "arena_bytes": result.arena_bytes, "stack_bytes": result.stack_bytes,
        "flash_bytes": result.flash_bytes, "ram_bytes": result.ram_bytes, "clock_hz": clock_hz,
        "flash_breakdown": dict(getattr(result, "flash_breakdown", {}) or {}),
        "cycle_model": CYCLE_MODEL_NOTE if total is not None else None,
        "cycle_note": None if total is not None else
        f"no cycle model for {target}: instruction counts only",
        "sizes": result.sizes,
        "fusion": {k: v for k, v in options.items()
                   if k in ("fuse", "fusion_variant", "ram_budget", "latency_bound")},
        "skip": sorted(skipped_blocks),
        "switch_cycles": getattr(result, "switch_cycles", None),
        "fused_chains": [[m.name for m in n.attr("members")] for n in built.nodes
                         if n.op == "FusedConvChain"],
    }


def print_report(report: dict[str, Any]) -> None:
    has_cycles = report["total_cycles"] is not None
    rows = []
    for i, layer in enumerate(report["layers"]):
        shape = "x".join(map(str, layer["shape"][1:])) if layer["shape"] else ""
        rows.append((
            i, layer["name"], layer["op"], layer["kernel"], shape, f"{layer['macs']:,}",
            f"{layer['cycles']:,}" if has_cycles else "n/a", f"{layer['instructions']:,}",
            f"{layer['macs_per_cycle']:.3f}" if layer["macs_per_cycle"] else "",
            f"{layer['ms']:.2f}" if has_cycles else "",
            f"{layer.get('flash_bytes', 0):,}",
        ))
    mhz = report["clock_hz"] / 1e6
    console.print(table(
        f"{report['model']} on {report['target']} (emulated)",
        ["#", "layer", "op", "kernel", "output", "MACs", "cycles", "instructions", "MAC/cycle",
         f"ms @{mhz:g} MHz", "flash B"], rows, right_align_from=5))
    if has_cycles:
        console.print(
            f"total {report['total_cycles']:,} cycles = {report['ms']:.2f} ms at {mhz:g} MHz, "
            f"{report['total_macs'] / report['total_cycles']:.3f} MAC/cycle "
            f"(ceiling 2 MAC/cycle: one SMLAD per cycle)")
        console.print(f"cycle model: {report['cycle_model']}")
    else:
        console.print(
            f"total {report['total_instructions']:,} instructions; {report['cycle_note']}")
    console.print(
        f"arena {report['arena_bytes']:,} B   stack {report['stack_bytes']:,} B   "
        f"flash {report['flash_bytes']:,} B   RAM {report['ram_bytes']:,} B")
    if report.get("flash_breakdown"):
        console.print(flash_summary(report["flash_breakdown"],
                                    sum(layer.get("flash_bytes", 0) for layer in report["layers"]),
                                    report["flash_bytes"]))


def flash_summary(breakdown: dict[str, int], layers_bytes: int, total: int) -> str:
    """One line: flash owned by the layers vs shared kernels (counted once), runtime, other."""
    return (f"flash: layers {layers_bytes:,} B + shared kernels "
            f"{breakdown.get('shared_kernels', 0):,} B (counted once) + runtime "
            f"{breakdown.get('runtime', 0):,} B + other {breakdown.get('other', 0):,} B "
            f"= {total:,} B")


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model)
    if args.target == "vta":
        from edgenn.cli import vta_bench

        return vta_bench.run(args, graph)
    if args.target == "host":
        from edgenn.cli import host_bench

        return host_bench.run(args, graph)
    report = bench_report(graph, args.target, args.clock_mhz, **device_options(args))
    print_report(report)
    if args.plot:
        from edgenn.cli.skip_demo_cmd import measure
        from edgenn.skipping.plot import plot_pareto

        profiles = measure(graph, args.clock_mhz)
        plot_pareto(profiles, args.plot, f"{graph.name}: skip configurations",
                    args.clock_mhz * 1e6)
        report["configurations"] = [p.to_dict() for p in profiles]
        console.print(f"wrote {args.plot}")
    if args.json:
        atomic_write_bytes(args.json, json.dumps(report, indent=2).encode())
    return 0
