"""Terminal output: tables and progress bars (rich), on stderr so stdout stays parseable."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from edgenn.progress import err_console, phase, progress

__all__ = ["console", "err_console", "phase", "progress", "table"]

# Piped output (CI logs, files) gets a wide fixed width instead of rich's 80 columns, so tables
# are not truncated.
console = Console(width=None if sys.stdout.isatty() else 140)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
          right_align_from: int = 1) -> Table:
    t = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        t.add_column(col, justify="right" if i >= right_align_from else "left")
    for row in rows:
        t.add_row(*(str(v) for v in row))
    return t


