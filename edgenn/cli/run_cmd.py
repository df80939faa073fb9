"""``edgenn run MODEL --input X.npy --output Y.npy [--target ref]``.

Several inputs: one ``--input`` per model input, in the model's input order, or one ``.npz``
whose arrays are named after the inputs; outputs likewise (``--output`` per output, or one
``.npz``)."""

from __future__ import annotations

import argparse
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
from edgenn.cli.console import progress
from edgenn.errors import DataError
from edgenn.evaluate import batches


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="run a model on a .npy batch of inputs")
    p.add_argument("model")
    p.add_argument("--input", required=True, action="append",
                   help="[N, *input shape] in the model's input dtype (.npy); repeat once per "
                        "model input in its order, or give one .npz with arrays named after "
                        "the inputs")
    p.add_argument("-o", "--output", required=True, action="append",
                   help="where to write [N, *output shape] (.npy); repeat once per model "
                        "output, or give one .npz (arrays named after the outputs)")
    p.add_argument("--target", default="ref", choices=TARGETS)
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    p.add_argument("--batch", type=int, default=256, help="samples per runtime call")
    p.add_argument("--stateful", action="store_true",
                   help="the samples are consecutive invocations of a streaming model (state "
                        "carries from one to the next); default: each from a reset state")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model)
    xs = [x.reshape(1) if x.ndim == 0 else x for x in load_inputs(args.input, graph.inputs)]
    # why before compiling: a wrong --output count is known now, not after a long build
    if not (len(args.output) == 1 and args.output[0].endswith(".npz")) and \
            len(args.output) != len(graph.outputs):
        save_outputs(args.output, graph.outputs, [])
    if len({len(x) for x in xs}) > 1:
        raise DataError(f"the inputs have different batch sizes {[len(x) for x in xs]}")
    exe = compile_model(graph, target=args.target, **target_options(args))
    n = len(xs[0]) if xs else 0
    outs: list[list[np.ndarray]] = [[] for _ in graph.outputs]
    with progress("running", n) as advance:
        for sl in batches(n, max(1, args.batch)):
            stream = {"stateful": True} if args.stateful else {}
            for k, y in enumerate(exe.run(*(x[sl] for x in xs), **stream)):
                outs[k].append(y)
            advance(sl.stop - sl.start)
    # An empty batch still has the declared result shape.
    ys = [np.concatenate(o) for o in outs] if n else exe.run(*xs)
    save_outputs(args.output, graph.outputs, ys)
    return 0
