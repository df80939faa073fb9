"""``edgenn run MODEL --input X.npy --output Y.npy [--target ref]``."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from edgenn.api import TARGETS, compile_model, load_model
from edgenn.cli.common import load_npy, save_npy
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    target_options,
)
from edgenn.cli.console import progress
from edgenn.evaluate import batches


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="run a model on a .npy batch of inputs")
    p.add_argument("model")
    p.add_argument("--input", required=True, help="[N, *input shape] in the model's input dtype")
    p.add_argument("--output", required=True, help="where to write [N, *output shape] (.npy)")
    p.add_argument("--target", default="ref", choices=TARGETS)
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    p.add_argument("--batch", type=int, default=256, help="samples per runtime call")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model)
    x = load_npy(args.input)
    exe = compile_model(graph, target=args.target, **target_options(args))
    if x.ndim == 0:
        x = x.reshape(1)
    outs = []
    with progress("running", len(x)) as advance:
        for sl in batches(len(x), max(1, args.batch)):
            outs.append(exe.run(x[sl])[0])
            advance(sl.stop - sl.start)
    # An empty batch still has the declared result shape.
    y = np.concatenate(outs) if outs else exe.run(x)[0]
    save_npy(args.output, y)
    return 0
