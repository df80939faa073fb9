"""Converter-made models with the operators of issue 14 on the emulated Cortex-M4: cycles,
memory beside TFLite Micro's, and bit-exactness against TFLite Micro.

For every .tflite in tests/fixtures/operators (written by tools/make_operator_fixtures.py with
TensorFlow's converter: TFLite Micro's mnist_lstm network, SEANet- and MobileNetV3-style
int8 / int16 blocks): build for cortex-m4, run one inference for per-layer cycles, flash and
arena; count output mismatches against TFLite Micro's Python interpreter on N seeded random
inputs on ref and on cortex-m4; put TFLite Micro's arena (its recording allocator) beside
edgenn's. Float models run on ref only (the Cortex-M kernels are int8 / int16).

    .venv/bin/python benchmarks/operator_models.py [--n 8] [--json PATH]

Writes benchmarks/results/operator_models.json; docs/operators.md shows its table
(tools/operators_doc.py renders it from the JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edgenn.api import compile_model  # noqa: E402
from edgenn.cli.console import console, progress, table  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir.sample import random_inputs  # noqa: E402
from edgenn.oracles.tflm import tflm_arena_bytes, tflm_run  # noqa: E402
from edgenn.utils import atomic_write_bytes  # noqa: E402
from edgenn.version import with_version  # noqa: E402

MODEL_DIR = ROOT / "tests" / "fixtures" / "operators"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "operator_models.json"
CORE = "cortex-m4"
CLOCK_MHZ = 64.0
CYCLE_MODEL = ("docs/cycle_model.md: Cortex-M4 TRM cycle rules, zero wait states "
               "(no flash wait states, caches or bus contention)")


def _mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> int:
    """Quantized outputs: values that differ; float outputs: values off by more than 1e-5
    relative (+1e-6 absolute)."""
    bad = 0
    for g, w in zip(got, want, strict=True):
        if w.dtype.kind == "f":
            bad += int((~np.isclose(g, w, rtol=1e-5, atol=1e-6)).sum())
        else:
            bad += int((g.astype(np.int64) != w.astype(np.int64)).sum())
    return bad


def bench_model(path: Path, n: int) -> dict[str, Any]:
    data = path.read_bytes()
    graph = load_tflite(data, path.name)
    xs = random_inputs(graph, n, seed=1)
    want = tflm_run(data, *xs)
    row: dict[str, Any] = {
        "model": path.stem, "file": path.name, "samples": n,
        "operators": sorted({node.op for node in graph.nodes}),
        "output_values": int(sum(w.size for w in want)),
        "ref_mismatches": _mismatches(compile_model(graph, "ref").run(*xs), want),
        "tflm_arena_bytes": tflm_arena_bytes(data),
    }
    if graph.tensor(graph.inputs[0]).dtype.value == "float32":
        return row
    exe = compile_model(graph, CORE)
    row["m4_mismatches"] = _mismatches(exe.run(*xs), want)
    result = exe.emulate(*[x[:1] for x in xs])
    macs = sum(layer.macs for layer in result.layers)
    row.update({
        "macs": macs, "cycles": result.total_cycles,
        "mac_per_cycle": round(macs / result.total_cycles, 4) if result.total_cycles else None,
        "ms_at_64mhz": round(result.total_cycles / (CLOCK_MHZ * 1e3), 3),
        "arena_bytes": result.arena_bytes, "flash_bytes": result.flash_bytes,
        "layers": [{"name": layer.name, "op": layer.op, "kernel": layer.kernel,
                    "macs": layer.macs, "cycles": layer.cycles} for layer in result.layers],
    })
    return row


def run_benchmark(n: int) -> dict[str, Any]:
    paths = sorted(MODEL_DIR.glob("*.tflite"))
    models = []
    with progress("operator models on cortex-m4", len(paths)) as advance:
        for path in paths:
            models.append(bench_model(path, n))
            advance(1)
    return {"benchmark": "operator_models", "core": CORE, "clock_hz": CLOCK_MHZ * 1e6,
            "cycle_model": CYCLE_MODEL, "model_dir": str(MODEL_DIR.relative_to(ROOT)),
            "models": models}


def print_table(doc: dict[str, Any]) -> None:
    rows = []
    for m in doc["models"]:
        rows.append([m["model"], f"{m.get('cycles', 0):,}" if "cycles" in m else "-",
                     f"{m['mac_per_cycle']:.3f}" if m.get("mac_per_cycle") else "-",
                     f"{m['arena_bytes']:,}" if "arena_bytes" in m else "-",
                     f"{m['tflm_arena_bytes']:,}",
                     f"{m['flash_bytes']:,}" if "flash_bytes" in m else "-",
                     f"{m['ref_mismatches']} / {m.get('m4_mismatches', '-')}"])
    console.print(table("Converter-made models on cortex-m4 (zero wait states)",
                        ["model", "cycles", "MAC/cycle", "arena B", "TFLM arena B", "flash B",
                         "mismatches ref / m4"], rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="random inputs per model")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args()
    doc = run_benchmark(args.n)
    print_table(doc)
    atomic_write_bytes(args.json, (json.dumps(with_version(doc), indent=1) + "\n").encode())
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
