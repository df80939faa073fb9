"""Comma-separated numbers, as TFLite Micro's integration tests store their inputs and golden
outputs: one value list per line (commas or blanks between values), no header."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from edgenn.errors import DataError
from edgenn.utils import atomic_write_bytes


def read_csv_rows(path: str | os.PathLike[str], dtype: np.dtype) -> list[np.ndarray]:
    """The values of each non-empty line of ``path``, as ``dtype`` (an integer type takes
    integers within its range only); DataError naming the file and line otherwise."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{p}: not a readable text file ({err})") from None
    rows: list[np.ndarray] = []
    for number, line in enumerate(text.splitlines(), 1):
        tokens = line.replace(",", " ").split()
        if tokens:
            rows.append(_parse(tokens, dtype, f"{p}: line {number}"))
    if not rows:
        raise DataError(f"{p}: no values")
    return rows


def _parse(tokens: list[str], dtype: np.dtype, where: str) -> np.ndarray:
    if dtype.kind in "iu":
        try:
            values = [int(t) for t in tokens]
        except ValueError:
            bad = next(t for t in tokens if not _is_int(t))
            raise DataError(f"{where}: {bad!r} is not an integer ({dtype.name} input)") from None
        info = np.iinfo(dtype)
        wrong = next((v for v in values if not info.min <= v <= info.max), None)
        if wrong is not None:
            raise DataError(f"{where}: {wrong} is outside {dtype.name}'s range "
                            f"[{info.min}, {info.max}]")
        return np.array(values, dtype)
    try:
        return np.array([float(t) for t in tokens], dtype)
    except ValueError:
        bad = next(t for t in tokens if not _is_float(t))
        raise DataError(f"{where}: {bad!r} is not a number") from None


def _is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def write_csv_rows(path: str | os.PathLike[str], rows: np.ndarray) -> None:
    """One line of comma-separated values per row of ``rows`` ``[R, K]`` (floats with 9
    significant digits, enough to read a float32 back exactly), written atomically."""
    kind = rows.dtype.kind
    fmt = (lambda v: str(int(v))) if kind in "iub" else (lambda v: f"{float(v):.9g}")
    text = "".join(",".join(fmt(v) for v in row) + "\n" for row in rows)
    atomic_write_bytes(Path(path), text.encode())
