"""TensorFlow Lite Micro's Python interpreter as an oracle: its int8 outputs are the
bit-exactness reference of edgenn, and its recording allocator gives the arena it needs.

``tflite-micro`` is an optional (test) dependency, imported only when these functions run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from edgenn.errors import EdgennError, ShapeError

_ARENA_RE = re.compile(rb"Arena allocation total (\d+) bytes")


class OracleUnavailableError(EdgennError):
    """An oracle runtime is not installed."""


def _runtime() -> Any:
    try:
        from tflite_micro import runtime
    except ImportError:
        raise OracleUnavailableError(
            "TFLite Micro is not installed: pip install tflite-micro (or edgenn[oracles])"
        ) from None
    return runtime


def tflm_interpreter(model_bytes: bytes, preserve_all_tensors: bool = False) -> Any:
    """A TFLM ``Interpreter`` for the model.

    With ``preserve_all_tensors`` every intermediate stays readable after ``invoke`` through
    ``GetTensor(index, subgraph)`` (no arena recording then); otherwise the default
    allocation-recording interpreter.
    """
    rt = _runtime()
    config = (
        rt.InterpreterConfig.kPreserveAllTensors
        if preserve_all_tensors
        else rt.InterpreterConfig.kAllocationRecording
    )
    try:
        # why: the keyword is spelled "intrepreter_config" in the package
        return rt.Interpreter.from_bytes(bytes(model_bytes), intrepreter_config=config)
    except (RuntimeError, ValueError) as err:
        raise EdgennError(f"TFLite Micro cannot load the model: {err}") from None


def tflm_run(model_bytes: bytes, *xs: np.ndarray, stateful: bool = False,
             interpreter: Any = None) -> list[np.ndarray]:
    """Run ``N`` inferences, one per row of each input ``x[N, ...]``; returns the outputs
    stacked as ``[N, ...]`` (one array per model output).

    Stateless (default): the interpreter is reset before each sample, so models with state
    (variable tensors of LSTM / SVDF, resource variables) start every inference from their
    initial state. ``stateful=True``: the rows are consecutive invocations of one
    interpreter, as a streaming application calls ``Invoke()``; state carries from one row to
    the next. ``interpreter`` (from ``tflm_interpreter``) continues from that interpreter's
    state; default a fresh one.
    """
    interp = interpreter if interpreter is not None else tflm_interpreter(model_bytes)
    n_in, n_out = _io_counts(model_bytes)
    if len(xs) != n_in:
        raise ShapeError(f"the model takes {n_in} inputs, got {len(xs)}")
    details = [interp.get_input_details(i) for i in range(n_in)]
    n = len(xs[0])
    for i, (x, det) in enumerate(zip(xs, details, strict=True)):
        want = tuple(int(d) for d in det["shape"])
        if len(x) != n or x.dtype != det["dtype"] or tuple(x.shape[1:]) != want[1:]:
            raise ShapeError(
                f"TFLM input {i}: expected {np.dtype(det['dtype']).name}[N, "
                f"{', '.join(map(str, want[1:]))}], got {x.dtype.name}{list(x.shape)}"
            )
    results: list[list[np.ndarray]] = []
    for k in range(n):
        # why: variable (state) tensors persist between invocations; each stateless sample
        # starts from the initial state, as edgenn's runtimes run every stateless row
        if not stateful:
            interp.reset()
        for i, x in enumerate(xs):
            interp.set_input(np.ascontiguousarray(x[k : k + 1]), i)
        interp.invoke()
        results.append([np.array(interp.get_output(j)) for j in range(n_out)])
    return [np.concatenate([r[j] for r in results]) for j in range(len(results[0]))]


def tflm_arena_bytes(model_bytes: bytes) -> int:
    """The arena bytes TFLM actually uses for the model (its recording allocator's total,
    after one inference on zeros)."""
    interp = tflm_interpreter(model_bytes)
    for i in range(_io_counts(model_bytes)[0]):
        det = interp.get_input_details(i)
        shape = tuple(int(d) for d in det["shape"])
        interp.set_input(np.zeros(shape, det["dtype"]), i)
    interp.invoke()
    with _captured_fds() as read:
        interp.print_allocations()
    text = read()
    match = _ARENA_RE.search(text)
    if match is None:
        raise EdgennError("TFLite Micro did not report its arena allocation")
    return int(match.group(1))


def _io_counts(model_bytes: bytes) -> tuple[int, int]:
    """Number of inputs and outputs of the model's main subgraph."""
    # why: TFLM's own schema reader, so the oracle does not depend on edgenn's frontend
    schema = _runtime().schema_fb
    sub = schema.Model.GetRootAs(bytes(model_bytes), 0).Subgraphs(0)
    return sub.InputsLength(), sub.OutputsLength()


@contextlib.contextmanager
def _captured_fds() -> Iterator[Any]:
    """Capture what C code writes to file descriptors 1 and 2 (TFLM prints with stdio)."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = [os.dup(1), os.dup(2)]
        captured: list[bytes] = []
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            yield lambda: b"".join(captured)
        finally:
            libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            captured.append(tmp.read())
