"""On-device SVM training on the Cortex-M4 cycle model: cycles and RAM per batch size.

For batches of 50, 100 and 200 MNIST digits (10 classes, 45 one-vs-one pairs) with 64, 128
and 784 features -- the first 64 / 128 principal components of the pixels, or the raw pixels
/ 255 -- and both buffer types (float32; int8 with a per-tensor scale), the firmware of
edgenn/backends/cortexm/svm_device.py is built and run in the emulator:

- cycles to train one full buffer (every pair's SMO, w and b updated) and for one inference
  (45 decisions and the vote), and ms at --clock-mhz;
- RAM: the SVM's static arrays (from the ELF symbols) + the stack reserved, the stack high-water
  mark measured; flash (.text + .rodata + .data);
- SMO iterations and kernel rows computed; test accuracy of that one batch (2,000 test digits).

Every trained model is also checked against the host build of the same C (bit-identical w).
Configurations that do not fit the nRF52840's 256 KiB are built with more RAM and flagged.

    .venv/bin/python benchmarks/svm_device.py [--clock-mhz 64] [--test 200]

Writes benchmarks/results/svm_device.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.cortexm.codegen.svm_project import SvmConfig
from edgenn.backends.cortexm.svm_device import SvmDevice
from edgenn.backends.cortexm.targets import get_core
from edgenn.cli.console import console, progress, table
from edgenn.data import mnist_split
from edgenn.svm.native import NativeSvmLayer
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (50, 100, 200)
FEATURES = (64, 128, 784)
STORAGES = ("float32", "int8")
C = 0.1
STACK = 2048


def features(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train / test features: raw pixels / 255 (784) or PCA projections of them."""
    x, y = mnist_split("train")
    xt, yt = mnist_split("test")
    x = x.reshape(len(x), -1).astype(np.float32) / 255
    xt = xt.reshape(len(xt), -1).astype(np.float32) / 255
    idx = np.random.default_rng(0).permutation(len(x))
    x, y = x[idx], y[idx]
    if d < x.shape[1]:
        mean = x.mean(axis=0)
        _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
        basis = vt[:d].T.astype(np.float32)
        x, xt = (x - mean) @ basis, (xt - mean) @ basis
    return x, y, xt, yt


def quant(x: np.ndarray, d: int) -> dict[str, Any]:
    """int8 buffer parameters: exact for pixels (q = 255 p - 128), symmetric otherwise."""
    if d == 784:
        return {"scale": 1 / 255, "zero_point": -128}
    return {"scale": float(np.abs(x).max()) / 127, "zero_point": 0}


def ram_kb_for(cfg: SvmConfig) -> tuple[int, bool]:
    """The RAM to build with, and whether the layer fits the nRF52840's 256 KiB."""
    core_kb = get_core("cortex-m4").ram_kb
    fitted = cfg.for_ram(core_kb * 1024, STACK)
    need = fitted.ram_bytes(STACK)
    if need <= core_kb * 1024:
        return core_kb, True
    return int(np.ceil(need / 1024 / 64)) * 64, False


