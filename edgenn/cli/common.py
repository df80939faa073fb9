"""Pieces shared by sub-commands: loading inputs and models with one-line errors."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from edgenn.data.csvfile import read_csv_rows, write_csv_rows
from edgenn.data.npz import read_npz
from edgenn.errors import DataError
from edgenn.ir import Graph
from edgenn.ir.batch import from_rows
from edgenn.outputs import staged_files
from edgenn.utils import atomic_write_bytes


def load_npy(path: str) -> np.ndarray:
    """Load a ``.npy`` array without ever unpickling."""
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (ValueError, OSError, EOFError) as err:
        raise DataError(f"{path}: not a readable .npy array ({err})") from None


def save_npy(path: str, array: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    atomic_write_bytes(Path(path), buf.getvalue())


def load_inputs(paths: list[str], graph: Graph) -> list[np.ndarray]:
    """The model's inputs from ``--input`` arguments: one ``.npy`` or ``.csv`` per input in
    the model's input order, or one ``.npz`` whose arrays are named after the inputs. A CSV
    holds values in the input's element type, shaped by the input rule
    (``edgenn.ir.batch.from_rows``). Never unpickles."""
    names = graph.inputs
    if len(paths) == 1 and paths[0].endswith(".npz"):
        path = paths[0]
        arrays = read_npz(path)
        missing = [n for n in names if n not in arrays]
        extra = sorted(set(arrays) - set(names))
        if missing or extra:
            raise DataError(f"{path}: arrays {sorted(arrays)}; the model's inputs are "
                            f"{list(names)}" + (f" (missing {missing})" if missing else "")
                            + (f" (unknown {extra})" if extra else ""))
        return [arrays[n] for n in names]
    if len(paths) != len(names):
        raise DataError(f"{len(paths)} --input given; the model takes {len(names)} input(s) "
                        f"{list(names)}: one --input per input in this order, or one .npz "
                        "with arrays of these names")
    return [_load_csv(p, graph, n) if p.lower().endswith(".csv") else load_npy(p)
            for p, n in zip(paths, names, strict=True)]


def _load_csv(path: str, graph: Graph, name: str) -> np.ndarray:
    rows = read_csv_rows(path, graph.tensor(name).dtype.numpy)
    return from_rows(graph, name, rows, path)


def save_outputs(paths: list[str], names: tuple[str, ...], arrays: list[np.ndarray],
                 one_sample: bool = False) -> None:
    """Write the outputs: one ``.npy`` (or ``.csv``: one line per sample, a single line for
    ``one_sample``) per ``--output`` in the model's output order, or one ``.npz`` holding
    every output under its name. All files appear together, or none
    (``edgenn.outputs.staged_files``)."""
    if len(paths) == 1 and paths[0].endswith(".npz"):
        buf = io.BytesIO()
        # why the ignore: numpy's stub reads the ** mapping as its allow_pickle flag
        np.savez(buf, **dict(zip(names, arrays, strict=True)))  # type: ignore[arg-type]
        atomic_write_bytes(Path(paths[0]), buf.getvalue())
        return
    if len(paths) != len(names):
        raise DataError(f"{len(paths)} --output given; the model has {len(names)} output(s) "
                        f"{list(names)}: one --output per output in this order, or one .npz")
    with staged_files() as stage:
        for path, array in zip(paths, arrays, strict=True):
            tmp = str(stage.path(path))
            if path.lower().endswith(".csv"):
                write_csv_rows(tmp, array.reshape((1, -1) if one_sample else (len(array), -1)))
            else:
                save_npy(tmp, array)
