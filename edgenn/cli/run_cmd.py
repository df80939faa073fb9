"""``edgenn run MODEL --input X.npy --output Y.npy [--target ref]``.

Several inputs: one ``--input`` per model input, in the model's input order, or one ``.npz``
whose arrays are named after the inputs; outputs likewise (``--output`` per output, or one
``.npz``). Inputs are read by the rule of ``edgenn.ir.batch``: an array of the input's
declared shape is one sample, one leading axis beyond it a batch (and ``[N, *shape[1:]]`` when
the shape starts with 1); a ``.csv`` holds the values of one sample, or one line per sample."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

import numpy as np

from edgenn.api import TARGETS, compile_model, load_model
from edgenn.cli.common import load_inputs, save_outputs
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    target_options,
)
from edgenn.cli.console import console, phase, progress
from edgenn.cli.options import add_model_input_options, model_input_options
from edgenn.ir import Graph
from edgenn.ir.batch import Batch, read_batch
from edgenn.validate import run_batched

_FORMS = {"sample": "one sample, inputs in their declared shape",
          "added": "a batch, the leading axis beyond the declared shape",
          "replaced": "a batch, N in place of the declared leading 1"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="run a model on inputs from .npy / .npz / .csv files")
    p.add_argument("model")
    add_model_input_options(p)
    p.add_argument("--input", required=True, action="append",
                   help="in the model's input dtype and declared shape (one sample) or with "
                        "a leading batch axis (.npy; .csv: the values of one sample, or one "
                        "line per sample); repeat once per model input in its order, or give "
                        "one .npz with arrays named after the inputs")
    p.add_argument("-o", "--output", required=True, action="append",
                   help="where to write each output (.npy, or .csv: one line per sample), "
                        "in the form the inputs were given; repeat once per model output, or "
                        "give one .npz (arrays named after the outputs)")
    p.add_argument("--target", default="ref", choices=TARGETS)
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    p.add_argument("--batch", type=int, default=256, help="at most this many samples per "
                                                         "runtime call")
    p.add_argument("--stateful", action="store_true",
                   help="the samples are consecutive invocations of a streaming model (state "
                        "carries from one to the next); default: each from a reset state")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model, **model_input_options(args))
    xs = load_inputs(args.input, graph)
    # why before compiling: a wrong --output count or input shape is known now, not after a
    # long build
    if not (len(args.output) == 1 and args.output[0].endswith(".npz")) and \
            len(args.output) != len(graph.outputs):
        save_outputs(args.output, graph.outputs, [])
    sources = args.input if len(args.input) == len(graph.inputs) else None
    batch = read_batch(graph, xs, sources)
    with phase(f"compiling for {args.target}"):
        exe = compile_model(graph, target=args.target, **target_options(args))
    run = partial(exe.run, stateful=True) if args.stateful else exe.run
    with progress(f"running on {args.target}", batch.n) as advance:
        ys = batch.outputs(run_batched(run, batch.arrays, max(1, args.batch), advance))
    save_outputs(args.output, graph.outputs, ys, one_sample=batch.form == "sample")
    print_written(graph, batch, args.output, ys, args.target)
    return 0


def print_written(graph: Graph, batch: Batch, paths: list[str], ys: list[np.ndarray],
                  target: str) -> None:
    """What ``run`` did and wrote: the samples, and each output's file, shape and dtype."""
    n = batch.n
    console.print(f"ran {n} sample{'s' if n != 1 else ''} on {target} ({_FORMS[batch.form]})")
    files = paths if len(paths) == len(ys) else [paths[0]] * len(ys)
    for path, name, y in zip(files, graph.outputs, ys, strict=True):
        console.print(f"wrote {path}: output {name!r} {y.dtype.name} "
                      f"[{', '.join(map(str, y.shape))}]", soft_wrap=True)
