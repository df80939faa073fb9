"""``edgenn quantize MODEL --calib mnist|FILE.npz -o OUT.tflite [--activations int16] [--json S]``.

Prints what it wrote and every operator it kept in float32, with the reason
(``edgenn.quantize.float_islands``); ``--json`` writes the same summary.
"""

from __future__ import annotations

import argparse
from typing import Any

from edgenn.api import load_model, quantize_model
from edgenn.cli.console import console
from edgenn.cli.options import (
    STDOUT,
    add_json_option,
    add_model_input_options,
    model_input_options,
    staged_path,
    write_json,
)
from edgenn.errors import EdgennError
from edgenn.outputs import staged_files
from edgenn.quantize import float_islands
from edgenn.quantize.calibration_data import calibration_data


def add_parser(sub: Any) -> None:
    p = sub.add_parser("quantize",
                       help="post-training int8 (or 16x8) quantization to a .tflite file")
    p.add_argument("model", help="float .onnx or .tflite model")
    add_model_input_options(p)
    p.add_argument("--calib", required=True,
                   help="'mnist' (training digits of the house split) or an .npz with array 'x'")
    p.add_argument("-o", "--output", required=True, help="the .tflite file to write")
    p.add_argument("--method", choices=("minmax", "percentile", "kl"), default="minmax",
                   help="activation range estimation")
    p.add_argument("--calib-size", type=int, default=500, help="calibration samples to use")
    p.add_argument("--activations", choices=("int8", "int16"), default="int8",
                   help="activation type: int8, or int16 (TFLite's 16x8 scheme: symmetric "
                        "int16 activations, int8 weights, int64 biases)")
    add_json_option(p, "the summary (file, scheme, operators, float32 operators and why)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edgenn.export import save_tflite

    graph = load_model(args.model, **model_input_options(args))
    if args.calib_size <= 0:
        raise EdgennError("--calib-size must be positive")
    calib = calibration_data(graph, args.calib, args.calib_size)
    qgraph = quantize_model(graph, calib, method=args.method, activations=args.activations)
    kind = "int8" if args.activations == "int8" else "16x8 (int16 activations, int8 weights)"
    islands = float_islands(graph, args.activations)
    to_stdout = args.json == STDOUT
    if islands and not to_stdout:
        # why before writing: if a float32 operator cannot be exported, its reason is on screen
        count = f"{len(islands)} operator{'s' if len(islands) > 1 else ''}"
        console.print(f"kept in float32 ({count}, between Dequantize and Quantize):",
                      markup=False)
        for island in islands:
            console.print(f"  {island.node} ({island.op}): {island.reason}", markup=False)
    summary = {"output": args.output, "scheme": kind, "operators": len(qgraph.nodes),
               "calibration_samples": len(calib), "method": args.method,
               "float_operators": [island.to_json() for island in islands]}
    # why staged: the model and its summary appear together, or neither (edgenn.outputs)
    with staged_files() as stage:
        save_tflite(qgraph, stage.path(args.output))
        if write_json(staged_path(stage, args.json), summary):
            return 0
    if not islands:
        console.print("every operator is quantized (no float32 operators)", markup=False)
    console.print(
        f"wrote {args.output}: {kind}, {len(qgraph.nodes)} operators, calibrated on "
        f"{len(calib)} samples ({args.method})"
    )
    return 0
