"""Single-layer IR graphs and model layers for the host-kernel tests (shared helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from onnx import ModelProto

from edgenn.backends.host.kernels import host_shape
from edgenn.backends.host.kernels.layer import LayerShape
from edgenn.backends.ref import compile_ref
from edgenn.backends.ref.layer import layer_class
from edgenn.frontends.onnx import load_onnx
from edgenn.ir import Activation, DType, Graph, Node, Tensor
from edgenn.ir.shapes import conv_out_dim


@dataclass(frozen=True)
class LayerCase:
    """A host-kernel layer with an input and the reference runtime's output for it."""

    graph: Graph
    node: Node
    x: np.ndarray
    ref: np.ndarray

    @property
    def shape(self) -> LayerShape:
        s = host_shape(self.node, self.graph)
        assert s is not None
        return s


def _graph(node: Node, tensors: list[Tensor]) -> Graph:
    return Graph("layer", {t.name: t for t in tensors}, (node,), (node.inputs[0],),
                 (node.outputs[0],)).validate()


def conv_layer(h: int, w: int, cin: int, cout: int, k: int | tuple[int, int], stride: int = 1,
               pads: tuple[int, int, int, int] | None = None, depthwise: bool = False,
               act: Activation = Activation.RELU, bias: bool = True, seed: int = 0
               ) -> tuple[Graph, Node]:
    """A Conv2D (or depthwise, ``cout == cin``) layer graph with random weights."""
    rng = np.random.default_rng(seed)
    kh, kw = (k, k) if isinstance(k, int) else k
    pads = pads if pads is not None else (kh // 2, kw // 2, kh // 2, kw // 2)
    cig = 1 if depthwise else cin
    oh = conv_out_dim(h, kh, stride, 1, pads[0], pads[2])
    ow = conv_out_dim(w, kw, stride, 1, pads[1], pads[3])
    wt = rng.normal(0, np.sqrt(2.0 / (kh * kw * cig)), (cout, kh, kw, cig)).astype(np.float32)
    tensors = [Tensor("x", (1, h, w, cin), DType.FLOAT32), Tensor.const("w", wt),
               Tensor("y", (1, oh, ow, cout), DType.FLOAT32)]
    inputs = ["x", "w"]
    if bias:
        tensors.append(Tensor.const("b", rng.normal(0, 0.5, cout).astype(np.float32)))
        inputs.append("b")
    node = Node("conv", "Conv2D", tuple(inputs), ("y",),
                {"strides": (stride, stride), "dilations": (1, 1), "pads": tuple(pads),
                 "groups": cin if depthwise else 1, "activation": act})
    return _graph(node, tensors), node


def dense_layer(k: int, n: int, act: Activation = Activation.NONE, bias: bool = True,
                seed: int = 0) -> tuple[Graph, Node]:
    rng = np.random.default_rng(seed)
    wt = rng.normal(0, np.sqrt(1.0 / k), (n, k)).astype(np.float32)
    tensors = [Tensor("x", (1, k), DType.FLOAT32), Tensor.const("w", wt),
               Tensor("y", (1, n), DType.FLOAT32)]
    inputs = ["x", "w"]
    if bias:
        tensors.append(Tensor.const("b", rng.normal(0, 0.5, n).astype(np.float32)))
        inputs.append("b")
    node = Node("fc", "FullyConnected", tuple(inputs), ("y",), {"activation": act})
    return _graph(node, tensors), node


def case(graph: Graph, node: Node, seed: int = 1) -> LayerCase:
    """The layer on a random input, with the reference output."""
    x = np.random.default_rng(seed).standard_normal(graph.tensor(node.inputs[0]).shape)
    x = x.astype(np.float32)
    ref = layer_class(node, graph)(node, graph).run(x)[0]
    return LayerCase(graph, node, x, ref)


def model_cases(model: ModelProto, seed: int = 0) -> Iterator[LayerCase]:
    """One case per distinct host-kernel layer shape of ``model``, fed its real activations."""
    graph = load_onnx(model.SerializeToString())
    ext = graph.external_shape(graph.inputs[0])
    x = np.random.default_rng(seed).random(ext, np.float32)
    exe = compile_ref(graph)
    exe.run(x, keep=True)
    seen: set[LayerShape] = set()
    for node in graph.nodes:
        s = host_shape(node, graph)
        if s is None or s in seen:
            continue
        seen.add(s)
        yield LayerCase(graph, node, exe.values[node.inputs[0]], exe.values[node.outputs[0]])


def assert_close(y: np.ndarray, ref: np.ndarray, rtol: float = 1e-4) -> None:
    """Within ``rtol`` relative: per element, and absolutely ``rtol`` x the output's scale
    (sums of thousands of products in another order differ near zero)."""
    scale = float(np.abs(ref).max()) or 1.0
    np.testing.assert_allclose(y, ref, rtol=rtol, atol=rtol * scale)
