"""Small shared helpers."""

from __future__ import annotations

import os

from edgenn.outputs import atomic_file


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one
    (``edgenn.outputs.atomic_file``; on failure, nothing new remains)."""
    with atomic_file(path) as tmp, tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
