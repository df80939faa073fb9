"""Wall time of a compile's phases (code generation, each gcc run, link, emulation): off by
default, for ``benchmarks/compile_time.py`` and for whoever asks why a compile is slow.

A phase is logged at debug level on the ``edgenn.phases`` logger, and appended as one JSON
line (``phase``, ``start`` and ``seconds`` from the process's first phase, ``thread``) to the
file named by ``EDGENN_PHASE_LOG`` when it is set. With neither, :func:`phase` only reads a
flag: the plain path pays nothing measurable.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "EDGENN_PHASE_LOG"
logger = logging.getLogger("edgenn.phases")
_lock = threading.Lock()
_origin: list[float] = []  # perf_counter of the first phase: starts are relative to it


def enabled() -> bool:
    return bool(os.environ.get(ENV)) or logger.isEnabledFor(logging.DEBUG)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase ``name`` (when enabled)."""
    if not enabled():
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        _record(name, start, time.perf_counter() - start)


def _record(name: str, start: float, seconds: float) -> None:
    with _lock:
        if not _origin:
            _origin.append(start)
        entry = {"phase": name, "start": round(start - _origin[0], 4),
                 "seconds": round(seconds, 4), "thread": threading.current_thread().name}
        logger.debug("%s: %.3f s (at %.3f s, %s)", name, seconds, entry["start"],
                     entry["thread"])
        path = os.environ.get(ENV)
        if path:
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")
            except OSError:  # a log that cannot be written must not fail a compile
                pass