def run_one(n: int, d: int, storage: str, data: tuple[np.ndarray, ...], test: int,
            clock: float) -> dict[str, Any]:
    x, y, xt, yt = data
    q = quant(x, d) if storage == "int8" else {}
    cfg = SvmConfig(n, d, 10, C=C, carry="none", storage=storage,
                    scale=q.get("scale", 1.0), zero_point=q.get("zero_point", 0))
    ram_kb, fits = ram_kb_for(cfg)
    start = time.perf_counter()
    dev = SvmDevice(n, d, range(10), C=C, carry="none", storage=storage, ram_kb=ram_kb,
                    stack_bytes=STACK, **q)
    res = dev.train(x[:n], y[:n])
    pred = dev.classify(xt[:test])
    host = NativeSvmLayer(d, range(10), n, C=C, carry="none", storage=storage,
                          precision="float32", **q)
    host.append(x[:n], y[:n])
    host.train()
    acc_labels = host.predict(xt)[0]
    mem = dev.memory()
    assert res.cycles is not None
    infer = float(pred.cycles.mean())
    return {
        "batch": n, "features": d, "storage": storage, "C": C, "ram_kb_built": ram_kb,
        "fits_256k": fits, "train_cycles": res.cycles, "train_ms": res.cycles / clock * 1e3,
        "train_instructions": res.instructions,
        "append_cycles_per_sample": (res.append_cycles or 0) / n,
        "inference_cycles": infer, "inference_ms": infer / clock * 1e3,
        "iterations": int(res.iterations.sum()), "pairs_trained": int((res.status != 2).sum()),
        "kernel_memo": dev.config.memo, "kernel_cache_values": dev.config.cache,
        "svm_static_bytes": mem.svm_static_bytes, "stack_reserved": mem.stack_reserved,
        "stack_used": mem.stack_used, "ram_bytes": mem.svm_static_bytes + mem.stack_reserved,
        "flash_bytes": mem.flash_bytes, "static_by_array": mem.static,
        "test_accuracy": float(np.mean(acc_labels.astype(int) == yt)),
        "bit_identical_to_host": bool(np.array_equal(res.w, host.w)
                                      and np.array_equal(pred.labels, host.predict(
                                          xt[:test])[0])),
        "host_seconds": time.perf_counter() - start,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clock-mhz", type=float, default=64.0)
    ap.add_argument("--test", type=int, default=20, help="inferences timed per configuration")
    args = ap.parse_args()
    clock = args.clock_mhz * 1e6
    rows: list[dict[str, Any]] = []
    jobs = [(n, d, s) for d in FEATURES for n in BATCHES for s in STORAGES]
    with progress("SVM on cortex-m4", len(jobs)) as advance:
        for d in FEATURES:
            data = features(d)
            for n in BATCHES:
                for storage in STORAGES:
                    rows.append(run_one(n, d, storage, data, args.test, clock))
                    advance()
    shown = [(r["batch"], r["features"], r["storage"], "yes" if r["kernel_memo"] else "no",
              f"{r['train_cycles'] / 1e6:,.2f}", f"{r['train_ms']:,.1f}",
              f"{r['inference_cycles']:,.0f}", f"{r['inference_ms']:.2f}",
              f"{r['ram_bytes'] / 1024:,.1f}", r["stack_used"], f"{r['flash_bytes'] / 1024:.1f}",
              "yes" if r["fits_256k"] else "no", r["iterations"],
              f"{100 * r['test_accuracy']:.1f}") for r in rows]
    console.print(table(
        f"SVM layer on the device: Cortex-M4 cycle model, {args.clock_mhz:g} MHz, 10 classes "
        f"(45 pairs), C={C}, one full buffer",
        ["batch", "d", "buffer", "memo", "train Mcyc", "train ms", "infer cyc", "infer ms",
         "RAM KiB", "stack B", "flash KiB", "fits 256K", "iters", "acc %"],
        shown, right_align_from=0))
    same = all(r["bit_identical_to_host"] for r in rows)
    console.print(f"Every trained model bit-identical to the host float32 build: "
                  f"{'yes' if same else 'NO'}. RAM = the SVM's static arrays + 2 KiB of stack "
                  "reserved (stack B = measured high water); flash = .text + .rodata + .data. "
                  "memo = kernel memo (each dot product once per training). Zero wait states, "
                  "no caches: see docs/cycle_model.md.")
    out = ROOT / "benchmarks" / "results" / "svm_device.json"
    meta = {"core": "cortex-m4", "clock_mhz": args.clock_mhz, "C": C, "classes": 10,
            "features": {"64": "first 64 principal components of the pixels / 255",
                         "128": "first 128 principal components", "784": "raw pixels / 255"},
            "cycle_model": "cortex-m4-trm-zero-wait-state (docs/cycle_model.md)",
            "date": dt.date.today().isoformat()}
    doc = with_version({"meta": meta, "rows": rows})
    atomic_write_bytes(out, (json.dumps(doc, indent=1) + "\n").encode())
    console.print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
