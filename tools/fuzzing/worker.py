"""The fuzzing worker: a long-lived process that runs ``edgenn`` commands in-process.

Started as ``python -m tools.fuzzing.worker``; reads one JSON request per line on stdin
(``{"command": "run", "model": PATH, "workdir": DIR, "seed": N}``) and answers one JSON line
``{"returncode": RC, "stderr": TEXT}`` on the pipe it was given (the original stdout; the
commands' own stdout goes to /dev/null). Running in-process keeps a mutant to milliseconds
(importing ``edgenn`` once, not once per command); the parent enforces the time limit and
restarts a worker that hangs or dies, which an in-process timer could not do for a loop
inside numpy or a segmentation fault.

Everything the command writes to stderr is captured: Python-level writes (errors, warnings,
tracebacks) through ``sys.stderr`` and C-level writes through file descriptor 2.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.api import load_model
from edgenn.cli.main import main as edgenn_main

# why a memory cap: a mutant that declares a 2**40-element tensor must end in a MemoryError
# (a finding) rather than in the machine's OOM killer taking the campaign down with it
MEMORY_LIMIT_BYTES = 4 << 30
# Warning categories Python shows by default (DeprecationWarning and friends are hidden
# outside ``__main__``): the ones a user would see.
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)


def _input_specs(model: str) -> list[tuple[tuple[int, ...], np.dtype]]:
    """The model's inputs as the CLI takes them (external shape, numpy dtype); a dummy when
    the model does not load (the command under test will then report why)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = load_model(model)
        specs = []
        for name in graph.inputs:
            shape = graph.external_shape(name)
            dtype = np.dtype(graph.tensor(name).dtype.numpy)
            if int(np.prod(shape, dtype=np.float64)) > 1 << 22:
                return [((1,), np.dtype(np.float32))]
            specs.append((tuple(int(d) for d in shape), dtype))
        return specs
    except BaseException:  # noqa: BLE001  why: the harness only needs some input to pass on
        return [((1,), np.dtype(np.float32))]


def command_argv(command: str, model: str, workdir: str, seed: int) -> list[str]:
    """The ``edgenn`` arguments for one fuzzed command, writing its input files to
    ``workdir``: random inputs for ``run``, a few calibration samples for ``quantize``."""
    rng = np.random.default_rng(seed)
    out = Path(workdir)
    if command == "inspect":
        return ["inspect", model]
    if command == "run":
        argv = ["run", model]
        for i, (shape, dtype) in enumerate(_input_specs(model)):
            batch = (shape[0] if shape and shape[0] > 1 else 2,)
            path = out / f"input{i}.npy"
            np.save(path, _random_array(rng, batch + shape[1:], dtype))
            argv += ["--input", str(path)]
        return argv + ["--output", str(out / "outputs.npz")]
    if command == "quantize":
        shape, _ = _input_specs(model)[0]
        path = out / "calib.npz"
        np.savez(path, x=rng.standard_normal((4,) + shape[1:]).astype(np.float32))
        return ["quantize", model, "--calib", str(path), "--calib-size", "4",
                "-o", str(out / "quantized.tflite")]
    if command == "compile":
        return ["compile", model, "--target", "cortex-m4", "-o", str(out / "build")]
    raise ValueError(f"unknown fuzz command {command!r}")


def run_command(argv: list[str]) -> tuple[int, str]:
    """Run ``edgenn ARGV`` in this process: (exit code, everything written to stderr)."""
    py_err = io.StringIO()
    with tempfile.TemporaryFile() as c_err, warnings.catch_warnings():
        # why: a fresh filter state per command, so a warning repeated by a later mutant is
        # shown again (the default "once per location" would hide it after the first)
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for category in _HIDDEN:
            warnings.simplefilter("ignore", category)
        saved_fd = os.dup(2)
        os.dup2(c_err.fileno(), 2)
        try:
            with contextlib.redirect_stderr(py_err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    rc = edgenn_main(argv)
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # noqa: BLE001  why: an escaped exception is the finding
                    traceback.print_exc(file=sys.stderr)
                    rc = 1
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
        c_err.seek(0)
        c_text = c_err.read().decode("utf-8", "replace")
    return int(rc), py_err.getvalue() + c_text


def serve(reply: io.TextIOBase) -> None:
    """Answer requests from stdin until it closes."""
    for line in sys.stdin:
        request = json.loads(line)
        argv = command_argv(request["command"], request["model"], request["workdir"],
                            int(request["seed"]))
        rc, err = run_command(argv)
        reply.write(json.dumps({"returncode": rc, "stderr": err}) + "\n")
        reply.flush()


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    # the reply pipe is the original stdout; the commands' stdout goes nowhere
    reply_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    with os.fdopen(reply_fd, "w", encoding="utf-8") as reply:
        serve(reply)


if __name__ == "__main__":
    main()
