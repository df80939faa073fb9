"""What a kernel generator hands back: C source, packed weights and the partition plan."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.backends.host.kernels.config import HostKernelConfig
from edgenn.backends.host.kernels.isa import Isa


@dataclass(frozen=True)
class HostPlan:
    """How the output is split for threads and what each thread needs.

    The operator's ``<name>_run(in, weights, bias, out, scratch, begin, end)`` computes output
    partitions ``[begin, end)`` of ``partition_count``; a partition is ``partition_size``
    output rows (GEMM rows, or output image rows for direct and depthwise, or Winograd
    tiles) or output channels, as ``partition_axis`` says. ``scratch_floats`` is per thread.
    """

    partition_count: int
    partition_axis: str  # "rows" | "channels"
    partition_size: int
    scratch_floats: int
    macs: int


@dataclass(frozen=True)
class Generated:
    """A generated operator before compilation."""

    name: str  # the C entry point is f"{name}_run"
    source: str
    isa: Isa
    config: HostKernelConfig
    weights: np.ndarray  # packed, float32, 64-byte aligned
    bias: np.ndarray  # padded, float32
    plan: HostPlan
