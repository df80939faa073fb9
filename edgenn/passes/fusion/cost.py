"""Latency of a graph with some chains fused: measured cycles when known, else analytic.

Measured figures (the Cortex-M emulator's per-layer cycles) come as a mapping: a node name
-> cycles of that layer run unfused, a tuple of member names -> cycles of that chain fused.
Whatever is missing is estimated as ``MACs / (MACs per cycle of the kernel kind)``; the rates
are assumptions taken from the shared Cortex-M4 figures (CMSIS-NN reaches 0.07-0.09 MAC/cycle
on a 1-channel first layer and 0.38-0.52 on 3x3 convolutions; our SMLAD convolution's inner
loop does 16 MACs in 16 cycles) and are only used to rank candidates, never reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from edgenn.analysis import node_macs
from edgenn.ir import Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.passes.fusion.chains import Chain

# Assumed MACs per cycle of each kernel kind (Cortex-M4, int8, DSP kernels).
MACS_PER_CYCLE = {"conv_1ch": 0.10, "depthwise": 0.30, "conv": 0.80, "fully_connected": 0.80}
# Assumed cycles per output element of any other operator (pooling, add, mean, ...).
CYCLES_PER_ELEMENT = 2.0
# Assumed fused / layer-by-layer cycle ratio per variant: the per-pixel modulo of (b) costs,
# hoisting (c) removes it, 1x2 pixel reuse (d) saves loads.
FUSED_RATIO = {"ring_modulo": 1.10, "ring_hoisted": 1.00, "ring_hoisted_pair": 0.93}


def kernel_kind(graph: Graph, node: Node) -> str:
    if node.op == "FullyConnected":
        return "fully_connected"
    if node.op != "Conv2D":
        return "other"
    if is_depthwise(node, graph):
        return "depthwise"
    return "conv_1ch" if graph.tensor(node.inputs[0]).shape[-1] == 1 else "conv"


@dataclass(frozen=True)
class CostModel:
    """Cycles of unfused layers and fused chains (see the module docstring)."""

    layer_cycles: Mapping[str, float] = field(default_factory=dict)
    chain_cycles: Mapping[tuple[str, ...], float] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, cost: Mapping[object, float] | CostModel | None) -> CostModel:
        """From ``{node name: cycles, (member names...): cycles}`` (or None: all analytic)."""
        if cost is None:
            return cls()
        if isinstance(cost, CostModel):
            return cost
        layers = {k: float(v) for k, v in cost.items() if isinstance(k, str)}
        chains = {tuple(k): float(v) for k, v in cost.items() if isinstance(k, tuple)}
        return cls(layers, chains)

    def node(self, graph: Graph, node: Node) -> float:
        if node.name in self.layer_cycles:
            return self.layer_cycles[node.name]
        kind = kernel_kind(graph, node)
        if kind == "other":
            return CYCLES_PER_ELEMENT * sum(graph.tensor(o).size for o in node.outputs)
        return node_macs(graph, node) / MACS_PER_CYCLE[kind]

    def chain(self, graph: Graph, chain: Chain, variant: str) -> float:
        if chain.names in self.chain_cycles:
            return self.chain_cycles[chain.names]
        return FUSED_RATIO[variant] * sum(self.node(graph, m) for m in chain.nodes)
