"""``LayerBench``: one layer, prepared with any kernel configuration and thread schedule, run on
fixed input. The tuner (``edgenn.tune``) measures every trial through it.

    bench = LayerBench(node, graph, topology)
    bench.prepare(config, schedule)   # generate + compile (cached per config), bind the schedule
    bench.run_once()                  # one run of the layer on the pool, nothing else
    assert bench.check()              # output vs the reference runtime (1e-4 relative)

The input is seeded random data of the node's input shape (batch 1); the output buffer is
allocated once, so ``run_once`` measures the layer and the pool's hand-over only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.backends.host.binding import KernelLibrary, bind, kernel_library
from edgenn.backends.host.schedule import ThreadSchedule
from edgenn.backends.host.threadpool import Dispatch, TaskStats, address, release_caller
from edgenn.backends.host.topology import Topology
from edgenn.backends.ref.layer import layer_class
from edgenn.errors import EdgennError
from edgenn.ir import Graph, Node

#: ``check``'s bound on max |host - ref| / max |ref| (float32 sums in another order).
CHECK_RTOL = 1e-4


class LayerBench:
    """Prepare-and-run harness for one node of ``graph`` on ``topology``."""

    def __init__(self, node: Node, graph: Graph, topology: Topology, *,
                 kernels: KernelLibrary | None = None, seed: int = 0) -> None:
        self.node = node
        self.graph = graph
        self.topology = topology
        self.kernels = kernels if kernels is not None else kernel_library()
        rng = np.random.default_rng(seed)
        self.inputs = [rng.uniform(-1.0, 1.0, t.shape).astype(np.float32)
                       for t in graph.node_inputs(node) if t is not None and not t.is_const]
        if not self.inputs:
            raise EdgennError(f"{node}: no activation input to benchmark")
        self.x = np.ascontiguousarray(self.inputs[0])
        self.out = np.zeros(graph.tensor(node.outputs[0]).shape, np.float32)
        self._x_at, self._out_at = address(self.x), address(self.out)
        self._ops: dict[Any, Any] = {}
        self._dispatch: Dispatch | None = None
        self._reference: np.ndarray | None = None
        self.config: Any = None
        self.schedule: ThreadSchedule | None = None
        self.max_rel_error: float | None = None

    def candidate_configs(self) -> list[Any]:
        return list(self.kernels.candidate_configs(self.node, self.graph))

    def default_config(self) -> Any:
        return self.kernels.default_config(self.node, self.graph)

    def prepare(self, config: Any, schedule: ThreadSchedule) -> None:
        """Compile ``config`` (once per config) and bind ``schedule``; the next ``run_once``
        and ``check`` use them."""
        key = _cache_key(config)
        op = self._ops.get(key)
        if op is None:
            op = self.kernels.prepare(self.node, self.graph, config)
            self._ops[key] = op
        release_caller()
        self._dispatch = bind(op, schedule, self.topology)
        self.config, self.schedule = config, schedule
        self.max_rel_error = None

    def run_once(self) -> None:
        """Run the prepared layer once on the fixed input.

        As inside a network, the calling thread stays bound to the CPUs of the schedule's
        first thread between runs (no affinity system call per run); ``prepare``, ``check``
        and ``release`` give it back its own CPUs."""
        if self._dispatch is None:
            raise EdgennError(f"{self.node}: LayerBench.prepare(config, schedule) first")
        self._dispatch.run_at(self._x_at, self._out_at, keep_bound=True)

    def release(self) -> None:
        """Give the calling thread back its own CPU affinity."""
        release_caller()

    def check(self, rtol: float = CHECK_RTOL) -> bool:
        """Run once into a NaN-filled buffer and compare with the reference runtime: every
        element written, and max |out - ref| <= rtol * max |ref|. Sets ``max_rel_error``."""
        self.out.fill(np.nan)
        self.run_once()
        release_caller()
        ref = self.reference()
        scale = max(float(np.abs(ref).max(initial=0.0)), float(np.finfo(np.float32).tiny))
        err = float(np.abs(self.out - ref).max(initial=0.0)) / scale
        self.max_rel_error = err if np.isfinite(err) else float("inf")
        return bool(np.isfinite(self.out).all()) and self.max_rel_error <= rtol

    def reference(self) -> np.ndarray:
        """The reference runtime's output on the fixed input (computed once)."""
        if self._reference is None:
            layer = layer_class(self.node, self.graph)(self.node, self.graph)
            self._reference = np.asarray(layer.run(*self.inputs)[0], np.float32)
        return self._reference

    def task_stats(self) -> list[TaskStats]:
        """Per-thread figures of the last run (work, emulation spin, partitions, CPU)."""
        if self._dispatch is None:
            return []
        return self._dispatch.task_stats()


def _cache_key(config: Any) -> Any:
    """The config itself when hashable (frozen dataclasses), else its repr."""
    try:
        hash(config)
    except TypeError:
        return repr(config)
    return config
