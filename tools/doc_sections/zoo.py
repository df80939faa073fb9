"""docs/models.md's zoo table, from a benchmarks/model_zoo.py run."""

from __future__ import annotations

from typing import Any

import model_zoo  # benchmarks/model_zoo.py: the cells are the terminal table's

from doc_sections.common import Section, table


def _text(s: str) -> str:
    """A markdown-safe line: a pipe would end a table cell, a backtick open code."""
    return s.replace("|", "\\|").replace("`", "'")


def zoo_table(doc: dict[str, Any]) -> str:
    stages = doc["stages"]
    rows = [[f"`{m['model']}`", model_zoo.kind(m), f"{m['bytes'] / 1024:,.0f}",
             *(model_zoo.cell(s, m["stages"].get(s)) for s in stages)] for m in doc["models"]]
    passed = sum(all(r.get("ok") for r in m["stages"].values()) for m in doc["models"])
    errors = [f"- `{model}` {stage}: {_text(error)}"
              for model, stage, error in model_zoo.failures(doc)]
    return "\n".join([
        f"Run of {doc['date']} (edgenn {doc['edgenn_version']}, `{doc['model_dir']}/`, "
        f"{doc['core']}): **{passed} of {len(doc['models'])} models pass every stage**; "
        f"{ZOO.source}.", "",
        *table(["model", "kind", "KiB", *stages], rows, left=2), "",
        *(["The first error line of every failing stage:", "", *errors] if errors else [])])


ZOO = Section("model-zoo", "model_zoo", zoo_table,
              ".venv/bin/python benchmarks/model_zoo.py zoo")
SECTIONS = (ZOO,)
