"""What every generated section shares: the section record, the table and number formats."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Section:
    """``<!-- results:name -->``: rendered by ``render`` from ``benchmarks/results/<json>``,
    which ``benchmarks/<benchmark>.py`` writes."""

    name: str
    benchmark: str
    render: Callable[[dict[str, Any]], str]
    command: str = ""  # how the JSON is written, when not `benchmarks/<benchmark>.py`

    @property
    def json(self) -> str:
        return f"{self.benchmark}.json"

    @property
    def source(self) -> str:
        """The citation every rendered section carries."""
        command = self.command or f".venv/bin/python benchmarks/{self.benchmark}.py"
        return f"`benchmarks/results/{self.json}`, written by `{command}`"


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> list[str]:
    """A markdown table: the first ``left`` columns left-aligned, the others right-aligned."""
    rule = "|" + "|".join("---" if i < left else "---:" for i in range(len(head))) + "|"
    return ["| " + " | ".join(head) + " |", rule,
            *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)]


def n(v: float | None) -> str:
    """An integer count with thousands separators ('-' when absent)."""
    return "-" if v is None else f"{round(v):,}"


def pct(ratio: float) -> str:
    """A change as a signed percentage: 0.604 -> '-39.6%'."""
    return f"{100 * (ratio - 1):+.1f}%"


def span(values: Sequence[float], unit: str = "") -> str:
    """'lo-hi' of rounded values, or one value when they round alike."""
    lo, hi = round(min(values)), round(max(values))
    return f"{lo}{unit}" if lo == hi else f"{lo}-{hi}{unit}"


def run_of(doc: dict[str, Any]) -> str:
    """'Run of 2026-11-26', or 'One run' for a JSON written before its benchmark recorded
    the date."""
    return f"Run of {doc['date']}" if "date" in doc else "One run"
