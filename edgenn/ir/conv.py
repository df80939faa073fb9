"""What kind of convolution a Conv2D node is: the one test every importer, exporter, pass and
backend asks ("is this Conv2D depthwise?").

A Conv2D is depthwise when it has more than one group and each group reads one input
channel: ``groups == Cin > 1`` and weights ``[Cin * M, KH, KW, 1]`` (TFLite's
DEPTHWISE_CONV_2D; ``M``, the depth multiplier, may be more than 1). One group of one channel
is a plain convolution.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgenn.ir.graph import Graph
from edgenn.ir.node import Node


def is_depthwise_conv(groups: int, in_channels: int, weight_shape: Sequence[int]) -> bool:
    """Whether a convolution of these groups, input channels and OHWI weights is depthwise."""
    return groups > 1 and groups == in_channels and weight_shape[3] == 1


def is_depthwise(node: Node, graph: Graph) -> bool:
    """Whether ``node`` is a depthwise Conv2D (False for every other operator)."""
    if node.op != "Conv2D" or len(node.inputs) < 2:
        return False
    x, w = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    return is_depthwise_conv(int(node.attr("groups", 1)), x.shape[3], w.shape)
