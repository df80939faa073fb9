"""Fold a BatchNorm into the Conv2D / FullyConnected that feeds it.

y = (conv(x) - mean) * gamma / sqrt(var + eps) + beta is a convolution with weights scaled
per output channel by s = gamma / sqrt(var + eps) and bias (b - mean) * s + beta. A BatchNorm
after anything else (or after a layer with other consumers) stays a BatchNorm node, and so
does one whose folded weights or bias would not all be finite float32 numbers: an infinite
weight or parameter, or a product beyond float32's range, makes the folded layer compute inf
or NaN where the two layers give a finite number (``3e38 * 2`` is inf in the weights, while
the convolution's sum times 2 can be finite).
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import Activation, DType, Graph, Node, Tensor
from edgenn.passes.rewrite import fresh_name, single_consumer


def _foldable(graph: Graph, bn: Node) -> Node | None:
    layer = graph.producer(bn.inputs[0])
    if layer is None or layer.op not in ("Conv2D", "FullyConnected"):
        return None
    if layer.attr("activation", Activation.NONE) != Activation.NONE:
        return None
    if single_consumer(graph, layer.outputs[0]) is not bn:
        return None
    if any(not graph.tensor(n).is_const for n in bn.inputs[1:5]):
        return None
    w = graph.tensor(layer.inputs[1])
    b = graph.tensor(layer.inputs[2]) if len(layer.inputs) > 2 and layer.inputs[2] else None
    if w.dtype != DType.FLOAT32 or not w.is_const or (b is not None and not b.is_const):
        return None
    return layer


def fold_batchnorm(graph: Graph) -> Graph:
    """Fold every foldable float BatchNorm; returns a new graph."""
    kept: set[str] = set()  # BatchNorms whose folded values would not be finite
    while True:
        for bn in graph.nodes:
            if bn.op != "BatchNorm" or bn.name in kept:
                continue
            layer = _foldable(graph, bn)
            if layer is None:
                continue
            folded = _fold(graph, layer, bn)
            if folded is None:
                kept.add(bn.name)
                continue
            graph = folded
            break
        else:
            return graph


def _fold(graph: Graph, layer: Node, bn: Node) -> Graph | None:
    """``graph`` with ``bn`` folded into ``layer``; None when a folded value would not be a
    finite float32."""
    gamma, beta, mean, var = (np.asarray(graph.tensor(n).data, np.float64) for n in bn.inputs[1:5])
    eps = float(bn.attr("epsilon", 1e-5))
    w = graph.tensor(layer.inputs[1])
    assert w.data is not None
    co = w.shape[0]
    b_old = np.zeros(co)
    if len(layer.inputs) > 2 and layer.inputs[2]:
        b_old = np.asarray(graph.tensor(layer.inputs[2]).data, np.float64)
    # why quiet: an infinite input gives inf or NaN here, and then the BatchNorm is kept
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s = gamma / np.sqrt(var + eps)
        w_data = (w.data.astype(np.float64) * s.reshape((co,) + (1,) * (w.data.ndim - 1)))
        b_data = (b_old - mean) * s + beta
    limit = float(np.finfo(np.float32).max)
    if any(folded.size and not np.abs(folded).max() <= limit for folded in (w_data, b_data)):
        return None
    w_name = fresh_name(graph, w.name + ":bn")
    b_name = fresh_name(graph, (layer.inputs[2] if len(layer.inputs) > 2 and layer.inputs[2]
                                else layer.name + ".bias") + ":bn")
    if b_name == w_name:
        b_name += "_b"
    tensors = dict(graph.tensors)
    tensors[w_name] = Tensor.const(w_name, w_data.astype(np.float32))
    tensors[b_name] = Tensor.const(b_name, b_data.astype(np.float32))
    new_layer = layer.with_(inputs=(layer.inputs[0], w_name, b_name), outputs=bn.outputs)
    nodes = [new_layer if n is layer else n for n in graph.nodes if n is not bn]
    return graph.with_nodes(nodes, tensors)
