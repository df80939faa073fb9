"""The records of the data-moving operators whose int8 output may be quantized differently
from the input: Reshape and Transpose (``requant``), Pad (the quantized pad value) and Concat
(one rescale per input).

As the exporter writes such a node for TFLite Micro: the op in the input's quantization, then
an int8 -> int8 QUANTIZE to the declared output parameters (equal parameters cost nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import quantize_scalar
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor
from edgenn.prepared.requant import Requant, output_requant

_INT8 = (DType.INT8,)


def move_requant(node: Node, graph: Graph) -> Requant | None:
    """The int8 rescale after a Reshape or Transpose, or None."""
    return output_requant(node, graph, _INT8)


@dataclass(frozen=True)
class PadParams:
    """``pads``: (before, after) per axis (the batch axis unpadded); ``value`` the pad value in
    the input's quantization (the real value for float and unquantized types)."""

    pads: tuple[tuple[int, int], ...]
    value: float | int
    requant: Requant | None


def prepare_pad(node: Node, graph: Graph) -> PadParams:
    """The record of a Pad node."""
    x = graph.tensor(node.inputs[0])
    pads = tuple((int(b), int(a)) for b, a in node.attr("pads"))
    if pads and pads[0] != (0, 0):
        raise UnsupportedOperatorError(f"{node}: padding the batch axis")
    value: float | int = float(node.attr("value", 0.0) or 0.0)
    if x.dtype in (DType.INT8, DType.INT16) and x.quant is not None:
        q = per_tensor(node, x, "input")
        info = np.iinfo(x.dtype.numpy)
        value = min(info.max, max(info.min, quantize_scalar(float(value), q.s, q.zp)))
    return PadParams(pads, value, output_requant(node, graph, _INT8))


@dataclass(frozen=True)
class ConcatParams:
    """``axis`` (non-negative) and, for int8 outputs that requantize, one rescale per input
    (None where the input's parameters are the output's); empty when the values are copied."""

    axis: int
    rescale: tuple[Requant | None, ...]


def prepare_concat(node: Node, graph: Graph) -> ConcatParams:
    """The record of a Concat node (``requantize=False``: TFLite's PACK copies int8 bytes)."""
    y = graph.tensor(node.outputs[0])
    axis = int(node.attr("axis")) % len(y.shape)
    rescale: tuple[Requant | None, ...] = ()
    if y.dtype is DType.INT8 and node.attr("requantize", True):
        qo = per_tensor(node, y, "output")
        rescale = tuple(
            Requant.between(per_tensor(node, graph.tensor(n), "input"), qo, DType.INT8,
                            DType.INT8)
            for n in node.inputs)
    return ConcatParams(axis, rescale)
