"""docs/operators.md's "int16 against int8, same shapes" table, from benchmarks/s16_vs_s8.py."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, n, run_of, table


def _kernel(name: str) -> str:
    return f"`{name}`"


def s16_vs_s8(doc: dict[str, Any]) -> str:
    rows, slower = [], []
    for r in doc["layers"]:
        a, b = r["int8"], r["int16"]
        rows.append([r["layer"], _kernel(a["kernel"]), _kernel(b["kernel"]), n(a["macs"]),
                     n(a["cycles"]), n(b["cycles"]), f"{r['ratio']:.2f}",
                     f"{r['mac_per_cycle_int8']:.3f}", f"{r['mac_per_cycle_int16']:.3f}",
                     f"{a['mismatches']} / {b['mismatches']}"])
        if b["cycles"] > a["cycles"]:
            slower.append(f"{r['layer']} ({r['ratio']:.3f}, {_kernel(b['kernel'])} against "
                          f"{_kernel(a['kernel'])})")
    values = sum(r["int8"]["values"] + r["int16"]["values"] for r in doc["layers"])
    wrong = sum(r["int8"]["mismatches"] + r["int16"]["mismatches"] for r in doc["layers"])
    total = len(doc["layers"])
    verdict = (f"int16 is slower than its int8 twin on {len(slower)} of {total} layers: "
               + "; ".join(slower) + "." if slower else
               f"No int16 layer of the {total} is slower than its int8 twin.")
    return "\n".join([
        f"{run_of(doc)} on the emulated {doc['core']} ({doc['cycle_model']}): "
        f"{Section('', 's16_vs_s8', s16_vs_s8).source}. Mismatches against the reference "
        f"runtime over {n(values)} output values "
        f"({doc['samples']} seeded random inputs per layer and dtype): {n(wrong)}.", "",
        *table(["layer", "int8 kernel", "int16 kernel", "MACs", "cycles int8", "cycles int16",
                "int16 / int8", "MAC/cycle int8", "MAC/cycle int16", "mismatches int8 / int16"],
               rows, left=3), "",
        verdict])


SECTIONS = (Section("s16-vs-s8", "s16_vs_s8", s16_vs_s8),)
