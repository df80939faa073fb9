"""``edgenn bench MODEL --target vta``: one inference, the DarkNet-style per-layer log and table."""

from __future__ import annotations

import argparse
import json
from typing import Any

from edgenn.api import compile_model
from edgenn.cli.compile_cmd import fusion_settings, vta_options
from edgenn.cli.console import console, table
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.utils import atomic_write_bytes


def vta_bench_report(graph: Graph, **options: Any) -> tuple[dict[str, Any], list[str]]:
    """Compile for the accelerator, run one inference; (JSON report, per-layer log lines)."""
    from edgenn.evaluate import bench_input

    exe = compile_model(graph, target="vta", **options)
    report = exe.bench(bench_input(graph))
    return report.to_json(), report.log()


def print_vta_report(report: dict[str, Any], log: list[str]) -> None:
    for line in log[: len(report["layers"])]:
        console.print(line, highlight=False, markup=False)
    rows = []
    for layer in report["layers"]:
        if layer["where"] == "vta":
            dram = sum(layer["dram_bytes"].values())
            rows.append((
                layer["index"], layer["name"], layer["op"], "VTA",
                f"{layer['m']} {layer['k']} {layer['n']}", f"{layer['cycles']:,}",
                f"{layer['vta_ms']:.3f}", f"{layer['gops']:.1f}",
                f"{100 * layer['gemm_utilization']:.0f}%", f"{dram:,}", f"{layer['host_ms']:.3f}",
            ))
        else:
            rows.append((layer["index"], layer["name"], layer["op"], "CPU", "", "", "", "", "",
                         "", f"{layer['host_ms']:.3f}"))
    console.print(table(
        f"{report['model']} on vta ({report['preset']}, {report['schedule']} schedule, "
        f"{report['clock_mhz']:g} MHz, {report['bus_bits']}-bit)",
        ["#", "layer", "op", "on", "GEMM m k n", "cycles", "VTA ms (sim)", "GOPS",
         "GEMM util", "DRAM bytes", "host ms"], rows, right_align_from=4))
    for line in log[len(report["layers"]):]:
        console.print(line, highlight=False, markup=False)
    console.print(f"note: {report['time_note']}", highlight=False)


def run(args: argparse.Namespace, graph: Graph) -> int:
    if getattr(args, "plot", None):
        raise EdgennError("--plot (skip configurations) is for Cortex-M targets, not vta")
    options = {**fusion_settings(args), **vta_options(args)}
    report, log = vta_bench_report(graph, **options)
    print_vta_report(report, log)
    if args.json:
        atomic_write_bytes(args.json, json.dumps(report, indent=2).encode())
    return 0
