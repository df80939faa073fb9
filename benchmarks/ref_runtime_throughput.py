"""Reference-runtime throughput vs TFLite Micro's Python interpreter on the 2,000 MNIST test digits.

Both run the same int8 .tflite files (the TensorFlow-made fixtures and the shipped CNN quantized
by edgenn) on the same images in the same process. Absolute times on a shared machine are
noisy; the ratio is the figure. Prints a table and writes
benchmarks/results/ref_runtime_throughput.json.

    .venv/bin/python benchmarks/ref_runtime_throughput.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from edgenn.analysis import layer_costs
from edgenn.backends.ref import compile_ref
from edgenn.cli.console import console, table
from edgenn.datasets import dataset_split
from edgenn.evaluate import images_to_input
from edgenn.frontends.tflite import load_tflite
from edgenn.memory import plan_graph
from edgenn.oracles.tflm import tflm_arena_bytes, tflm_run
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tflite"
MNIST_FIXTURES = ("conv2_int8", "dwsep_int8", "resnet_int8")  # made with TensorFlow 2.21


def models() -> dict[str, bytes]:
    found = {name: (FIXTURES / f"{name}.tflite").read_bytes() for name in MNIST_FIXTURES}
    from edgenn.api import load_model, quantize_model
    from edgenn.export import export_tflite
    from edgenn.models import shipped_model_path

    graph = load_model(shipped_model_path("mnist_cnn"))
    train, _ = dataset_split("mnist", "train")
    found["mnist_cnn_edgenn_int8"] = export_tflite(
        quantize_model(graph, images_to_input(graph, train[:500]))
    )
    return found


def median_seconds(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--json", default=str(ROOT / "benchmarks/results/ref_runtime_throughput.json")
    )
    args = parser.parse_args()
    images, _ = dataset_split("mnist", "test")
    results = []
    for name, data in models().items():
        graph = load_tflite(data, name=name)
        x = images_to_input(graph, images)
        exe = compile_ref(graph)
        t_ref = median_seconds(lambda: exe.run(x), args.repeats)  # noqa: B023
        t_tflm = median_seconds(lambda: tflm_run(data, x), 1)  # noqa: B023
        y_ref = exe.run(x)[0]
        same = np.array_equal(y_ref, tflm_run(data, x)[0].reshape(y_ref.shape))
        results.append({
            "model": name, "macs": sum(c.macs for c in layer_costs(graph)),
            "images": len(x), "ref_seconds": t_ref, "tflm_seconds": t_tflm,
            "ref_img_per_s": len(x) / t_ref, "tflm_img_per_s": len(x) / t_tflm,
            "speedup_ref_over_tflm": t_tflm / t_ref, "bit_exact": bool(same),
            "arena_edgenn": plan_graph(graph).peak_bytes, "arena_tflm": tflm_arena_bytes(data),
        })
    rows = [(r["model"], f"{r['macs']:,}", f"{r['ref_img_per_s']:,.0f}",
             f"{r['tflm_img_per_s']:,.0f}",
             f"{r['speedup_ref_over_tflm']:.1f}x", r["bit_exact"], f"{r['arena_edgenn']:,}",
             f"{r['arena_tflm']:,}") for r in results]
    console.print(table("reference runtime vs TFLite Micro (int8, 2,000 MNIST test digits)",
                        ["model", "MACs", "edgenn img/s", "TFLM img/s", "ratio", "bit-exact",
                         "arena edgenn B", "arena TFLM B"], rows))
    atomic_write_bytes(args.json, json.dumps(with_version({
        "benchmark": "ref_runtime_throughput", "results": results}), indent=2).encode())
    console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
