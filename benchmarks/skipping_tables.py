"""Runtime layer skipping: the MCU layer-skipping study's Tables 1 and 2 (docs/references.md)
with our numbers.

For the SkipNets trained with the joint loss and with the plain loss (edgenn/models/): float and
int8 accuracy of every configuration on the 2,000 test digits; for the int8 joint model on the
Cortex-M4 cycle model: cycles, ms, MACs, RAM (per configuration and the one union arena), the
cost of switching, and bit-exactness of the firmware against the reference runtime in every
configuration (--images digits each).

    .venv/bin/python benchmarks/skipping_tables.py [--images 50]

Writes benchmarks/results/skipping_tables.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.api import compile_model, load_model, quantize_model
from edgenn.cli.console import console, table
from edgenn.datasets import dataset_split
from edgenn.evaluate import bench_input, images_to_input, predict
from edgenn.models import shipped_model_path
from edgenn.passes.skip import all_configs, apply_skip, find_blocks
from edgenn.skipping import profile_configs
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]


def float_accuracy(graph: Any, config: frozenset[str], images: np.ndarray,
                   labels: np.ndarray) -> float:
    exe = compile_model(apply_skip(graph, config))
    x = images_to_input(graph, images)
    return float(np.mean(predict(lambda b: exe.run(b)[0], x) == labels))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=50, help="digits per configuration on the M4")
    ap.add_argument("--clock-mhz", type=float, default=64.0)
    args = ap.parse_args()
    train, _ = dataset_split("mnist", "train")
    test, labels = dataset_split("mnist", "test")
    clock = args.clock_mhz * 1e6

    accuracy_rows, results = [], {}
    for name in ("skipnet_joint", "skipnet_plain"):
        graph = load_model(shipped_model_path(name))
        q = quantize_model(graph, images_to_input(graph, train[:500]))
        configs = list(all_configs(find_blocks(q)))
        exe = compile_model(q, target="cortex-m4", skippable=True)  # skip support is opt-in
        x1 = bench_input(q)
        def cycles(config: frozenset[str], exe: Any = exe, x1: np.ndarray = x1) -> int | None:
            return exe.bench(x1, skip=config).total_cycles

        profiles = profile_configs(q, configs, cycles=cycles, images=test, labels=labels)
        xq = images_to_input(q, test[: args.images])
        entry: dict[str, Any] = {"configs": []}
        for p in profiles:
            ref = compile_model(apply_skip(q, p.skip)).run(xq)[0]
            mismatches = int(np.count_nonzero(exe.run(xq, skip=p.skip)[0] != ref))
            f_acc = float_accuracy(graph, p.skip, test, labels)
            entry["configs"].append({**p.to_dict(), "float_accuracy": f_acc,
                                     "m4_mismatches": mismatches, "m4_images": len(xq)})
            accuracy_rows.append((name, p.label, f"{100 * f_acc:.2f}%",
                                  f"{100 * (p.accuracy or 0):.2f}%", mismatches))
        entry["union_arena_bytes"] = int(exe.manifest["arena_bytes"])
        entry["switch_cycles"] = exe.emulate(x1, skip=frozenset()).switch_cycles
        results[name] = entry
    console.print(table("Table 1: accuracy on the 2,000 test digits",
                        ["model", "config", "float", "int8", f"M4 mismatches ({args.images})"],
                        accuracy_rows))
    joint = results["skipnet_joint"]["configs"]
    full = next(c for c in joint if not c["skip"])
    rows = [(c["label"], f"{c['macs']:,}", f"{100 * (c['macs'] / full['macs'] - 1):+.1f}%",
             f"{c['cycles']:,}", f"{1e3 * c['cycles'] / clock:.1f}",
             f"{100 * (c['cycles'] / full['cycles'] - 1):+.1f}%", f"{c['peak_bytes']:,}",
             f"{100 * (c['peak_bytes'] / full['peak_bytes'] - 1):+.1f}%") for c in joint]
    console.print(table("Table 2: SkipNet (joint loss), int8, Cortex-M4 cycle model",
                        ["config", "MACs", "vs full", "cycles", f"ms @{args.clock_mhz:g} MHz",
                         "vs full", "RAM B", "vs full"], rows))
    console.print(f"one static arena for every configuration: "
                  f"{results['skipnet_joint']['union_arena_bytes']:,} B; switching the "
                  f"configuration: {results['skipnet_joint']['switch_cycles']} cycles")
    atomic_write_bytes(ROOT / "benchmarks/results/skipping_tables.json",
                       json.dumps(with_version(results), indent=2, default=str).encode())
    console.print("wrote benchmarks/results/skipping_tables.json")


if __name__ == "__main__":
    main()
