"""Bind a prepared host operator to a thread schedule: the glue between kernels and the pool.

The kernels (``edgenn.backends.host.kernels``) turn a node and a ``HostKernelConfig`` into a
``HostOp``: a compiled ``<name>_run`` function of the shared ABI, packed weights, bias, and a
plan (how many output partitions, scratch floats per thread). ``bind`` splits the plan's
partitions by the schedule and returns the ``Dispatch`` that runs the op in one C call.

``KernelLibrary`` is that kernel interface as a protocol, so the executable and the layer
bench can be driven by a stand-in library in tests.
"""

from __future__ import annotations

import ctypes
from typing import Any, Protocol

import numpy as np

from edgenn.backends.host.schedule import ThreadSchedule, split_partitions
from edgenn.backends.host.threadpool import Dispatch
from edgenn.backends.host.topology import Topology
from edgenn.ir import Graph, Node


class KernelLibrary(Protocol):
    """What the host backend needs from a kernel library."""

    def candidate_configs(self, node: Node, graph: Graph) -> list[Any]: ...

    def default_config(self, node: Node, graph: Graph) -> Any: ...

    def prepare(self, node: Node, graph: Graph, config: Any) -> Any: ...


def kernel_library() -> KernelLibrary:
    """The real kernels: the ``edgenn.backends.host.kernels`` package (generated C for direct,
    im2col + GEMM, Winograd and depthwise convolution), imported when first needed."""
    from edgenn.backends.host import kernels

    return kernels


def kernel_address(op: Any) -> int:
    """The address of the op's ``<name>_run`` function (``op.address``, else ``op.fn``)."""
    address = getattr(op, "address", None)
    if isinstance(address, int) and address:
        return address
    fn = getattr(op, "fn", None)
    if fn is None:
        raise TypeError(f"{op!r} exposes no compiled kernel function")
    address = ctypes.cast(fn, ctypes.c_void_p).value
    if not address:
        raise TypeError(f"{op!r}: null kernel function")
    return int(address)


def op_arrays(op: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(packed weights, bias) as the kernel reads them."""
    weights = getattr(op, "weights_packed", None)
    if weights is None:
        weights = getattr(op, "weights", None)
    return weights, getattr(op, "bias", None)


def bind(op: Any, schedule: ThreadSchedule, topology: Topology) -> Dispatch:
    """The dispatch that runs ``op`` with ``schedule`` on ``topology``'s CPUs."""
    plan = op.plan
    spans = split_partitions(schedule, topology, int(plan.partition_count))
    weights, bias = op_arrays(op)
    return Dispatch(kernel_address(op), weights, bias, spans, int(plan.scratch_floats),
                    topology.capacity_table())
