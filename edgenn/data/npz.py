"""User data sets for calibration and evaluation: ``.npz`` files with arrays ``x`` and ``y``."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from edgenn.errors import DataError


def read_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, by name. Never unpickles: object arrays, missing or
    unreadable files and single ``.npy`` arrays are one-line DataErrors naming the file."""
    p = Path(path)
    try:
        loaded = np.load(p, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(f"{p}: no such file (not found)") from None
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        # why: np.load raises ValueError for pickled arrays and for non-numpy files.
        raise DataError(f"{p}: not a readable .npz archive ({err})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise DataError(f"{p}: not an .npz archive (a single .npy array?)")
    with loaded as npz:
        try:
            return {k: npz[k] for k in npz.files}
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
            raise DataError(f"{p}: cannot read arrays ({err})") from None


def load_npz_dataset(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray | None]:
    """Load ``x`` (numeric, [N, ...], N >= 1) and optional ``y`` (integer [N]) from an npz.

    Pickled (object) arrays are refused. Returns ``(x, y)`` with ``y`` None when absent.
    """
    p = Path(path)
    arrays = read_npz(p)
    if "x" not in arrays:
        raise DataError(f"{p}: no array 'x' (found: {', '.join(sorted(arrays)) or 'none'})")
    x, y = arrays["x"], arrays.get("y")
    if x.dtype.kind not in "biuf" or x.ndim < 1 or len(x) == 0:
        raise DataError(f"{p}: 'x' must be a non-empty numeric array [N, ...], "
                        f"got {x.dtype} {list(x.shape)}")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise DataError(f"{p}: 'x' contains NaN or infinity")
    if y is not None and (y.dtype.kind not in "iu" or y.shape != (len(x),)):
        raise DataError(f"{p}: 'y' must be integer [{len(x)}], got {y.dtype} {list(y.shape)}")
    return x, y
