"""``edgenn eval MODEL (--dataset mnist | --data F.npz) [--split test] [--target ref]``:
top-1 accuracy of a classifier (the argmax of its first output), per class in the JSON."""

from __future__ import annotations

import argparse
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
from edgenn.cli.options import (
    add_json_option,
    add_model_input_options,
    model_input_options,
    write_json,
)
from edgenn.errors import DataError
from edgenn.validate import (
    data_inputs,
    dataset_inputs,
    per_class_accuracy,
    run_batched,
    top1,
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("eval", help="classification accuracy on a data set")
    p.add_argument("model")
    add_model_input_options(p)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--dataset", choices=("mnist", "fashion-mnist"), default=None,
                        help="a named image data set (the default: mnist)")
    source.add_argument("--data", default=None, metavar="F.npz",
                        help="arrays x (inputs in the model's input layout; float data is "
                             "quantized with the input's scale and zero point) and y (labels "
                             "[N] or one-hot [N, C])")
    p.add_argument("--split", choices=("train", "test"), default=None,
                   help="with --dataset: which split (the default: test)")
    p.add_argument("--target", default="ref", choices=TARGETS)
    add_device_options(p)
    add_vta_options(p)
    add_host_options(p)
    p.add_argument("--limit", type=int, default=None, help="evaluate only the first N samples")
    add_json_option(p, "the result")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    if args.data is not None and args.split is not None:
        raise DataError("--split is for --dataset; --data is evaluated whole (see --limit)")
    if args.limit is not None and args.limit < 0:
        raise DataError(f"--limit {args.limit}: give a sample count >= 0")
    graph = load_model(args.model, **model_input_options(args))
    dataset = args.dataset or "mnist"
    split = args.split or "test"
    if args.data is not None:
        xs, labels = data_inputs(graph, args.data)
        what = args.data
    else:
        xs, labels = dataset_inputs(graph, dataset, split)
        what = f"{dataset} {split}"
    if args.limit is not None:
        xs, labels = [x[: args.limit] for x in xs], labels[: args.limit]
    exe = compile_model(graph, target=args.target, **target_options(args))
    with progress(f"eval {what}", len(labels)) as advance:
        # Emulated targets run image by image: small batches keep the progress bar moving.
        batch = 500 if args.target == "ref" else 20
        outputs = run_batched(exe.run, xs, batch, on_batch=advance)[0]
    pred = top1(outputs) if len(labels) else np.zeros(0, np.int64)
    acc = float(np.mean(pred == labels)) if len(labels) else float("nan")
    console.print(f"{args.model}: accuracy {100 * acc:.2f}% on {len(labels)} {what} samples "
                  f"(target {args.target})")
    if args.json:
        source: dict[str, Any] = {"data": args.data} if args.data is not None else \
            {"dataset": dataset, "split": split}
        result = {"model": args.model, **source, "target": args.target,
                  "samples": len(labels), "accuracy": acc,
                  "per_class_accuracy": per_class_accuracy(pred, labels)}
        write_json(args.json, result)
    return 0
