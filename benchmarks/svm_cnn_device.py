"""One firmware holding the int8 CNN and the SVM head: ``edgenn svm-demo`` measured in full.

The scenario of ``edgenn/train/svm/demo.py`` (factory head on the digits 0-4, a 100-sample
buffer, C = 0.1, six training steps of 100 field digits), with the device classifying all
2,000 test digits after every step:

- on the Cortex-M4 cycle model (``SvmCnnDevice``): per training batch the cycles of the CNN
  on its 100 images, of filling the buffer, of training (SMO for the 45 pairs) and of one
  classification (CNN + vote), the device's accuracy next to the host-fed one (known / new /
  all classes), and RAM (CNN arena + SVM arrays + stack) and flash;
- on the mps2-an386 board's model in qemu-system-arm (``SvmCnnBoard``, one boot; no cycles):
  the device's accuracy again (skip with ``--no-qemu``).

    .venv/bin/python benchmarks/svm_cnn_device.py [--clock-mhz 64]

Takes ~9 minutes (the cycle model classifies ~45 digits a second). Writes
benchmarks/results/svm_cnn_device.json; ``tools/svm_doc.py`` renders it into docs/svm.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from edgenn.cli.console import console, table
from edgenn.train.svm.demo import DemoReport, run_scenario
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "svm_cnn_device.json"
TEST_DIGITS = 2000
BOARD = "mps2-an386"


def _acc(step: Any, prefix: str) -> dict[str, float | None]:
    """known / new / all of one step's accuracy fields starting with ``prefix``."""
    return {"known": getattr(step, f"{prefix}_known"), "new": getattr(step, f"{prefix}_new"),
            "all": getattr(step, prefix)}


def rows(unicorn: DemoReport, qemu: DemoReport | None) -> list[dict[str, Any]]:
    """One row per step: accuracies (host-fed, device in the emulator, device in QEMU) and the
    cycle model's costs of the batch."""
    out = []
    for k, s in enumerate(unicorn.steps):
        q = qemu.steps[k] if qemu is not None else None
        out.append({
            "step": s.step, "field_samples": s.samples_seen, "carried": s.carried,
            "host_fed": _acc(s, "accuracy"), "device": _acc(s, "device_accuracy"),
            "device_qemu": _acc(q, "device_accuracy") if q is not None else None,
            "extract_cycles": s.extract_cycles, "append_cycles": s.append_cycles,
            "train_cycles": s.train_cycles, "classify_cycles_per_image": s.classify_cycles,
            "max_abs_w_diff": s.max_abs_w_diff,
        })
    return out


def summary(unicorn: DemoReport, qemu: DemoReport | None, seconds: dict[str, float]
            ) -> dict[str, Any]:
    out: dict[str, Any] = {
        "extract_cycles_per_image": unicorn.extract_cycles,
        "classify_cycles_per_image": unicorn.inference_cycles,
        "cnn_arena_bytes": unicorn.cnn_arena_bytes, "svm_ram_bytes": unicorn.svm_ram_bytes,
        "ram_bytes": unicorn.device_ram_bytes, "stack_used_bytes": unicorn.stack_bytes,
        "flash_bytes": unicorn.device_flash_bytes,
        "max_accuracy_gap": unicorn.max_accuracy_gap,
        "agreement_with_reference_vote": unicorn.device_agreement,
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    if qemu is not None:
        same = [_acc(a, "device_accuracy") == _acc(b, "device_accuracy")
                for a, b in zip(unicorn.steps, qemu.steps, strict=True)]
        out["qemu"] = {"board": qemu.board, "boot_seconds": round(qemu.device_seconds or 0, 1),
                       "ram_bytes": qemu.device_ram_bytes, "flash_bytes": qemu.device_flash_bytes,
                       "max_accuracy_gap": qemu.max_accuracy_gap,
                       "agreement_with_reference_vote": qemu.device_agreement,
                       "same_accuracy_as_unicorn_every_step": all(same)}
    return out


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _mega(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:,.2f}"


def show(doc: dict[str, Any]) -> None:
    meta, summ = doc["meta"], doc["summary"]
    clock = meta["clock_mhz"] * 1e6
    shown = []
    for r in doc["steps"]:
        q = r["device_qemu"] or {}
        ms = "-" if r["train_cycles"] is None else f"{1e3 * r['train_cycles'] / clock:.1f}"
        shown.append([r["step"], r["field_samples"],
                      *(_pct(r["host_fed"][k]) for k in ("known", "new", "all")),
                      *(_pct(r["device"][k]) for k in ("known", "new", "all")),
                      _pct(q.get("all")), _mega(r["extract_cycles"]), _num(r["append_cycles"]),
                      _mega(r["train_cycles"]), ms, _mega(r["classify_cycles_per_image"])])
    console.print(table(
        f"CNN + SVM head in one {meta['core']} firmware: accuracy (%) on all "
        f"{meta['test_digits']:,} test digits after each training step (host-fed vs on the "
        f"device), cycles per batch of {meta['capacity']} (cycle model, "
        f"{meta['clock_mhz']:g} MHz for ms)",
        ["step", "seen", "host known", "host new", "host all", "dev known", "dev new", "dev all",
         "QEMU all", "CNN Mcyc", "fill cyc", "train Mcyc", "train ms", "classify Mcyc/img"],
        shown, right_align_from=0))
    console.print(
        f"RAM {summ['ram_bytes']:,} B = CNN arena {summ['cnn_arena_bytes']:,} + SVM arrays "
        f"{summ['svm_ram_bytes']:,} + stack and the rest (stack used {summ['stack_used_bytes']} B);"
        f" flash {summ['flash_bytes']:,} B. Device vs host-fed: at most "
        f"{100 * summ['max_accuracy_gap']:.2f} points apart.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clock-mhz", type=float, default=64.0)
    ap.add_argument("--no-qemu", action="store_true", help="skip the board run in QEMU")
    args = ap.parse_args()
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    unicorn = run_scenario(device_test=TEST_DIGITS, emulator="unicorn")
    seconds["unicorn_scenario"] = time.perf_counter() - start
    qemu = None
    if not args.no_qemu and shutil.which("qemu-system-arm") is not None:
        start = time.perf_counter()
        qemu = run_scenario(device_test=TEST_DIGITS, emulator="qemu", board=BOARD)
        seconds["qemu_scenario"] = time.perf_counter() - start
    meta = {"core": unicorn.core, "clock_mhz": args.clock_mhz, "capacity": unicorn.capacity,
            "C": unicorn.C, "known": unicorn.known, "new": unicorn.new,
            "steps": len(unicorn.steps) - 1, "test_digits": TEST_DIGITS,
            "cycle_model": "cortex-m4-trm-zero-wait-state",
            "command": "edgenn svm-demo --device-test 2000"}
    doc = {"meta": meta, "steps": rows(unicorn, qemu), "summary": summary(unicorn, qemu, seconds)}
    show(doc)
    atomic_write_bytes(OUT, (json.dumps(with_version(doc), indent=1) + "\n").encode())
    console.print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
