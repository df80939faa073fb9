"""docs/robustness.md's fuzzing table, from a tools/fuzz.py campaign."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, n, table

COMMAND = (".venv/bin/python tools/fuzz.py --n 10000 --seed 1 --commands "
           "inspect,run,quantize,compile --json benchmarks/results/fuzz.json")
FAMILIES = {"byte": "byte-level (all seed files)", "onnx": "structure-aware ONNX",
            "tflite": "structure-aware TFLite"}


def campaign(doc: dict[str, Any]) -> str:
    outcomes = ("ok", "clean error", "traceback", "extra lines", "hang", "crash")
    rows = []
    for family, report in doc["families"].items():
        for command, counts in report["counts"].items():
            rows.append([FAMILIES.get(family, family), command,
                         *(n(counts[o]) for o in outcomes)])
    findings = sum(len(r["findings"]) for r in doc["families"].values())
    runs = sum(sum(c.values()) for r in doc["families"].values() for c in r["counts"].values())
    return "\n".join([
        f"Campaign of {doc['date']}: {n(doc['mutants'])} mutants (seed {doc['seed']}), "
        f"{n(runs)} command runs in {doc['seconds']:.0f} s, **{findings} findings** "
        f"(`compile` on every {doc['compile_every']}th mutant: it builds firmware); "
        f"{FUZZ.source}.", "",
        *table(["family", "command", *outcomes], rows, left=2)])


FUZZ = Section("fuzz-campaign", "fuzz", campaign, COMMAND)
SECTIONS = (FUZZ,)
