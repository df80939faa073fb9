"""The records of FullyConnected ``x[N, K] @ w[Cout, K].T + b``: int8, 16x8, float32.

As TFLite Micro: per-channel weights use ``FullyConnectedPerChannel`` with the multiplier
``in_scale * w_scale[c] / out_scale`` in double; per-tensor weights use
``GetQuantizedConvolutionMultipler``: ``in_scale * w_scale / out_scale`` with the float32
scales widened to double before the product (the installed TFLM's build; a float32 product
can give the neighbouring multiplier). The bias is optional.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range_float,
    quantize_multiplier,
    scale_ratio,
)
from edgenn.ir import Graph, Node
from edgenn.prepared.conv import channel_multipliers, float_bias
from edgenn.prepared.linear import Int8Linear, int8_linear
from edgenn.prepared.quant import activation_of, const_data, per_tensor, quant_of
from edgenn.prepared.s16 import S16Requant, int8_weights_s16, symmetric


def dense_multipliers(node: Node, graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel (multiplier, shift) of an int8 or 16x8 FullyConnected."""
    x, w = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    wq = quant_of(node, w, "weight")
    mult: object
    shift: object
    if wq.per_channel and wq.scale.size > 1:
        mult, shift = channel_multipliers(node, graph)
    else:
        xq = per_tensor(node, x, "input")
        oq = per_tensor(node, graph.tensor(node.outputs[0]), "output")
        mult, shift = quantize_multiplier(scale_ratio((xq.s, wq.scale[0]), oq.s))
    co = (w.shape[0],)
    return (np.broadcast_to(np.asarray(mult, np.int64), co).astype(np.int32),
            np.broadcast_to(np.asarray(shift, np.int64), co).astype(np.int32))


def _bias_tensor(node: Node, graph: Graph) -> np.ndarray | None:
    t = graph.tensor(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    return const_data(node, t)


@dataclass(frozen=True)
class FullyConnectedParams(Int8Linear):
    """An int8 FullyConnected: ``Int8Linear`` with ``w`` int8 [Cout, K] (``mult`` / ``shift``
    equal for per-tensor weights), and the sizes ``depth`` (K) and ``out_c``."""

    depth: int
    out_c: int


def prepare_fully_connected(node: Node, graph: Graph) -> FullyConnectedParams:
    """The int8 record of a FullyConnected node."""
    fields = int8_linear(node, graph, *dense_multipliers(node, graph))
    co, depth = fields["w"].shape
    return FullyConnectedParams(**fields, depth=depth, out_c=co)


@dataclass(frozen=True)
class FloatFullyConnectedParams:
    """A float32 FullyConnected: ``w`` float32 [Cout, K], ``bias`` float32 or None, the clamp
    ``act_min`` / ``act_max``."""

    w: np.ndarray
    bias: np.ndarray | None
    act_min: float
    act_max: float


def prepare_float_fully_connected(node: Node, graph: Graph) -> FloatFullyConnectedParams:
    """The float32 record of a FullyConnected node."""
    data = const_data(node, graph.tensor(node.inputs[1]))
    assert data is not None
    lo, hi = activation_range_float(activation_of(node), graph.finite_float_clamp)
    return FloatFullyConnectedParams(data.astype(np.float32), float_bias(node, graph), lo, hi)


@dataclass(frozen=True)
class FullyConnectedS16Params:
    """A 16x8 FullyConnected: int8 weights as int64 [Cout, K], ``mult`` / ``shift`` per
    channel and the epilogue ``requant``."""

    w: np.ndarray
    mult: np.ndarray
    shift: np.ndarray
    requant: S16Requant


def prepare_fully_connected_s16(node: Node, graph: Graph) -> FullyConnectedS16Params:
    """The 16x8 record of a FullyConnected node."""
    x, w = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    symmetric(node, x, "input")
    w_int = int8_weights_s16(node, w)
    symmetric(node, w, "weight")
    mult, shift = dense_multipliers(node, graph)
    requant = S16Requant.build(node, _bias_tensor(node, graph), w.shape[0], mult, shift,
                               graph.tensor(node.outputs[0]))
    return FullyConnectedS16Params(w_int, mult, shift, requant)
