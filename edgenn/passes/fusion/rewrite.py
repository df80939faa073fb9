"""Replace chosen chains by FusedConvChain nodes."""

from __future__ import annotations

from collections.abc import Sequence

from edgenn.errors import GraphValidationError
from edgenn.ir import Graph, Node
from edgenn.passes.fusion.chains import Chain
from edgenn.passes.fusion.ring import ring_bytes

# The fused-chain kernels: per-pixel modulo ring addressing, row addresses hoisted per output
# row, and hoisted + two output pixels per SMLAD step (edgenn.fusion adds layer_by_layer,
# the unfused graph, and the aliases a-d).
VARIANTS = ("ring_modulo", "ring_hoisted", "ring_hoisted_pair")
# Bytes per ring element each variant stores: the Cortex-M kernel keeps every ring in int16
# (values minus the reader's zero point, SMLAD operands as they are) in all three variants,
# so ring_modulo and ring_hoisted differ from ring_hoisted_pair only in addressing /
# pixel reuse, and plans count 2 bytes.
RING_ELEMENT_BYTES = {"ring_modulo": 2, "ring_hoisted": 2, "ring_hoisted_pair": 2}


def fused_node(chain: Chain, variant: str) -> Node:
    """The FusedConvChain node of ``chain``: inputs = chain input + every member constant."""
    if variant not in VARIANTS:
        raise GraphValidationError(f"{chain}: unknown fusion variant {variant!r}; "
                                   f"choose one of {', '.join(VARIANTS)}")
    consts = [name for m in chain.members for name in m.inputs[1:] if name]
    return Node(
        name="fused(" + ",".join(chain.names) + ")",
        op="FusedConvChain",
        inputs=(chain.input.name, *consts),
        outputs=(chain.output.name,),
        attrs={
            "members": chain.members,
            "intermediates": chain.intermediates,
            # the residual Add (its operands: the last member's output and input 0), or None
            "residual": chain.residual,
            "variant": variant,
            # arena scratch at this step (edgenn.memory.lifetimes): the rings
            "scratch_bytes": ring_bytes(chain, RING_ELEMENT_BYTES[variant]),
        },
    )


def apply_fusion(graph: Graph, chains: Sequence[Chain],
                 variant: str = "ring_hoisted_pair") -> Graph:
    """A new graph where each chain of ``chains`` is one FusedConvChain node.

    The node goes where the chain's last member was (every value it reads exists by then and
    every reader of its output comes later). The intermediates leave the graph's tensors, so
    the memory planner sees only the node's ring scratch.
    """
    if not chains:
        return graph
    by_last: dict[str, Node] = {}
    dropped: set[str] = set()
    names = {n.name for n in graph.nodes}
    for chain in chains:
        missing = [m for m in chain.names if m not in names or m in dropped]
        if missing:
            raise GraphValidationError(f"{chain}: node {missing[0]!r} is not in graph "
                                       f"{graph.name!r} or is in two chains")
        dropped.update(chain.names)
        by_last[chain.names[-1]] = fused_node(chain, variant)
    nodes = [by_last.get(n.name, n) for n in graph.nodes
             if n.name not in dropped or n.name in by_last]
    return graph.with_nodes(nodes).validate()
