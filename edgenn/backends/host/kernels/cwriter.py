"""A tiny indenting C text builder for the kernel generators."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class CWriter:
    """Collects lines; ``block(head)`` opens ``head {`` and closes it on exit."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._depth = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.lines.append("    " * self._depth + line if line else "")

    @contextmanager
    def block(self, *heads: str) -> Iterator[None]:
        """Open ``head {`` for each head (nested in order); close them all on exit."""
        for head in heads:
            self(head + " {")
            self._depth += 1
        try:
            yield
        finally:
            for _ in heads:
                self._depth -= 1
                self("}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def vec(lanes: int) -> str:
    """The C vector type of ``lanes`` floats."""
    return f"ev{lanes}"
