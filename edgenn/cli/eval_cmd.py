"""``edgenn eval MODEL --dataset mnist [--split test] [--target ref]``: accuracy."""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from edgenn.api import TARGETS, compile_model, load_model
from edgenn.cli.compile_cmd import (
    add_device_options,
    add_host_options,
    add_vta_options,
    target_options,
)
from edgenn.cli.console import console, progress
from edgenn.evaluate import images_to_input, predict


def add_parser(sub: Any) -> None:
    p = sub.add_parser("eval", help="classification accuracy on a data set")
    p.add_argument("model")
    p.add_argument("--dataset", choices=("mnist", "fashion-mnist"), default="mnist")
    p.add_argument("--split", choices=("train", "test"), default="test")
    p.add_argument("--target", default="ref", choices=TARGETS)
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    p.add_argument("--limit", type=int, default=None, help="evaluate only the first N samples")
    p.add_argument("--json", default=None, help="also write the result as JSON here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edgenn.datasets import dataset_split
    from edgenn.utils import atomic_write_bytes

    graph = load_model(args.model)
    images, labels = dataset_split(args.dataset, args.split)
    if args.limit is not None:
        images, labels = images[: args.limit], labels[: args.limit]
    x = images_to_input(graph, images)
    exe = compile_model(graph, target=args.target, **target_options(args))
    with progress(f"eval {args.dataset}/{args.split}", len(x)) as advance:
        # Emulated targets run image by image: small batches keep the progress bar moving.
        batch = 500 if args.target == "ref" else 20
        pred = predict(lambda b: exe.run(b)[0], x, batch=batch, on_batch=advance)
    acc = float(np.mean(pred == labels)) if len(labels) else float("nan")
    console.print(
        f"{args.model}: accuracy {100 * acc:.2f}% on {len(labels)} {args.dataset} "
        f"{args.split} samples (target {args.target})"
    )
    if args.json:
        result = {"model": args.model, "dataset": args.dataset, "split": args.split,
                  "target": args.target, "samples": len(labels), "accuracy": acc}
        atomic_write_bytes(args.json, json.dumps(result, indent=2).encode())
    return 0
