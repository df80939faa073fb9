"""The record of int8 L2Norm over the last axis, as TFLite Micro's prepare checks it: the
output is fixed at scale 1/128 and zero point 0, so the only constant is the input's zero
point (the normalisation itself is computed per row at run time)."""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node
from edgenn.prepared.quant import per_tensor


@dataclass(frozen=True)
class L2NormParams:
    in_zp: int


def prepare_l2norm(node: Node, graph: Graph) -> L2NormParams:
    """The record of an int8 L2Norm node (one error for an output TFLM cannot write)."""
    in_zp = per_tensor(node, graph.tensor(node.inputs[0]), "input").zp
    qo = per_tensor(node, graph.tensor(node.outputs[0]), "output")
    if qo.s != 1.0 / 128 or qo.zp != 0:
        raise UnsupportedOperatorError(
            f"{node}: int8 L2Norm writes scale 1/128 and zero point 0, but the "
            f"output is declared {qo!r}")
    return L2NormParams(in_zp)
