"""How fast the Cortex-M emulator runs firmware: emulated instructions per host second.

    .venv/bin/python benchmarks/emulator_throughput.py [--invokes 5]

For each model (the shared models A, B, C and the MNIST fixtures), the cortex-m4 build is
loaded once, one inference prices its basic blocks, then ``--invokes`` inferences are timed
with the cycle model on (the way ``bench`` / ``run`` / ``eval`` use the emulator). Writes
benchmarks/results/emulator_throughput.json; docs/cortexm.md quotes its median (rendered by
tools/results_doc.py). Wall time depends on the host and its load: the JSON records the
host's CPU count and load average beside the figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.api import load_model
from edgenn.backends.cortexm.executable import compile_cortexm
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tflite"
OUT = ROOT / "benchmarks" / "results" / "emulator_throughput.json"
MODELS = ("model_a_int8", "model_b_int8", "model_c_int8", "conv2_int8", "dwsep_int8",
          "resnet_int8")


def measure(model: str, invokes: int) -> dict[str, Any]:
    """Instructions per second of ``invokes`` timed inferences of ``model`` on cortex-m4."""
    graph = load_model(FIXTURES / f"{model}.tflite")
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_cortexm(graph, "cortex-m4", out_dir=Path(tmp))
        machine = exe.machine
        shape = graph.external_shape(graph.inputs[0])
        x = np.random.default_rng(0).integers(-128, 128, shape, dtype=np.int8).tobytes()
        machine.invoke([x])  # why: the first inference disassembles and prices every block
        start = time.perf_counter()
        total = sum(machine.invoke([x]).instructions for _ in range(invokes))
        seconds = time.perf_counter() - start
    return {"model": model, "invokes": invokes, "instructions": total, "seconds": seconds,
            "instructions_per_second": total / seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--invokes", type=int, default=5)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    rows = [measure(m, args.invokes) for m in MODELS]
    for r in rows:
        print(f"{r['model']:14s} {r['instructions_per_second'] / 1e6:6.2f} M instructions/s")
    median = statistics.median(r["instructions_per_second"] for r in rows)
    payload = {
        "benchmark": "emulator_throughput", "date": dt.date.today().isoformat(),
        "core": "cortex-m4", "cycle_model": True, "host": platform.processor() or
        platform.machine(), "host_cpus": os.cpu_count(),
        "load_average_1min": [load_before, os.getloadavg()[0]],
        "median_instructions_per_second": median, "models": rows}
    atomic_write_bytes(OUT, (json.dumps(with_version(payload), indent=1) + "\n").encode())
    print(f"median {median / 1e6:.1f} M instructions/s; wrote {OUT}")


if __name__ == "__main__":
    main()
