"""The one printer of a ``BenchReport``, whatever the target: log, table, totals, notes.

Columns come from the report, not from the target's name: the common figures a target has
(MACs, cycles, instructions, ms) and the target-specific columns it declares.
"""

from __future__ import annotations

from typing import Any

from edgenn.backends.bench_report import BenchReport, LayerReport
from edgenn.cli.console import console, table


def _fmt(value: Any, spec: str = "") -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if spec:
        return format(value, spec)
    return f"{value:,}" if isinstance(value, int) else f"{value:.3f}"


def _shape(layer: LayerReport) -> str:
    return "x".join(map(str, layer.shape[1:])) if layer.shape else ""


def print_bench_report(report: BenchReport[Any]) -> None:
    for line in report.log:
        console.print(line, highlight=False, markup=False)
    layers = report.layers
    # (header, text per layer), in table order; a common column shows when any layer has it
    common: list[tuple[str, list[str]]] = [
        ("output", [_shape(la) for la in layers]), ("MACs", [_fmt(la.macs) for la in layers]),
        ("cycles", [_fmt(la.cycles) for la in layers]),
        ("instructions", [_fmt(la.instructions) for la in layers]),
        ("ms", [_fmt(la.ms) for la in layers])]
    shown = [(h, cells) for h, cells in common if any(cells)]
    columns = ["#", "layer", "op", "on", "kernel", *(h for h, _ in shown),
               *(c.header for c in report.columns)]
    rows = [(la.index, la.name, la.op, la.where, la.kernel, *(cells[i] for _, cells in shown),
             *(_fmt(la.extra.get(c.key), c.fmt) for c in report.columns))
            for i, la in enumerate(layers)]
    console.print(table(report.title, columns, rows, right_align_from=5), highlight=False)
    for line in report.summary:
        console.print(line, highlight=False, markup=False)
    console.print(f"times: {report.time_basis}", highlight=False, markup=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
