"""``edgenn validate MODEL --target T [--data X.npz | --random N] [--json PATH] [--limit N]``:
run the model on a target and compare every output with the reference runtime and TFLite
Micro (the computation is ``edgenn.validate``). Exit 1 when the target breaks the contract:
any differing element of an integer output, or a float output beyond the tolerance; exit 3
when a comparison asked for did not run (TFLite Micro missing or unable to load the model)
or nothing was compared: PASS is printed only when every comparison asked for ran."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from edgenn.api import TARGETS, compile_model, load_model
from edgenn.backends.cortexm.executable import CortexMExecutable
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    target_options,
)
from edgenn.cli.console import console, phase, progress, table
from edgenn.cli.options import (
    STDOUT,
    add_json_option,
    add_model_input_options,
    model_input_options,
    write_json,
)
from edgenn.errors import DataError
from edgenn.validate import FLOAT_TOLERANCE, ValidationReport, load_npz_data, validate

ORACLE_NAMES = {"ref": "reference runtime", "tflm": "TFLite Micro", "litert": "LiteRT"}
EXIT_CODES = {"pass": 0, "fail": 1, "incomplete": 3}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="compare a target's outputs with the reference runtime "
                                        "and TFLite Micro")
    p.add_argument("model", help=".onnx or .tflite file")
    add_model_input_options(p)
    p.add_argument("--target", required=True, choices=TARGETS)
    data = p.add_mutually_exclusive_group()
    data.add_argument("--data", default=None, metavar="X.npz",
                      help="inputs as array x (one input; or arrays named after the inputs, or "
                           "x0, x1, ...) in the model's input layout, float data quantized with "
                           "the input's scale and zero point; optional labels y")
    data.add_argument("--random", type=int, default=None, metavar="N",
                      help="N seeded random inputs (the default: 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of --random")
    p.add_argument("--limit", type=int, default=None, help="validate only the first N samples")
    p.add_argument("--stateful", action="store_true",
                   help="the samples are consecutive invocations of a streaming model (state "
                        "carries from one to the next); default: each from a reset state")
    p.add_argument("--no-tflm", action="store_true",
                   help="do not compare with TFLite Micro (then a missing tflite-micro does "
                        "not make the verdict incomplete)")
    add_json_option(p, "the report")
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edgenn.ir.sample import random_inputs

    if args.random is not None and args.random < 1:
        raise DataError(f"--random {args.random}: give at least one sample")
    if args.limit is not None and args.limit < 1:
        raise DataError(f"--limit {args.limit}: give at least one sample")
    graph = load_model(args.model, **model_input_options(args))
    labels = None
    if args.data is not None:
        xs, labels = load_npz_data(args.data, graph)
    else:
        xs = random_inputs(graph, 10 if args.random is None else args.random, seed=args.seed)
    if args.limit is not None:
        xs = [x[: args.limit] for x in xs]
        labels = None if labels is None else labels[: args.limit]
    options = target_options(args)
    with phase(f"compiling for {args.target}"):
        exe = compile_model(graph, target=args.target, **options)
    ref = None if args.target == "ref" else \
        compile_model(graph, target="ref", skip=options.get("skip"))
    emulated = args.target not in ("ref", "host")
    with progress(f"validate on {args.target}", len(xs[0]) if xs else 0) as advance:
        # why small batches on emulated targets: they run sample by sample; the bar moves
        report = validate(graph, _stream(exe.run, args.stateful),
                          None if ref is None else _stream(ref.run, args.stateful), xs,
                          target=args.target, model_bytes=Path(args.model).read_bytes(),
                          labels=labels, skip=options.get("skip"),
                          batch=4 if emulated else 256, on_batch=advance,
                          tflm=not args.no_tflm, stateful=args.stateful)
    report.model = args.model
    board = options.get("board", "generic")
    if isinstance(exe, CortexMExecutable) and board != "generic":  # say where it ran
        report.target = f"{args.target} ({board}, {exe.emulator})"
    if args.json != STDOUT:  # why: stdout then holds the JSON only
        print_report(report)
    write_json(args.json, report.to_dict())
    return EXIT_CODES[report.verdict]


def _stream(run: Any, stateful: bool) -> Any:
    """``run``, its rows consecutive invocations with ``stateful`` (--stateful)."""
    return partial(run, stateful=True) if stateful else run


def print_report(report: ValidationReport) -> None:
    rows: list[tuple[Any, ...]] = [
        (c.output, ORACLE_NAMES.get(c.against, c.against), f"{c.elements:,}",
         f"{c.exact_match:.6f}", f"{c.max_abs_diff_raw:g}", f"{c.max_abs_diff:.6g}",
         f"{c.cosine:.6f}", f"{c.top1_agreement:.4f}", "pass" if c.passed else "FAIL")
        for c in report.comparisons
    ]
    rows += [("*", ORACLE_NAMES.get(k, k), why, *([""] * 5), "n/a")
             for k, why in report.notes.items()]
    rows += [("*", ORACLE_NAMES.get(k, k), why, *([""] * 5), "NOT RUN")
             for k, why in report.not_run.items()]
    cols = ["output", "vs", "elements", "exact match", "max |diff|", "max |diff| deq",
            "cosine", "top-1 agree", "verdict"]
    console.print(table(f"{report.model} on {report.target}: {report.samples} samples", cols,
                        rows, right_align_from=2))
    for runtime, acc in report.accuracy.items():
        console.print(f"accuracy ({ORACLE_NAMES.get(runtime, runtime)}): {100 * acc:.2f}%")
    verdict = report.verdict
    if verdict == "pass":
        console.print(f"PASS: {report.target} meets the contract (integer outputs bit-exact, "
                      f"float within {FLOAT_TOLERANCE:g} x max(1, max |reference|))")
    elif verdict == "fail":
        failed = sorted({f"{c.output} vs {c.against}" for c in report.comparisons
                         if not c.passed})
        console.print(f"FAIL: {report.target} disagrees: {', '.join(failed)}")
    elif report.not_run:
        missing = "; ".join(f"{ORACLE_NAMES.get(k, k)} did not run: {why}"
                            for k, why in report.not_run.items())
        ran = "the comparisons that ran agree" if report.comparisons else "nothing was compared"
        console.print(f"INCOMPLETE: no verdict ({ran}); {missing}")
    else:
        console.print("INCOMPLETE: nothing was compared (see the table)")
