"""Measured trial builds of the flash policy, kept by the content hash of what was measured.

The flash policy (``flash_policy.plan_code_size``) builds and emulates trial firmwares to learn
their flash and per-layer cycles. Both follow from the generated project alone: the ELF from
its files, the flags and the compiler; the cycles from the ELF, the seeded bench inputs and the
emulator's cycle model. So a compile of a model that was compiled before (another test of the
same fixture, a user trying another ``--ram-kb``) reads the figures instead of building and
emulating again.

The key hashes every file of the generated project (the build folder excepted), the compiler's
``--version`` line, the bench inputs, edgenn's version and the source of the emulator and the
core table (the cycle model), so any change to what decides a figure misses the cache. An entry
is one small JSON file under ``$XDG_CACHE_HOME/edgenn/cortexm-trials`` (``~/.cache`` when unset;
``EDGENN_TRIAL_CACHE=off`` disables it), written atomically; an unreadable entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from edgenn.cc.driver import compiler_identity
from edgenn.utils import atomic_write_bytes, user_cache_dir
from edgenn.version import edgenn_version

ENV = "EDGENN_TRIAL_CACHE"  # a folder, or "off"
_SKIPPED_DIRS = frozenset({"build"})  # build products follow from the rest


def cache_dir() -> Path | None:
    """Where entries live; None when ``EDGENN_TRIAL_CACHE=off``."""
    setting = os.environ.get(ENV, "")
    if setting.lower() in ("off", "0", "no"):
        return None
    return Path(setting) if setting else user_cache_dir("cortexm-trials")


@lru_cache(maxsize=1)
def _cycle_model_source() -> bytes:
    """The emulator's and the core table's source: what turns an ELF into cycles."""
    here = Path(__file__).parent
    files = sorted((here / "emulator").glob("*.py")) + [here / "targets.py"]
    return b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in files)


def trial_key(project_dir: Path, compiler: str, inputs: Sequence[np.ndarray]) -> str:
    """The content hash of one trial build and its measuring inputs."""
    h = hashlib.sha256()

    def part(label: str, data: bytes) -> None:
        h.update(f"{label}\0{len(data)}\0".encode())
        h.update(data)

    part("edgenn", edgenn_version().encode())
    part("compiler", compiler_identity(compiler).encode())
    part("cycle model", _cycle_model_source())
    for path in sorted(p for p in project_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(project_dir)
        if rel.parts[0] not in _SKIPPED_DIRS:
            part("file " + rel.as_posix(), path.read_bytes())
    for x in inputs:
        part(f"input {x.dtype} {x.shape}", np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def load(key: str) -> dict[str, object] | None:
    """The entry of ``key`` (``flash_bytes``, and ``layer_cycles`` / ``layer_flash`` once
    measured), or None."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        entry = json.loads((folder / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("flash_bytes"), int) \
        else None


def store(key: str, flash_bytes: int, layer_cycles: Sequence[int] | None,
          layer_flash: Sequence[int] | None = None) -> None:
    """Record a trial's figures (a cache that cannot be written is skipped silently: it only
    saves time)."""
    folder = cache_dir()
    if folder is None:
        return
    entry = {"flash_bytes": int(flash_bytes),
             "layer_cycles": None if layer_cycles is None else [int(c) for c in layer_cycles]}
    if layer_flash is not None:
        entry["layer_flash"] = [int(b) for b in layer_flash]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(folder / f"{key}.json", json.dumps(entry).encode())
    except OSError:
        pass
