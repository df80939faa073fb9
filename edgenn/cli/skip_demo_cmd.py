"""``edgenn skip-demo``: a depth-switching network keeps every deadline on a busy device."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.cli.console import console, table
from edgenn.cli.options import add_out_dir_option, out_dir
from edgenn.skipping.measure import load_int8, measure
from edgenn.utils import atomic_write_bytes


def add_parser(sub: Any) -> None:
    p = sub.add_parser("skip-demo", help="runtime layer skipping under a varying CPU budget")
    p.add_argument("model", nargs="?", default=None,
                   help="a model with skippable residual blocks (default: the shipped SkipNet)")
    add_out_dir_option(p, "out/skip-demo", "the PNGs and report.json")
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--clock-mhz", type=float, default=64.0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with out_dir(args) as out:
        return _run(args, out)


def _run(args: argparse.Namespace, out: Path) -> int:
    from edgenn.skipping.plot import plot_budget_demo, plot_pareto
    from edgenn.skipping.simulate import compare_policies, other_task_load

    graph = load_int8(args.model)
    profiles = measure(graph, args.clock_mhz)
    full = next(p for p in profiles if not p.skip)
    clock = args.clock_mhz * 1e6
    def change(value: float, base: float) -> str:
        return f"{(value / base - 1) * 100:+.1f}%"

    rows = [(p.label, f"{100 * (p.accuracy or 0):.2f}%", f"{p.macs:,}", change(p.macs, full.macs),
             f"{p.cycles:,}", f"{1e3 * (p.cycles or 0) / clock:.1f}",
             change(p.cycles or 0, full.cycles or 1), f"{p.peak_bytes:,}",
             change(p.peak_bytes, full.peak_bytes))
            for p in profiles]
    console.print(table("configurations (int8; cycles: Cortex-M4 cycle model)",
                        ["config", "accuracy", "MACs", "vs full", "cycles",
                         f"ms @{args.clock_mhz:g} MHz", "vs full", "RAM B", "vs full"], rows))

    # The period lets the full network fit only while the other task takes <= 40% of the CPU.
    period = (full.cycles or 0) / 0.6
    load = other_task_load(args.frames)
    available = period * (1 - load)
    outcomes = compare_policies(profiles, available)
    console.print(table(f"{args.frames} frames of {1e3 * period / clock:.1f} ms; another task "
                        f"takes {100 * load.min():.0f}-{100 * load.max():.0f}% of the CPU",
                        ["policy", "deadline misses", "mean accuracy (miss = wrong)"],
                        [(o.name, o.misses, f"{100 * o.mean_accuracy:.2f}%") for o in outcomes]))
    adaptive = outcomes[0]
    plot_budget_demo(available, np.array([p.cycles or 0 for p in adaptive.chosen]),
                     [p.label for p in adaptive.chosen],
                     np.array([p.accuracy or 0 for p in adaptive.chosen]),
                     out / "budget_demo.png", clock)
    name = Path(args.model).stem if args.model else "SkipNet (joint loss)"
    plot_pareto(profiles, out / "pareto.png", f"{name}: skip configurations, int8", clock)
    report = {"profiles": [p.to_dict() for p in profiles], "period_cycles": period,
              "policies": [{"name": o.name, "misses": o.misses,
                            "mean_accuracy": o.mean_accuracy} for o in outcomes]}
    atomic_write_bytes(out / "report.json", json.dumps(report, indent=2).encode())
    final = Path(args.out_dir)
    console.print(f"wrote {final / 'budget_demo.png'}, {final / 'pareto.png'}, "
                  f"{final / 'report.json'}")
    return 0 if adaptive.misses == 0 else 1
