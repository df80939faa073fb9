"""docs/svm_device.md's cycles-and-RAM table, from benchmarks/svm_device.py."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, table


def cycles_ram(doc: dict[str, Any]) -> str:
    meta = doc["meta"]
    rows = [[r["batch"], r["features"], r["storage"], "yes" if r["kernel_memo"] else "no",
             f"{r['train_cycles'] / 1e6:,.2f}", f"{r['train_ms']:,.1f}",
             f"{r['inference_cycles']:,.0f}", f"{r['inference_ms']:.2f}",
             f"{r['ram_bytes'] / 1024:,.1f}", r["stack_used"], f"{r['flash_bytes'] / 1024:.1f}",
             "yes" if r["fits_256k"] else "no", f"{r['iterations']:,}",
             f"{100 * r['test_accuracy']:.1f}"] for r in doc["rows"]]
    same = all(r["bit_identical_to_host"] for r in doc["rows"])
    return "\n".join([
        f"Run of {meta.get('date', '-')}: `benchmarks/results/svm_device.json`, written by "
        "`.venv/bin/python benchmarks/svm_device.py` (Cortex-M4 cycle model, "
        f"{meta['clock_mhz']:g} MHz, zero wait states: `docs/cycle_model.md`). Every trained "
        f"model bit-identical to the host float32 build: {'yes' if same else '**no**'}.", "",
        *table(["batch", "d", "buffer", "memo", "train Mcycles", "train ms", "inference cycles",
                "inference ms", "RAM KiB", "stack B", "flash KiB", "fits 256 KiB",
                "SMO iterations", "test acc %"], rows, left=4)])


SECTIONS = (Section("svm-device-cycles", "svm_device", cycles_ram),)
