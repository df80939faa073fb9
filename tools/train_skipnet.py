#!/usr/bin/env python3
"""Train the shipped SkipNet models (joint loss and plain loss) and report their figures.

Needs the ``train`` extra (``pip install torch==2.13.0``) plus onnx and onnxruntime::

    python tools/train_skipnet.py     # writes edgenn/models/skipnet_{joint,plain}.onnx
    python tools/train_skipnet.py --epochs 4 --out-dir /tmp/sk --json /tmp/sk/report.json --tflite

For each loss the script trains a SkipNet (stem, block1, wide block2, global pooling, dense) on
the 8,000 digits of the house train split, exports ONNX, and measures on the 2,000 test digits:
float accuracy of every configuration (torch, and onnxruntime on the exported file with the
block removed from the ONNX graph), int8 accuracy (edgenn quantizer on 500 training digits,
reference runtime, ``apply_skip``), MACs and the peak int8 activation arena of each
configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
# why: the script runs from a checkout, often in a venv where edgenn itself is not installed.
sys.path.insert(0, str(ROOT))
from edgenn.analysis import layer_costs  # noqa: E402
from edgenn.backends.ref import compile_ref  # noqa: E402
from edgenn.data.mnist import mnist_split  # noqa: E402
from edgenn.evaluate import images_to_input, predict  # noqa: E402
from edgenn.export import save_tflite  # noqa: E402
from edgenn.frontends.onnx import load_onnx  # noqa: E402
from edgenn.ir import Graph  # noqa: E402
from edgenn.memory import plan_graph  # noqa: E402
from edgenn.passes.skip import apply_skip  # noqa: E402
from edgenn.quantize import quantize  # noqa: E402
from edgenn.train.export import export_onnx  # noqa: E402
from edgenn.train.metadata import drop_blocks  # noqa: E402
from edgenn.train.skipnet import FULL, SkipConfig, SkipNet, config_label  # noqa: E402
from edgenn.train.trainer import (  # noqa: E402
    TrainOptions,
    accuracy,
    images_to_tensor,
    seed_everything,
    train_skipnet,
)

MODELS = ROOT / "edgenn" / "models"
CALIBRATION_DIGITS = 500


def ort_accuracy(model: onnx.ModelProto, x: np.ndarray, y: np.ndarray) -> float:
    """onnxruntime top-1 accuracy, one image at a time (the file's batch is 1)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    preds = [int(np.argmax(sess.run(None, {"input": img[None]})[0])) for img in x]
    return float(np.mean(np.array(preds) == y))


def measure(proto: onnx.ModelProto, model: SkipNet, configs: list[SkipConfig],
            data: dict[str, Any]) -> tuple[dict[str, Any], Graph]:
    """Every figure of one trained model, per configuration; and the int8 graph."""
    x_test, y_test = data["test"]
    xt = images_to_tensor(x_test)
    graph = load_onnx(proto.SerializeToString(), name="skipnet")
    calibration = images_to_input(graph, data["train"][0][:CALIBRATION_DIGITS])
    # why: skippable_blocks=True gives each block's output its input's int8 parameters, so
    # skipping a block is a pure alias (the whole residual stream shares one scale)
    q = quantize(graph, calibration, skippable_blocks=True)
    xq = images_to_input(q, x_test)  # int8 NHWC, as the quantized graph declares
    out: dict[str, Any] = {"configs": {}}
    for config in configs:
        row: dict[str, Any] = {
            "float_torch": accuracy(model, xt, y_test, config),
            "float_onnxruntime": ort_accuracy(drop_blocks(proto, sorted(config)),
                                              xt.numpy(), y_test),
        }
        fg, qg = apply_skip(graph, config), apply_skip(q, config)
        exe = compile_ref(qg)
        preds = predict(lambda b, exe=exe: exe.run(b)[0], xq)
        row.update(int8_ref=float(np.mean(preds == y_test)),
                   macs=sum(c.macs for c in layer_costs(fg)),
                   int8_arena_bytes=plan_graph(qg).peak_bytes,
                   float_arena_bytes=plan_graph(fg).peak_bytes)
        out["configs"][config_label(config)] = row
    return out, q


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="train the shipped SkipNet models")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, default=MODELS)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--only", choices=["joint", "plain"], default=None)
    parser.add_argument("--width", type=int, default=32, help="residual stream channels")
    parser.add_argument("--hidden", default="64,128", help="inner width of each block")
    parser.add_argument("--stem", default="16", help="channels of the stem convs before the last")
    parser.add_argument("--tflite", action="store_true",
                        help="also write the int8 models as skipnet_<loss>_int8.tflite")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (results are reproducible for a fixed count)")
    parser.add_argument("--no-zero-init", action="store_true",
                        help="do not start each block's last BN scale at 0")
    args = parser.parse_args(argv)

    data = {"train": mnist_split("train"), "test": mnist_split("test")}
    x_train = images_to_tensor(data["train"][0])
    import torch

    y_train = torch.from_numpy(data["train"][1].astype(np.int64))
    report: dict[str, Any] = {"epochs": args.epochs, "seed": args.seed,
                              "torch": torch.__version__, "models": {}}
    for loss in ("joint", "plain") if args.only is None else (args.only,):
        seed_everything(args.seed)
        model = SkipNet(width=args.width, hidden=_ints(args.hidden), stem=_ints(args.stem),
                        zero_init_residual=not args.no_zero_init)
        eval_configs = [FULL, frozenset({model.block_names[-1]})]
        train_configs = eval_configs if loss == "joint" else [FULL]
        opts = TrainOptions(epochs=args.epochs, seed=args.seed, configs=train_configs,
                            threads=args.threads)
        print(f"{loss}: training on {len(x_train)} digits, configurations "
              f"{[config_label(c) for c in train_configs]}", flush=True)
        result = train_skipnet(model, x_train, y_train, opts, on_epoch=lambda e, v: print(
            f"  epoch {e}/{args.epochs}: loss {v:.4f}", flush=True))
        path = args.out_dir / f"skipnet_{loss}.onnx"
        doc = (f"SkipNet trained with the {loss} loss over "
               f"{[config_label(c) for c in train_configs]} (tools/train_skipnet.py)")
        proto = export_onnx(model, path, doc=doc)
        print(f"  wrote {path} ({path.stat().st_size} bytes) in {result.seconds:.1f} s training")
        t0 = time.perf_counter()
        figures, int8_graph = measure(proto, model, eval_configs, data)
        if args.tflite:
            tfl = args.out_dir / f"skipnet_{loss}_int8.tflite"
            save_tflite(int8_graph, tfl)
            print(f"  wrote {tfl} ({tfl.stat().st_size} bytes)")
        figures.update(train_seconds=round(result.seconds, 1),
                       epoch_losses=[round(v, 4) for v in result.epoch_losses],
                       file_bytes=path.stat().st_size,
                       measure_seconds=round(time.perf_counter() - t0, 1))
        report["models"][loss] = figures
        for label, row in figures["configs"].items():
            print(f"  {label:12s} " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
