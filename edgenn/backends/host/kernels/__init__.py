"""Host float32 kernels generated as C per layer shape and compiled at run time.

``candidate_configs(node, graph)`` lists the algorithm x micro-kernel choices for a layer,
``default_config(node, graph)`` is the Arm-Compute-Library-like rule, ``prepare(node, graph,
config)`` returns a :class:`HostOp` (compiled, weights packed, partition plan). See
``docs/host_kernels.md``.
"""

from edgenn.backends.host.kernels.candidates import candidate_configs, host_shape, supports
from edgenn.backends.host.kernels.config import (
    ALGORITHMS,
    DEPTHWISE_KERNELS,
    GEMM_KERNELS,
    HYBRID,
    INTERLEAVED,
    KERNELS_FOR,
    HostKernelConfig,
)
from edgenn.backends.host.kernels.generate import generate
from edgenn.backends.host.kernels.generated import Generated, HostPlan
from edgenn.backends.host.kernels.isa import host_isa
from edgenn.backends.host.kernels.op import HostOp, prepare, prepare_many
from edgenn.backends.host.kernels.rules import default_config

__all__ = ["ALGORITHMS", "DEPTHWISE_KERNELS", "GEMM_KERNELS", "HYBRID", "INTERLEAVED",
           "KERNELS_FOR", "Generated", "HostKernelConfig", "HostOp", "HostPlan",
           "candidate_configs", "default_config", "generate", "host_isa", "host_shape",
           "prepare", "prepare_many", "supports"]
