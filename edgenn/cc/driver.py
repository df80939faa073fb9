"""Run a C compiler, linker or archiver: the one place for the missing-tool error, the
timeout and the one-line failure.

Every build in edgenn goes through :func:`run_tool`: the host backend's kernels and the SVM
layer's host build (:mod:`edgenn.cc.host`), the Cortex-M firmware and libraries
(``backends/cortexm/build.py``, ``multi_model.py``) and the cross-compiled NEON checks. A
failure is one :class:`CompileError` line, ``WHAT failed: FILE:LINE:COL: error: ...`` (the
first error the compiler printed); the whole log is on the exception (``log``), with the
command line (``command``). A tool that runs past its timeout (default
``DEFAULT_TIMEOUT_S``; every build function takes ``timeout``) is killed with its children
(``cc1``, ``ld``) and is one line naming the timeout.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from edgenn.errors import ToolchainError

# why 300 s: the largest generated source (a model's weights as C arrays, -O3) builds in
# seconds; a compiler still running after five minutes is stuck (or swapping), not busy.
DEFAULT_TIMEOUT_S = 300.0

_ERROR_LINE = re.compile(r"^(.+?):(\d+)(:\d+)?: (fatal )?error")
_OVERFLOW = re.compile(r"region [`'](\w+)' overflowed by (\d+) bytes")


class CompileError(ToolchainError):
    """A compiler, linker or archiver failed or timed out. ``str()`` is one line; ``log`` is
    everything the tool printed on stderr, ``command`` the command line."""

    def __init__(self, message: str, log: str = "", command: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.log = log
        self.command = tuple(command)


def find_tool(names: Sequence[str], what: str, package: str, path: str | None = None) -> str:
    """The full path of the first of ``names`` on ``path`` (default PATH), else a one-line
    ToolchainError naming ``what``, the names tried and the Debian ``package``."""
    for name in names:
        found = shutil.which(name, path=path)
        if found is not None:
            return found
    raise ToolchainError(f"no {what} ({', '.join(names)}) found: install it with "
                         f"`apt-get install {package}`")


@lru_cache(maxsize=8)
def compiler_identity(compiler: str) -> str:
    """``compiler`` and the first line of its ``--version``: part of every key of a cache of
    what it built (host shared objects, measured trial firmwares)."""
    try:
        res = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as err:
        raise ToolchainError(f"cannot run the compiler {compiler}: {err.strerror}") from None
    lines = (res.stdout or res.stderr).strip().splitlines()
    return f"{compiler} {lines[0] if lines else '?'}"


def first_error(log: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """The line of ``log`` that says what went wrong: a memory region the image overflows (the
    linker's figure), else the first ``file:line[:col]: error`` line (a relative file made
    absolute against ``cwd``), else the last non-empty line."""
    over = _OVERFLOW.search(log)
    if over is not None:
        return f"the image overflows {over.group(1)} by {int(over.group(2)):,} bytes"
    for line in log.splitlines():
        match = _ERROR_LINE.match(line)
        if match is not None:
            name = match.group(1)
            if cwd is not None and not Path(name).is_absolute():
                line = f"{Path(cwd) / name}{line[len(name):]}"
            return line.strip()
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown error"


class Cancelled(CompileError):
    """A tool run stopped by its :class:`Cancellation` (its work is not wanted any more)."""


class Cancellation:
    """Stops the tool runs given it (``run_tool(..., cancellation=...)``), from any thread:
    :meth:`cancel` kills those running, and any started later at once; each raises
    :class:`Cancelled`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: list[subprocess.Popen[str]] = []
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            running, self._running = self._running, []
        for proc in running:
            _kill(proc)

    def _started(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            if not self.cancelled:
                self._running.append(proc)
                return
        _kill(proc)

    def _ended(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            if proc in self._running:
                self._running.remove(proc)


def run_tool(cmd: Sequence[str], what: str, *, cwd: str | os.PathLike[str] | None = None,
             timeout: float | None = DEFAULT_TIMEOUT_S,
             cancellation: Cancellation | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` (in ``cwd``) and return the finished process (its stderr may hold
    warnings). A non-zero exit is ``CompileError("WHAT failed: <first error line>")``; running
    past ``timeout`` seconds (None: no limit) kills it and raises
    ``CompileError("WHAT timed out after T s")``; a run its ``cancellation`` cancels is
    killed and raises :class:`Cancelled`."""
    args = [str(a) for a in cmd]
    if cancellation is not None and cancellation.cancelled:
        raise Cancelled(f"{what} cancelled", "", args)
    try:
        # why a session of its own: on a timeout or Ctrl-C the whole group (the gcc driver
        # and its cc1 / as / ld children) is killed, not only the driver
        proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    except OSError as err:
        raise ToolchainError(f"{what}: cannot run {args[0]}: {err.strerror}") from None
    if cancellation is not None:
        cancellation._started(proc)
    try:
        return _finish(proc, args, what, cwd, timeout, cancellation)
    finally:
        if cancellation is not None:
            cancellation._ended(proc)


def _finish(proc: subprocess.Popen[str], args: list[str], what: str,
            cwd: str | os.PathLike[str] | None, timeout: float | None,
            cancellation: Cancellation | None) -> subprocess.CompletedProcess[str]:
    try:
        out, err_text = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        _, err_text = proc.communicate()
        raise CompileError(f"{what} timed out after {timeout:g} s (a build function's "
                           "`timeout` argument sets the limit)", err_text or "", args) from None
    except BaseException:
        _kill(proc)
        proc.wait()
        raise
    res = subprocess.CompletedProcess(args, proc.returncode, out, err_text)
    if res.returncode != 0 and cancellation is not None and cancellation.cancelled:
        raise Cancelled(f"{what} cancelled", res.stderr or "", args)
    if res.returncode != 0:
        log = res.stderr or res.stdout or ""
        raise CompileError(f"{what} failed: {first_error(log, cwd)}", log, args)
    return res


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)
