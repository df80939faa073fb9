"""Small shared helpers."""

from __future__ import annotations

import os
from pathlib import Path

from edgenn.outputs import atomic_file


def user_cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/edgenn/PARTS`` (``~/.cache`` when unset): where edgenn keeps what it
    can rebuild (host kernel builds, measured trial firmwares, the default tuning database)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root.joinpath("edgenn", *parts)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one
    (``edgenn.outputs.atomic_file``; on failure, nothing new remains)."""
    with atomic_file(path) as tmp, tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
