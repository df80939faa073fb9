"""Float-only operators that are an affine map (and a clamp), rewritten before quantization
into operators TFLite Micro runs in int8 and int16.

- ``BatchNorm`` with constant statistics (one the import could not fold into a convolution,
  e.g. after a Flatten or an Add): ``Mul(x, a)`` then ``Add(., b)`` with per-channel
  ``a = scale / sqrt(var + eps)`` and ``b = bias - mean * a`` (what the reference kernel
  computes, in the same float32 steps).
- ``HardSigmoid(alpha, beta)`` (PyTorch's Hardsigmoid, MobileNetV3's squeeze-and-excite gate):
  ``Mul(x, alpha)``, ``Add(., beta)``, ``Clip(0, 1)``, as TensorFlow's converter writes a
  Keras hard sigmoid as MUL / ADD / clamp.

TensorFlow's converter does the same: neither operator exists in TFLite. The rewrite only
runs inside ``quantize`` (and ``float_islands``, so that its list matches); the float graph a
user runs is not changed.
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType, Graph, Node, Tensor


def _fresh(graph: Graph, taken: set[str], base: str) -> str:
    name, k = base, 1
    while name in graph.tensors or name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


class _Lowering:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.tensors: dict[str, Tensor] = dict(graph.tensors)
        self.taken: set[str] = set()

    def const(self, base: str, data: np.ndarray) -> str:
        name = _fresh(self.graph, self.taken, base)
        self.tensors[name] = Tensor.const(name, np.asarray(data, np.float32))
        return name

    def intermediate(self, base: str, like: str) -> str:
        name = _fresh(self.graph, self.taken, base)
        t = self.graph.tensor(like)
        self.tensors[name] = Tensor(name, t.shape, DType.FLOAT32)
        return name

    def batch_norm(self, node: Node) -> list[Node] | None:
        consts = [self.graph.tensor(n).data if n else None for n in node.inputs[1:5]]
        if len(consts) != 4 or any(c is None for c in consts):
            return None  # computed statistics: the node stays as it is (a float island)
        scale, bias, mean, var = (np.asarray(c, np.float64) for c in consts)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            a = scale / np.sqrt(var + float(node.attr("epsilon", 1e-5)))
            b = bias - mean * a
        limit = float(np.finfo(np.float32).max)
        if not (np.abs(a) <= limit).all() or not (np.abs(b) <= limit).all():
            # why: an int8 Mul / Add cannot hold inf or NaN; the reference BatchNorm computes
            # them as onnxruntime does, in float
            return None
        x, y = node.inputs[0], node.outputs[0]
        scaled = self.intermediate(f"{node.name}/scaled", y)
        return [
            Node(f"{node.name}/mul", "Mul", (x, self.const(f"{node.name}/a", a)), (scaled,)),
            Node(f"{node.name}/add", "Add", (scaled, self.const(f"{node.name}/b", b)), (y,)),
        ]

    def hard_sigmoid(self, node: Node) -> list[Node]:
        x, y = node.inputs[0], node.outputs[0]
        alpha = np.array([float(node.attr("alpha"))])
        beta = np.array([float(node.attr("beta"))])
        scaled = self.intermediate(f"{node.name}/scaled", y)
        shifted = self.intermediate(f"{node.name}/shifted", y)
        return [
            Node(f"{node.name}/mul", "Mul", (x, self.const(f"{node.name}/alpha", alpha)),
                 (scaled,)),
            Node(f"{node.name}/add", "Add", (scaled, self.const(f"{node.name}/beta", beta)),
                 (shifted,)),
            Node(f"{node.name}/clip", "Clip", (shifted,), (y,), {"min": 0.0, "max": 1.0}),
        ]


def lower_for_quantization(graph: Graph) -> Graph:
    """``graph`` with every BatchNorm (constant statistics) and HardSigmoid on float32 data
    rewritten as above; the same graph when there is none."""
    lw = _Lowering(graph)
    nodes: list[Node] = []
    changed = False
    for node in graph.nodes:
        float_in = bool(node.inputs) and graph.tensor(node.inputs[0]).dtype is DType.FLOAT32
        new = None
        if float_in and node.op == "BatchNorm":
            new = lw.batch_norm(node)
        elif float_in and node.op == "HardSigmoid":
            new = lw.hard_sigmoid(node)
        if new is None:
            nodes.append(node)
        else:
            nodes.extend(new)
            changed = True
    if not changed:
        return graph
    return graph.with_nodes(nodes, lw.tensors).validate()
