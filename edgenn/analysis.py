"""Static cost figures of a graph: MACs per layer and parameter bytes."""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.ir import Graph, Node
from edgenn.ir.opdefs.recurrent import LSTM_OPERANDS


@dataclass(frozen=True)
class LayerCost:
    name: str
    op: str
    out_shape: tuple[int, ...]
    dtype: str
    macs: int
    param_bytes: int


def node_macs(graph: Graph, node: Node) -> int:
    """Multiply-accumulates of one inference (batch 1); element-wise ops count one per output."""
    if node.op == "FusedConvChain":  # the members' MACs (and the residual Add's); their
        # intermediates live in attrs
        inner = graph.replace(tensors={**graph.tensors,
                                       **{t.name: t for t in node.attr("intermediates")}})
        residual = node.attr("residual", None)
        nodes = (*node.attr("members"), *(() if residual is None else (residual,)))
        return sum(node_macs(inner, member) for member in nodes)
    out = graph.tensor(node.outputs[0])
    if node.op == "Conv2D":
        w = graph.tensor(node.inputs[1])
        _, kh, kw, cig = w.shape
        return out.size * kh * kw * cig
    if node.op == "FullyConnected":
        return out.size * graph.tensor(node.inputs[1]).shape[1]
    if node.op == "MatMul":
        return out.size * graph.tensor(node.inputs[0]).shape[-1]
    if node.op == "BatchMatMul":  # a[..., M, K] (or [..., K, M] when adj_x)
        a = graph.tensor(node.inputs[0]).shape
        return out.size * a[-2 if node.attr("adj_x", False) else -1]
    if node.op == "TransposeConv2D":  # every input pixel scatters KH x KW x Co/g products
        x, w = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
        return x.size * w.shape[0] * w.shape[1] * w.shape[2] // int(node.attr("groups", 1))
    if node.op in ("LSTM", "GRU", "SVDF"):
        # why: every weight matrix (gates, recurrence, projection, SVDF feature and time
        # filters) is applied once per input row (time step x batch)
        x = graph.tensor(node.inputs[0])
        rows = x.size // max(1, x.shape[-1])
        if node.op == "LSTM":  # the gate, recurrent and projection matrices (not the state)
            picks = [i for i, name in enumerate(LSTM_OPERANDS) if name.endswith("_weights")
                     and not name.startswith("cell_to")]
        else:  # GRU's W and R, SVDF's feature and time filters
            picks = [1, 2]
        weights = [graph.tensor(node.inputs[i]) for i in picks
                   if i < len(node.inputs) and node.inputs[i]]
        return rows * sum(w.size for w in weights if len(w.shape) >= 2)
    if node.op in ("AvgPool2D", "MaxPool2D"):
        kh, kw = node.attr("kernel")
        return out.size * kh * kw
    if node.op == "Mean":
        return graph.tensor(node.inputs[0]).size
    if node.op in ("Add", "Mul", "BatchNorm", "Softmax", "LRN"):
        return out.size
    return 0


def node_param_bytes(graph: Graph, node: Node) -> int:
    return sum(graph.tensor(n).nbytes for n in node.inputs if n and graph.tensor(n).is_const)


def layer_costs(graph: Graph) -> list[LayerCost]:
    return [
        LayerCost(
            name=node.name,
            op=node.op,
            out_shape=graph.tensor(node.outputs[0]).shape,
            dtype=graph.tensor(node.outputs[0]).dtype.value,
            macs=node_macs(graph, node),
            param_bytes=node_param_bytes(graph, node),
        )
        for node in graph.nodes
    ]
