"""ctypes binding of ``threadpool.c``: the process's persistent pinned thread pool.

``shared_pool()`` is created once per process (and again in a forked child, whose copy of the
pool has no threads). A layer is bound once to a ``Dispatch`` (kernel address, weights, the
schedule's task table, scratch, the emulation capacity table); ``Dispatch.run(x, out)`` is then
one C call that runs the layer on every thread of the schedule and returns after the last one,
with no Python on any worker thread.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from edgenn.backends.host.schedule import TaskSpan
from edgenn.cc import load_library
from edgenn.errors import EdgennError

C_SOURCE = Path(__file__).with_name("threadpool.c")
#: C11 atomics and the GNU affinity API; -pthread for the workers.
POOL_FLAGS = ("-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread")
#: How long idle threads spin before sleeping: covers the gap between back-to-back layers
#: (Python dispatch, a small reference layer) without burning a core when the model is idle.
DEFAULT_SPIN_US = 100.0

_STATS = 7  # int64 per task: work, spin (wall ns), partitions, cpu, error, work, spin (CPU ns)
_lock = threading.Lock()
_pool: ThreadPool | None = None


class PoolError(EdgennError):
    """The pool could not start a thread or bind one to its CPUs."""


def _library() -> ctypes.CDLL:
    lib = load_library([C_SOURCE], POOL_FLAGS, name="edgenn_threadpool")
    if not lib.edgenn_pool_run.argtypes:  # why: typed once per loaded library
        vp, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
        lib.edgenn_pool_create.argtypes = [i64]
        lib.edgenn_pool_create.restype = vp
        lib.edgenn_pool_threads.argtypes = [vp]
        lib.edgenn_pool_threads.restype = ctypes.c_int
        lib.edgenn_pool_destroy.argtypes = [vp]
        lib.edgenn_pool_destroy.restype = None
        lib.edgenn_pool_run.argtypes = [vp, vp, vp, vp, vp, vp, vp, i64, i32, vp, vp, vp, i32,
                                        vp, i32, i32]
        lib.edgenn_pool_run.restype = ctypes.c_int
        lib.edgenn_pool_release_caller.argtypes = []
        lib.edgenn_pool_release_caller.restype = None
        if lib.edgenn_pool_stats_per_task() != _STATS:  # why: a stale build of another layout
            raise PoolError("threadpool.c and threadpool.py disagree on the stats layout")
    return lib


@dataclass(frozen=True)
class TaskStats:
    """What one thread did in the last run of a ``Dispatch``."""

    work_ms: float  # wall time in the kernel
    emulation_spin_ms: float  # wall time of the busy-wait emulating a slower core (else 0)
    partitions: int
    cpu: int  # the CPU it was on after its last partition
    # The same two in this thread's CPU time (what emulation scales); None unless emulating
    # or ``Dispatch.measure_cpu``.
    work_cpu_ms: float | None
    emulation_spin_cpu_ms: float | None


class ThreadPool:
    """Persistent workers; the calling thread runs task 0 of every layer itself."""

    def __init__(self, spin_us: float = DEFAULT_SPIN_US) -> None:
        self.lib = _library()
        self.pid = os.getpid()
        self.handle = self.lib.edgenn_pool_create(int(spin_us * 1e3))
        if not self.handle:
            raise PoolError("cannot allocate the host thread pool")

    @property
    def threads(self) -> int:
        """Threads started so far, the caller included (the pool grows on demand)."""
        return int(self.lib.edgenn_pool_threads(self.handle))

    def close(self) -> None:
        if self.handle and self.pid == os.getpid():
            self.lib.edgenn_pool_destroy(self.handle)
        self.handle = None


def shared_pool() -> ThreadPool:
    """The process's pool, started on first use (again after ``fork``)."""
    global _pool
    pool = _pool
    if pool is not None:
        return pool
    with _lock:
        if _pool is None:
            _pool = ThreadPool()
        return _pool


