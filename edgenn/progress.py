"""Progress bars for long work (training, tuning, emulating many inputs), on stderr so stdout
stays parseable. The library reports progress with these; the CLI shows them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

err_console = Console(stderr=True)


@contextmanager
def progress(description: str, total: int) -> Iterator[Any]:
    """A progress bar; yields ``advance(n)``. Quiet when stderr is not a terminal."""
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextmanager
def phase(description: str) -> Iterator[None]:
    """A spinner with the elapsed time, for work whose length is not known in advance (a
    build). Quiet when stderr is not a terminal."""
    bar = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )
    with bar:
        bar.add_task(description, total=None)
        yield
