"""Which kernel configurations can compute a layer: the per-layer kernel search space."""

from __future__ import annotations

from edgenn.backends.host.kernels.config import KERNELS_FOR, HostKernelConfig
from edgenn.backends.host.kernels.generate import applicable
from edgenn.backends.host.kernels.layer import LayerShape, layer_shape
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node


def host_shape(node: Node, graph: Graph) -> LayerShape | None:
    """The layer's shape if a host kernel computes it, else None (the reference runs it)."""
    try:
        return layer_shape(node, graph)
    except UnsupportedOperatorError:
        return None


def supports(node: Node, graph: Graph) -> bool:
    """Whether the host kernels compute ``node`` (float32 Conv2D / depthwise / dense)."""
    return host_shape(node, graph) is not None


def candidate_configs(node: Node, graph: Graph, isa: str = "auto") -> list[HostKernelConfig]:
    """Every algorithm x micro-kernel that applies to ``node``; empty when none does.

    Applicability: ``gemm`` for 1x1 stride-1 unpadded convolutions and FullyConnected;
    ``winograd_*`` for 3x3 stride-1 convolutions; ``direct``, ``im2col``, ``indirect`` for
    every (non-depthwise) convolution; ``depthwise`` only for depthwise ones. Hybrid
    micro-kernels only for ``direct`` / ``indirect``.
    """
    shape = host_shape(node, graph)
    if shape is None:
        return []
    return [HostKernelConfig(algo, kernel, isa)
            for algo in applicable(shape) for kernel in KERNELS_FOR[algo]]
