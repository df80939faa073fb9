"""Static layer fusion: conv chains run row by row through KH-row ring buffers.

``find_chains`` finds them (with the residual Add that ends a block, if any),
``plan_fusion`` chooses which to fuse (RAM budget / latency bound), ``apply_fusion``
rewrites them into FusedConvChain nodes; ``ring_bytes`` and ``row_schedule`` describe the
rings and the order rows are produced (see docs/fusion.md).
"""

from edgenn.passes.fusion.chains import (
    Chain,
    ConvGeom,
    chain_of_node,
    find_chains,
    fused_names,
    residual_add,
)
from edgenn.passes.fusion.cost import CostModel
from edgenn.passes.fusion.planner import FusionDecision, plan_fusion, segmentations
from edgenn.passes.fusion.rewrite import RING_ELEMENT_BYTES, VARIANTS, apply_fusion, fused_node
from edgenn.passes.fusion.ring import RowStep, ring_bytes, ring_rows, ring_shapes, row_schedule

__all__ = [
    "RING_ELEMENT_BYTES",
    "VARIANTS",
    "Chain",
    "ConvGeom",
    "CostModel",
    "FusionDecision",
    "RowStep",
    "apply_fusion",
    "chain_of_node",
    "find_chains",
    "fused_names",
    "fused_node",
    "plan_fusion",
    "residual_add",
    "ring_bytes",
    "ring_rows",
    "ring_shapes",
    "row_schedule",
    "segmentations",
]
