"""``edgenn bench MODEL --target T [--json OUT]``: one benchmark, per layer, any target.

Every target's executable returns the same ``BenchReport`` (edgenn/backends/bench_report.py);
this command compiles, benchmarks, prints it with the one printer and writes its JSON. Nothing
here branches on the target's name.
"""

from __future__ import annotations

import argparse
from typing import Any

from edgenn.api import compile_model, load_model
from edgenn.backends.bench_report import BenchSettings
from edgenn.backends.targets import backend_names, get_backend
from edgenn.cli.bench_print import print_bench_report
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    target_options,
)
from edgenn.cli.console import console
from edgenn.cli.options import (
    add_json_option,
    add_model_input_options,
    add_timing_options,
    model_input_options,
    staged_path,
    write_json,
)
from edgenn.errors import EdgennError
from edgenn.evaluate import bench_inputs
from edgenn.fusion import fusion_options
from edgenn.outputs import staged_files

STREAM_WARMUP = 8  # --stateful: invocations before the measured one


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmark one inference: cost per layer, memory")
    p.add_argument("model")
    add_model_input_options(p)
    p.add_argument("--target", required=True, choices=backend_names())
    p.add_argument("--clock-mhz", type=float, default=BenchSettings.clock_mhz,
                   help="clock for the ms column of a cycle-model target (a Cortex-M)")
    add_json_option(p, "the report (schema edgenn.bench/1)")
    p.add_argument("--pareto-plot", default=None, metavar="PNG",
                   help="also write the accuracy-vs-cycles Pareto plot over the skip "
                        "configurations (every one up to 10 blocks, else each block alone; "
                        "models with skippable blocks; MNIST accuracy)")
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    add_timing_options(p, "measured targets: host, ref")
    p.add_argument("--stateful", action="store_true",
                   help="a streaming model: measure an invocation that continues a stream of "
                        f"{STREAM_WARMUP} random ones (default: from a reset state)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model, **model_input_options(args))
    backend = get_backend(args.target)
    if args.pareto_plot and not backend.skip_in_firmware:
        raise EdgennError(f"--pareto-plot measures skip configurations in Cortex-M firmware; "
                          f"target {args.target} does not run them")
    options = target_options(args)
    exe = compile_model(graph, target=args.target, **options)
    settings = BenchSettings(repeats=args.repeats, warmup=args.warmup,
                             clock_mhz=args.clock_mhz)
    if args.stateful:
        from edgenn.ir.sample import random_inputs

        # the stream's invocations run first; the last one is measured
        report = exe.bench(*random_inputs(graph, STREAM_WARMUP + 1), settings=settings,
                           stateful=True)
    else:
        report = exe.bench(*bench_inputs(graph), settings=settings)
    report = report.with_extra(fusion=fusion_options(dict(options)))
    plan = getattr(exe, "fusion_report", None)  # what --fuse auto measured and chose
    if plan is not None:
        report = report.with_extra(fusion_plan=plan.summary())
    to_stdout = args.json == "-"
    if not to_stdout:
        print_bench_report(report)
        for line in plan.lines() if plan is not None else ():
            console.print(line, markup=False)
    # why staged: the plot and the JSON appear together, or neither (edgenn.outputs)
    with staged_files() as stage:
        if args.pareto_plot:
            from edgenn.skipping.measure import measure
            from edgenn.skipping.plot import plot_pareto

            profiles = measure(graph, args.clock_mhz)
            plot_pareto(profiles, stage.path(args.pareto_plot),
                        f"{graph.name}: skip configurations", args.clock_mhz * 1e6)
            report = report.with_extra(configurations=[p.to_dict() for p in profiles])
        write_json(staged_path(stage, args.json), report.to_json())
    if args.pareto_plot and not to_stdout:
        console.print(f"wrote {args.pareto_plot}")
    return 0
