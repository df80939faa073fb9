"""A prepared host operator: compiled kernel, packed weights, plan; runnable from Python.

``prepare(node, graph, config)`` generates the C, compiles it through
:mod:`edgenn.cc` (content-hash cached) and packs the weights once.
``run_partition`` calls the ABI entry point on one range of output partitions, which is
what the thread pool does from C; ``run`` computes the whole output on this thread.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.host.kernels.config import HostKernelConfig
from edgenn.backends.host.kernels.generate import generate
from edgenn.backends.host.kernels.generated import Generated, HostPlan
from edgenn.backends.host.kernels.isa import Isa, runnable
from edgenn.backends.host.kernels.packing import aligned_zeros
from edgenn.cc import Source, load_library
from edgenn.errors import ShapeError, UnsupportedOperatorError
from edgenn.ir import Graph, Node

C_DIR = Path(__file__).resolve().parent.parent / "c"
# why -Wno-aggressive-loop-optimizations: once a Winograd output transform is inlined with
# constant channel bounds, GCC 12 warns about the (never entered) scalar tail loop after the
# vector loop ("iteration 2147483639 invokes undefined behavior"): a false positive that
# -Werror would turn into a failed build of a valid kernel
_COMMON = ("-O3", "-Wall", "-Wextra", "-Werror", "-Wno-aggressive-loop-optimizations",
           "-fno-math-errno", "-ffp-contract=fast")

_KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)


def compile_flags(isa: Isa) -> tuple[str, ...]:
    """Flags for generated kernels: GNU C for the vector extensions, ISO C99 for scalar."""
    std = "-std=gnu11" if isa.simd else "-std=c99"
    return (*_COMMON, std, *isa.flags)


@dataclass
class HostOp:
    """One operator ready to run: see the module docstring."""

    node: Node
    generated: Generated
    in_shape: tuple[int, ...]  # batch-1 NHWC (conv) or [1, K] (dense)
    out_shape: tuple[int, ...]
    fn: Any = field(repr=False)  # the ctypes function of the entry point
    lib: ctypes.CDLL = field(repr=False)

    @property
    def config(self) -> HostKernelConfig:
        return self.generated.config

    @property
    def plan(self) -> HostPlan:
        return self.generated.plan

    @property
    def source(self) -> str:
        return self.generated.source

    @property
    def weights(self) -> np.ndarray:
        return self.generated.weights

    @property
    def bias(self) -> np.ndarray:
        return self.generated.bias

    @property
    def address(self) -> int:
        """The entry point's address, for C callers (the thread pool)."""
        return ctypes.cast(self.fn, ctypes.c_void_p).value or 0

    def scratch(self, threads: int = 1) -> np.ndarray:
        """A zeroed scratch buffer for ``threads`` threads (``plan.scratch_floats`` each)."""
        return aligned_zeros(max(1, self.plan.scratch_floats * threads))

    def run_partition(self, x: np.ndarray, out: np.ndarray, begin: int, end: int,
                      scratch: np.ndarray | None = None) -> None:
        """Compute output partitions ``[begin, end)`` of ``out`` from ``x`` (batch 1)."""
        self._check(x, self.in_shape, "input")
        self._check(out, self.out_shape, "output")
        if not 0 <= begin <= end <= self.plan.partition_count:
            raise ShapeError(f"{self.node}: partitions [{begin}, {end}) outside "
                             f"[0, {self.plan.partition_count})")
        buf = self.scratch() if scratch is None else scratch
        if buf.size < self.plan.scratch_floats or buf.dtype != np.float32:
            raise ShapeError(f"{self.node}: scratch needs {self.plan.scratch_floats} float32")
        self.fn(x.ctypes.data, self.weights.ctypes.data, self.bias.ctypes.data,
                out.ctypes.data, buf.ctypes.data, begin, end)

    def run(self, x: np.ndarray) -> np.ndarray:
        """The whole output for a batch of inputs ``[N, *in_shape[1:]]`` on this thread."""
        x = np.ascontiguousarray(x, np.float32)
        outs = np.empty((x.shape[0], *self.out_shape[1:]), np.float32)
        buf = self.scratch()
        for i in range(x.shape[0]):
            self.run_partition(x[i:i + 1], outs[i:i + 1], 0, self.plan.partition_count, buf)
        return outs

    def _check(self, arr: np.ndarray, shape: tuple[int, ...], what: str) -> None:
        if arr.shape != shape or arr.dtype != np.float32 or not arr.flags.c_contiguous:
            raise ShapeError(f"{self.node}: {what} must be C-contiguous float32 of shape "
                             f"{list(shape)}, got {arr.dtype.name} {list(arr.shape)}")


def build(generated: Generated, cache_dir: str | Path | None = None
          ) -> tuple[ctypes.CDLL, Any]:
    """Compile (or fetch from the cache) and return the library and its entry point."""
    lib = load_library([Source(f"{generated.name}.c", generated.source)],
                       compile_flags(generated.isa), include_dirs=[C_DIR],
                       cache_dir=cache_dir, name=generated.name)
    fn = _KernelFn((f"{generated.name}_run", lib))
    return lib, fn


def prepare(node: Node, graph: Graph, config: HostKernelConfig,
            cache_dir: str | Path | None = None) -> HostOp:
    """Generate, compile and pack ``node`` with ``config`` (see the module docstring)."""
    generated = generate(node, graph, config)
    if not runnable(generated.isa):
        raise UnsupportedOperatorError(
            f"{node}: this machine cannot run {generated.isa.name} code "
            "(generate() still emits it)")
    lib, fn = build(generated, cache_dir)
    in_shape = tuple(graph.tensor(node.inputs[0]).shape)
    out_shape = tuple(graph.tensor(node.outputs[0]).shape)
    return HostOp(node, generated, in_shape, out_shape, fn, lib)


def prepare_many(items: Sequence[tuple[Node, HostKernelConfig]], graph: Graph,
                 cache_dir: str | Path | None = None, jobs: int | None = None) -> list[HostOp]:
    """:func:`prepare` for many layers, compiling up to ``jobs`` (default: CPUs) at once.

    why threads: each compile is a compiler subprocess, so threads overlap them; a whole
    model's first build is compile-bound (about a second per distinct kernel).
    """
    workers = max(1, jobs or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(prepare, node, graph, cfg, cache_dir) for node, cfg in items]
        return [f.result() for f in futures]
