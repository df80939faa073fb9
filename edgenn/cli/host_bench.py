"""``edgenn bench MODEL --target host``: measured latency on this CPU, per layer, as a table."""

from __future__ import annotations

import argparse
import json
from typing import Any

from edgenn.api import compile_model
from edgenn.cli.compile_cmd import fusion_settings, host_options
from edgenn.cli.console import console, table
from edgenn.cli.options import DEFAULT_REPEATS, DEFAULT_WARMUP
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.utils import atomic_write_bytes


def host_bench_report(graph: Graph, repeats: int = DEFAULT_REPEATS, warmup: int = DEFAULT_WARMUP,
                      **options: Any) -> dict[str, Any]:
    """Compile for the host, time ``repeats`` inferences of one input; the JSON report."""
    from edgenn.evaluate import bench_input

    exe = compile_model(graph, target="host", **options)
    return exe.bench(bench_input(graph), repeats=repeats, warmup=warmup).to_json()


def print_host_report(report: dict[str, Any]) -> None:
    total = sum(layer["median_ms"] for layer in report["layers"]) or 1.0
    rows = [(layer["index"], layer["name"], layer["op"], layer["where"], layer["kernel"],
             layer["schedule"], _chooser(layer["source"]), f"{layer['median_ms']:.3f}",
             f"{100 * layer['median_ms'] / total:.1f}%") for layer in report["layers"]]
    emulated = " (emulated)" if report["emulated"] else ""
    threads = report["threads"] if report["threads"] is not None else "auto"
    console.print(table(
        f"{report['model']} on host{emulated}: {report['topology']}; schedule "
        f"{report['schedule']}, threads {threads}",
        ["#", "layer", "op", "on", "kernel", "schedule", "chosen by", "median ms", "share"],
        rows, right_align_from=7), highlight=False)
    console.print(
        f"latency{emulated}: median {report['median_ms']:.3f} ms over {report['repeats']} runs "
        f"(min {report['min_ms']:.3f}, max {report['max_ms']:.3f}, {report['warmup']} warm-up)",
        highlight=False)
    if report["cpu_critical_ms"] is not None:
        console.print(
            f"load-independent estimate{emulated}: {report['cpu_critical_ms']:.3f} ms (per layer "
            "the busiest thread's CPU time, summed: other processes and hand-overs excluded)",
            highlight=False)
    fallback = [layer for layer in report["layers"] if layer["source"].startswith("default:")]
    if fallback:
        reasons = sorted({layer["source"].split(": ", 1)[1] for layer in fallback})
        console.print(f"default*: {len(fallback)} layer(s) ran the default configuration and "
                      "schedule: " + "; ".join(reasons), highlight=False)
    console.print(f"target fingerprint: {report['fingerprint']}", highlight=False)
    if report["emulation_note"]:
        console.print(f"note: {report['emulation_note']}", highlight=False)


def _chooser(source: str) -> str:
    """The table's short form: a fallback's reason is printed once, below the table."""
    if source == "not a host kernel":
        return ""
    return "default*" if source.startswith("default:") else source


def run(args: argparse.Namespace, graph: Graph) -> int:
    if getattr(args, "plot", None):
        raise EdgennError("--plot (skip configurations) is for Cortex-M targets, not host")
    report = host_bench_report(graph, repeats=args.repeats, warmup=args.warmup,
                               **fusion_settings(args), **host_options(args))
    print_host_report(report)
    if args.json:
        atomic_write_bytes(args.json, json.dumps(report, indent=2).encode())
    return 0