def _forget_after_fork() -> None:
    """A forked child has the parent's pool memory but none of its threads: start afresh."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_after_fork)


@atexit.register
def _shutdown() -> None:
    if _pool is not None:
        _pool.close()


class Dispatch:
    """One layer bound to a task table: ``run(x, out)`` is a single C call.

    ``kernel`` is the address of an ``<name>_run`` function of the shared kernel ABI; the
    ``weights`` / ``bias`` arrays stay referenced here for as long as the dispatch lives.
    ``capacity`` is the emulation table (capacity per CPU id) or None.
    """

    def __init__(self, kernel: int, weights: np.ndarray | None, bias: np.ndarray | None,
                 spans: tuple[TaskSpan, ...], scratch_floats: int,
                 capacity: list[float] | None = None, pool: ThreadPool | None = None) -> None:
        if not spans:
            raise PoolError("a layer run needs at least one task")
        self.pool = pool
        self.kernel = kernel
        self.weights = weights
        self.bias = bias
        self.spans = spans
        self.scratch_floats = int(scratch_floats)
        cpus: list[int] = []
        table = []
        for s in spans:
            table.append((s.begin, s.end, len(cpus), len(s.cpus)))
            cpus.extend(s.cpus)
        self.tasks = np.ascontiguousarray(np.array(table, np.int32).reshape(-1, 4))
        self.cpus = np.array(cpus or [0], np.int32)
        self.capacity = None if capacity is None else np.array(capacity, np.float32)
        self.scratch = (np.zeros(len(spans) * self.scratch_floats, np.float32)
                        if self.scratch_floats else None)
        self.stats = np.zeros((len(spans), _STATS), np.int64)
        #: Measure each thread's CPU time even without emulation (two clock reads per thread
        #: and run): what ``HostExecutable.bench`` uses for its load-independent estimate.
        self.measure_cpu = False
        self._fixed = (
            ctypes.c_void_p(kernel),
            _ptr(weights), _ptr(bias), _ptr(self.scratch), self.scratch_floats, len(spans),
            self.tasks.ctypes.data, self.cpus.ctypes.data,
            _ptr(self.capacity), 0 if self.capacity is None else len(self.capacity),
            self.stats.ctypes.data,
        )

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Compute ``out`` from ``x`` (both C-contiguous float32, batch 1) on the schedule."""
        self.run_at(address(x), address(out))

    def run_at(self, x: int, out: int, keep_bound: bool = False) -> None:
        """``run`` with the arrays' data addresses (callers that keep their buffers).

        The calling thread runs task 0 bound to its CPUs; ``keep_bound`` leaves it bound after
        the call (no system call when the next layer pins task 0 alike) until
        ``release_caller()``: for loops over layers that release at the end."""
        pool = self.pool if self.pool is not None else shared_pool()
        fn, w, b, scratch, sfl, n, tasks, cpus, cap, ncap, stats = self._fixed
        err = pool.lib.edgenn_pool_run(pool.handle, fn, x, w, b, out, scratch, sfl, n, tasks,
                                       cpus, cap, ncap, stats, keep_bound, self.measure_cpu)
        if err:
            bad = [s for s, row in zip(self.spans, self.stats, strict=True) if row[4]]
            where = f" (cpu {bad[0].cpus})" if bad else ""
            raise PoolError(f"thread pool: {os.strerror(err)}{where}")

    def busiest_cpu_ms(self) -> float | None:
        """The last run's critical path in CPU time: the busiest thread's work plus emulation
        busy-wait. What the layer would take if every thread had its CPU to itself (preemption
        by other processes and the hand-over excluded); None when CPU time was not measured."""
        if (self.stats[:, 5] < 0).any():
            return None
        return float((self.stats[:, 5] + self.stats[:, 6]).max()) / 1e6

    def task_stats(self) -> list[TaskStats]:
        """Per-thread figures of the last ``run``."""
        return [TaskStats(float(row[0]) / 1e6, float(row[1]) / 1e6, int(row[2]), int(row[3]),
                          _ms_or_none(row[5]), _ms_or_none(row[6])) for row in self.stats]


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else int(a.ctypes.data)


def address(a: np.ndarray) -> int:
    """The data address of a C-contiguous array, cheaply (``a.ctypes.data`` costs microseconds,
    which adds up over a network's layers)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(cast(Any, a)))
    except (TypeError, ValueError):  # read-only or empty: the slow, general way
        return int(a.ctypes.data)


def _ms_or_none(ns: np.int64) -> float | None:
    return None if ns < 0 else float(ns) / 1e6


def release_caller() -> None:
    """Give the calling thread back its own CPU affinity (a pinned task 0 keeps it bound)."""
    if _pool is not None:
        _pool.lib.edgenn_pool_release_caller()
