"""edgenn's generated Cortex-M4 code vs CMSIS-NN, under the project's cycle model.

Part 1, models A, B, C of docs/cycle_model.md (same shapes, int8, ReLU, random
weights): our cycles per layer beside CMSIS-NN's published figures and the 2 MAC/cycle ceiling,
peak arena beside CMSIS-NN's layer-by-layer RAM, and flash.
Part 2, the MNIST fixture models: cycles, ms at the clock, arena, flash, and bit-exactness of
the emulated firmware against the reference runtime on the MNIST test digits (all 2,000 by
default; --images to shorten).

    .venv/bin/python benchmarks/cortexm_vs_cmsisnn.py [--images 2000] [--clock-mhz 64]

Writes benchmarks/results/cortexm_vs_cmsisnn.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.api import compile_model, load_model, quantize_model
from edgenn.backends.bench_report import BenchSettings
from edgenn.cli.console import console, progress, table
from edgenn.datasets import dataset_split
from edgenn.evaluate import batches, bench_inputs, images_to_input
from edgenn.export import export_tflite
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import Graph
from edgenn.models import shipped_model_path
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tflite"

# docs/cycle_model.md: CMSIS-NN -O3 cycles per layer and layer-by-layer peak RAM.
CMSIS_NN = {
    "model_a": {"layers": (1_360_206, 6_909_650), "total": 8_269_856, "ram": 29_824},
    "model_b": {"layers": (2_187_630, 12_383_954), "total": 14_571_584, "ram": 41_216},
    "model_c": {"layers": (1_095_096, 3_265_055), "total": 4_360_151, "ram": 19_104},
}
MNIST_MODELS = ("conv2_int8", "dwsep_int8", "resnet_int8")


def mnist_graphs() -> dict[str, Graph]:
    graphs = {name: load_tflite((FIXTURES / f"{name}.tflite").read_bytes(), name=name)
              for name in MNIST_MODELS}
    float_graph = load_model(shipped_model_path("mnist_cnn"))
    train, _ = dataset_split("mnist", "train")
    q = quantize_model(float_graph, images_to_input(float_graph, train[:500]))
    graphs["mnist_cnn_edgenn_int8"] = load_tflite(export_tflite(q), name="mnist_cnn_edgenn_int8")
    return graphs


def bench_json(exe: Any, graph: Graph, clock_mhz: float) -> dict[str, Any]:
    """The common bench report (schema edgenn.bench/1) of one emulated inference."""
    settings = BenchSettings(clock_mhz=clock_mhz)
    return dict(exe.bench(*bench_inputs(graph), settings=settings).to_json())


def cmsis_part(clock_mhz: float) -> list[dict[str, Any]]:
    results = []
    for name, ref in CMSIS_NN.items():
        graph = load_tflite((FIXTURES / f"{name}_int8.tflite").read_bytes(), name=name)
        report = bench_json(compile_model(graph, target="cortex-m4"), graph, clock_mhz)
        layers = []
        for layer, cmsis in zip(report["layers"], ref["layers"], strict=True):
            layers.append({**layer, "cmsis_nn_cycles": cmsis, "speedup": cmsis / layer["cycles"],
                           "ceiling_cycles": layer["macs"] / 2})
        results.append({
            "model": name, "total_cycles": report["total_cycles"],
            "cmsis_nn_cycles": ref["total"], "speedup": ref["total"] / report["total_cycles"],
            "ms": report["total_ms"], "cmsis_nn_ms": 1e3 * ref["total"] / (clock_mhz * 1e6),
            "ceiling_cycles": report["total_macs"] / 2, "arena_bytes": report["arena_bytes"],
            "cmsis_nn_ram": ref["ram"], "flash_bytes": report["flash_bytes"],
            "stack_bytes": report["stack_bytes"], "layers": layers,
        })
    return results


def mnist_part(clock_mhz: float, n_images: int) -> list[dict[str, Any]]:
    images, labels = dataset_split("mnist", "test")
    images, labels = images[:n_images], labels[:n_images]
    results = []
    for name, graph in mnist_graphs().items():
        exe = compile_model(graph, target="cortex-m4")
        report = bench_json(exe, graph, clock_mhz)
        x = images_to_input(graph, images)
        (y_ref,) = compile_model(graph).run(x)
        outs = []
        start = time.perf_counter()
        with progress(f"{name} on cortex-m4", len(x)) as advance:
            for sl in batches(len(x), 50):
                outs.append(exe.run(x[sl])[0])
                advance(sl.stop - sl.start)
        seconds = time.perf_counter() - start
        y = np.concatenate(outs)
        results.append({
            "model": name, "total_cycles": report["total_cycles"], "ms": report["total_ms"],
            "total_macs": report["total_macs"],
            "macs_per_cycle": report["total_macs"] / report["total_cycles"],
            "arena_bytes": report["arena_bytes"], "flash_bytes": report["flash_bytes"],
            "ram_bytes": report["ram_bytes"], "stack_bytes": report["stack_bytes"],
            "images": len(x), "mismatches": int(np.count_nonzero(y != y_ref)),
            "accuracy": float(np.mean(np.argmax(y.reshape(len(y), -1), axis=1) == labels)),
            "emulation_seconds": seconds, "layers": report["layers"],
        })
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--clock-mhz", type=float, default=64.0)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/cortexm_vs_cmsisnn.json"))
    args = parser.parse_args()

    cmsis = cmsis_part(args.clock_mhz)
    rows = []
    for r in cmsis:
        for layer in r["layers"]:
            rows.append((r["model"], layer["name"], f"{layer['macs']:,}",
                         f"{layer['cmsis_nn_cycles']:,}", f"{layer['cycles']:,}",
                         f"{layer['speedup']:.2f}x", f"{layer['ceiling_cycles']:,.0f}",
                         f"{layer['macs_per_cycle']:.3f}"))
        rows.append((r["model"], "total", "", f"{r['cmsis_nn_cycles']:,}",
                     f"{r['total_cycles']:,}", f"{r['speedup']:.2f}x",
                     f"{r['ceiling_cycles']:,.0f}", ""))
    console.print(table("Cortex-M4 cycles: CMSIS-NN (shared figures) vs edgenn",
                        ["model", "layer", "MACs", "CMSIS-NN", "edgenn", "speed-up",
                         "2 MAC/cycle ceiling", "MAC/cycle"], rows, right_align_from=2))
    console.print(table("memory", ["model", "edgenn arena B", "CMSIS-NN RAM B", "flash B",
                                   "stack B", f"ms @{args.clock_mhz:g} MHz", "CMSIS-NN ms"],
                        [(r["model"], f"{r['arena_bytes']:,}", f"{r['cmsis_nn_ram']:,}",
                          f"{r['flash_bytes']:,}", f"{r['stack_bytes']:,}", f"{r['ms']:.1f}",
                          f"{r['cmsis_nn_ms']:.1f}") for r in cmsis]))

    mnist = mnist_part(args.clock_mhz, args.images)
    console.print(table(
        f"MNIST models on cortex-m4 (emulated; {args.images} test digits)",
        ["model", "MACs", "cycles", f"ms @{args.clock_mhz:g} MHz", "MAC/cycle", "arena B",
         "flash B", "stack B", "mismatches vs ref", "accuracy"],
        [(r["model"], f"{r['total_macs']:,}", f"{r['total_cycles']:,}", f"{r['ms']:.1f}",
          f"{r['macs_per_cycle']:.3f}", f"{r['arena_bytes']:,}", f"{r['flash_bytes']:,}",
          f"{r['stack_bytes']:,}", r["mismatches"], f"{100 * r['accuracy']:.2f}%") for r in mnist]))
    atomic_write_bytes(args.json, json.dumps(with_version(
        {"benchmark": "cortexm_vs_cmsisnn", "clock_hz": args.clock_mhz * 1e6,
         "cycle_model": "docs/cycle_model.md (zero wait states)",
         "cmsis_models": cmsis, "mnist_models": mnist}), indent=2).encode())
    console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
