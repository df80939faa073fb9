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
# what TFLM prints when the arena is too small (its allocators' messages)
_ARENA_SHORT_RE = re.compile(r"Failed to resize buffer|too small|missing: \d+|"
                             r"Failed to allocate (memory|tail)", re.IGNORECASE)
ARENA_CAP_BYTES = 512 << 20  # the largest arena tried: far beyond any microcontroller's RAM
# bytes per element of a TFLite TensorType (the schema's enum); others count 8
_ELEMENT_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 8: 8, 9: 1, 10: 8, 12: 8,
                  15: 2, 16: 4, 17: 2, 18: 1}


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
    """A TFLM ``Interpreter`` for the model, its arena sized from the model.

    The package's default arena is 10x the file, too small for a small model with large
    activations; the first size tried is :func:`arena_guess`, doubled while TFLM reports a
    short arena, up to :data:`ARENA_CAP_BYTES`. With ``preserve_all_tensors`` every
    intermediate stays readable after ``invoke`` through ``GetTensor(index, subgraph)`` (no
    arena recording then); otherwise the default allocation-recording interpreter.
    """
    rt = _runtime()
    config = (
        rt.InterpreterConfig.kPreserveAllTensors
        if preserve_all_tensors
        else rt.InterpreterConfig.kAllocationRecording
    )
    data = bytes(model_bytes)
    size = arena_guess(data)
    while True:
        with _captured_fds() as read:  # why: TFLM prints each failed attempt on stderr
            try:
                # why: the keyword is spelled "intrepreter_config" in the package
                return rt.Interpreter.from_bytes(data, arena_size=size, intrepreter_config=config)
            except (RuntimeError, ValueError) as err:
                error = err
        said = read().decode(errors="replace")
        if not _ARENA_SHORT_RE.search(said):
            why = next((line.strip() for line in said.splitlines() if line.strip()), "")
            raise EdgennError(f"TFLite Micro cannot load the model: {error}"
                              + (f" ({why})" if why else "")) from None
        if size >= ARENA_CAP_BYTES:
            raise EdgennError(f"TFLite Micro cannot load the model: {error} in an arena of "
                              f"{size:,} bytes (the largest tried)") from None
        size = min(2 * size, ARENA_CAP_BYTES)


def arena_guess(model_bytes: bytes) -> int:
    """The first arena size tried for the model, in bytes: twice the bytes of its non-constant
    tensors in every subgraph (TFLM plans them with overlaps, so this bounds the planned part)
    plus 256 bytes a tensor and 1 KiB an operator for TFLM's own records, and at least the
    package's default of 10x the file."""
    model = _runtime().schema_fb.Model.GetRootAs(model_bytes, 0)
    activations = records = 0
    for i in range(model.SubgraphsLength()):
        sub = model.Subgraphs(i)
        records += 1024 * sub.OperatorsLength() + 256 * sub.TensorsLength()
        for k in range(sub.TensorsLength()):
            t = sub.Tensors(k)
            buf = model.Buffers(t.Buffer()) if t.Buffer() < model.BuffersLength() else None
            if buf is not None and (buf.DataLength() or buf.Size()):
                continue  # a constant: it stays in the flatbuffer
            shape = t.ShapeAsNumpy() if t.ShapeLength() else np.ones(1, np.int64)
            elements = int(np.prod(np.maximum(np.asarray(shape, np.int64), 1)))
            activations += elements * _ELEMENT_BYTES.get(t.Type(), 8)
    return max(10 * len(model_bytes), 2 * activations + records + 16 * 1024)


def tflm_run(model_bytes: bytes, *xs: np.ndarray, stateful: bool = False,
             interpreter: Any = None) -> list[np.ndarray]:
    """Run ``N`` inferences, one per row of each input: ``x[N, *declared shape]``, or
    ``x[N, *declared shape[1:]]`` for an input declared with a leading 1. Returns one array
    per model output: ``[N, *declared shape]`` when an input had the added axis, else the
    rows joined along the output's first axis (``[N, ...]`` for a leading 1).

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
    added: list[bool] = []  # per input: given as [N, *declared shape]
    for i, (x, det) in enumerate(zip(xs, details, strict=True)):
        want = tuple(int(d) for d in det["shape"])
        added.append(x.ndim >= 1 and tuple(x.shape[1:]) == want)
        replaced = want[:1] == (1,) and tuple(x.shape[1:]) == want[1:]
        if x.ndim < 1 or len(x) != n or x.dtype != det["dtype"] or not (added[-1] or replaced):
            raise ShapeError(
                f"TFLM input {i}: expected {np.dtype(det['dtype']).name}"
                f"[N, {', '.join(map(str, want))}], got {x.dtype.name}{list(x.shape)}"
            )
    results: list[list[np.ndarray]] = []
    for k in range(n):
        # why: variable (state) tensors persist between invocations; each stateless sample
        # starts from the initial state, as edgenn's runtimes run every stateless row
        if not stateful:
            interp.reset()
        for i, x in enumerate(xs):
            want = tuple(int(d) for d in details[i]["shape"])
            interp.set_input(np.ascontiguousarray(x[k : k + 1]).reshape(want), i)
        interp.invoke()
        results.append([np.array(interp.get_output(j)) for j in range(n_out)])
    join = np.stack if any(added) else np.concatenate
    return [join([r[j] for r in results]) for j in range(len(results[0]))]


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
