"""Build the quantized Graph from the float Graph and the chosen quantization parameters.

The node structure is kept; every tensor a quantized kernel touches becomes INT8 (INT16 in
the 16x8 scheme; INT32 / INT64 biases) with QuantParams. Operators without a quantized
kernel (LRN, Exp, ...) keep running in float32 between a Dequantize and a Quantize,
inserted only where needed. Integer tensors (Gather indices, ArgMax outputs) pass unchanged,
except that ArgMax / ArgMin write int32 (TFLite Micro has no int64 output), and a quantized
MatMul becomes the BatchMatMul TFLite runs (``rules.OpRule.becomes``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from edgenn.errors import EdgennError
from edgenn.ir import DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.state import StateVar
from edgenn.quantize import rules, scheme

# why: TFLite Micro's ARG_MAX / ARG_MIN write int32 only (int64 fails at invoke)
_INDEX_OPS = ("ArgMax", "ArgMin")


def check_float_graph(graph: Graph) -> None:
    """Refuse a graph that is already quantized (int8 / int16 tensors or Quantize /
    Dequantize nodes)."""
    for t in graph.tensors.values():
        quantized = t.dtype in (DType.INT8, DType.UINT8, DType.INT16)
        if quantized or (t.quant is not None and not t.is_const):
            raise EdgennError(
                f"graph {graph.name!r} is already quantized (tensor {t.name!r} is "
                f"{t.dtype.value}); quantize takes a float32 graph"
            )
    for node in graph.nodes:
        if node.op in ("Quantize", "Dequantize"):
            raise EdgennError(
                f"graph {graph.name!r} is already quantized ({node}); quantize takes float32"
            )


def _float(t: Tensor) -> bool:
    return t.dtype is DType.FLOAT32


class _Builder:
    """Emits nodes in order and creates quantized / float versions of tensors on demand.

    The quantized versions have ``act``'s element type (the ``int8`` names are historical);
    integer tensors are their own quantized and float version.
    """

    def __init__(self, graph: Graph, params: Mapping[str, QuantParams], int8: set[str],
                 act: scheme.ActivationType = scheme.INT8):
        self.g = graph
        self.params = params
        self.act = act
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        # the name of the int8 and of the float32 version of each original tensor, once made
        self.q: dict[str, str] = {}
        self.f: dict[str, str] = {}
        self.int8_nodes = int8

    # -- activations ------------------------------------------------------------------------
    def add_int8(self, name: str, new_name: str | None = None) -> str:
        t = self.g.tensor(name)
        if not _float(t):
            return self.keep(name)
        new = new_name or name
        self.tensors[new] = Tensor(new, t.shape, self.act.dtype, self.params[name])
        self.q[name] = new
        return new

    def add_float(self, name: str, new_name: str | None = None) -> str:
        t = self.g.tensor(name)
        if not _float(t):
            return self.keep(name)
        new = new_name or name
        self.tensors[new] = Tensor(new, t.shape, DType.FLOAT32)
        self.f[name] = new
        return new

    def keep(self, name: str, dtype: DType | None = None) -> str:
        """An integer activation: one tensor serves quantized and float consumers."""
        t = self.g.tensor(name)
        self.tensors[name] = Tensor(name, t.shape, dtype or t.dtype)
        self.q[name] = self.f[name] = name
        return name

    def int8_of(self, name: str) -> str:
        if name not in self.q:
            src = self.f[name]
            # a graph output keeps its name (its float version was renamed in emit_float)
            out = self.add_int8(name, name if name in self.g.outputs else f"{name}/quantized")
            # why: the IR's Quantize gives int8 unless its ``dtype`` says otherwise
            attrs = {} if self.act.dtype == DType.INT8 else {"dtype": self.act.dtype.value}
            self.nodes.append(Node(f"{name}/quantize", "Quantize", (src,), (out,), attrs))
        return self.q[name]

    def float_of(self, name: str) -> str:
        if name not in self.f:
            src = self.q[name]
            out = self.add_float(name, f"{name}/dequantized")
            self.nodes.append(Node(f"{name}/dequantize", "Dequantize", (src,), (out,)))
        return self.f[name]

    # -- constants --------------------------------------------------------------------------
    def const(self, name: str, data: np.ndarray, quant: QuantParams | None) -> str:
        """Add a constant, reusing ``name`` unless it is taken by different content."""
        new, k = name, 1
        while new in self.tensors:
            old = self.tensors[new]
            if (
                old.data is not None
                and old.data.dtype == data.dtype
                and np.array_equal(old.data, data)
                and old.quant == quant
            ):
                return new
            new, k = f"{name}/{k}", k + 1
        self.tensors[new] = Tensor.const(new, data, quant)
        return new

    def float_const(self, t: Tensor) -> str:
        """The constant as it is (float32, or integer indices)."""
        assert t.data is not None
        return self.const(t.name, t.data, None)

    def int8_const(self, t: Tensor) -> str:
        assert t.data is not None
        p = self.params.get(t.name)
        if p is None:
            p = self.act.params(float(t.data.min()), float(t.data.max()))
        data = scheme.quantize_per_tensor(t.data, p, self.act.dtype)
        return self.const(f"{t.name}/{self.act.name}", data, p)

    def narrow_const(self, t: Tensor) -> str:
        """An int8 constant over its own range (PRelu's alpha in the 16x8 scheme)."""
        assert t.data is not None
        p = scheme.activation_params(float(t.data.min()), float(t.data.max()))
        data = scheme.quantize_per_tensor(t.data, p, DType.INT8)
        return self.const(f"{t.name}/int8", data, p)

    def weights(self, x: Tensor, w: Tensor, b: Tensor | None) -> list[str]:
        """Per-channel int8 weights and the int32 (int64 in 16x8) bias of ``x``'s layer."""
        assert w.data is not None
        wp = scheme.weight_params(w.data)
        names = [self.const(w.name, scheme.quantize_weights(w.data, wp), wp)]
        if b is not None:
            assert b.data is not None
            bp = scheme.bias_params(self.params[x.name], wp)
            names.append(self.const(b.name, scheme.quantize_bias(b.data, bp, self.act.bias_dtype),
                                    bp))
        return names

    # -- nodes ------------------------------------------------------------------------------
    def emit(self, node: Node) -> None:
        if node.name in self.int8_nodes:
            self.emit_int8(node)
        else:
            self.emit_float(node)

    def output(self, node: Node, name: str, quantized: bool) -> str:
        if node.op in _INDEX_OPS:
            return self.keep(name, DType.INT32)
        if quantized:
            return self.add_int8(name)
        # why: a graph output must be the int8 tensor under its own name, so its float
        # version produced here is renamed and a Quantize writes the original name.
        renamed = name in self.g.outputs and _float(self.g.tensor(name))
        return self.add_float(name, f"{name}/float" if renamed else None)

    def emit_float(self, node: Node) -> None:
        ins = []
        for t in self.g.node_inputs(node):
            if t is None:
                ins.append("")
            elif t.is_const:
                ins.append(self.float_const(t))
            else:
                ins.append(self.float_of(t.name))
        outs = [self.output(node, name, quantized=False) for name in node.outputs]
        self.nodes.append(_retyped(node).with_(inputs=tuple(ins), outputs=tuple(outs)))

    def emit_int8(self, node: Node) -> None:
        r = rules.rule(node.op)
        assert r is not None
        inputs = self.g.node_inputs(node)
        ins: list[str] = []
        for i, t in enumerate(inputs):
            if r.weighted and i > 0:
                continue  # weights and bias follow below
            if t is None:
                ins.append("")
            elif not _float(t):
                ins.append(self.float_const(t) if t.is_const else self.int8_of(t.name))
            elif i in r.int8_operands and self.act.dtype is not DType.INT8:
                ins.append(self.narrow_const(t))  # rules guarantee it is constant
            elif t.is_const:
                ins.append(self.int8_const(t))
            else:
                ins.append(self.int8_of(t.name))
        if r.weighted:
            x, w = inputs[0], inputs[1]
            assert x is not None and w is not None
            b = inputs[2] if len(inputs) > 2 else None
            ins += self.weights(x, w, b)
            if b is None and len(inputs) > 2:
                ins.append("")
        outs = [self.output(node, name, quantized=True) for name in node.outputs]
        op = r.becomes or node.op
        self.nodes.append(_retyped(node).with_(op=op, inputs=tuple(ins), outputs=tuple(outs)))


def _retyped(node: Node) -> Node:
    """ArgMax / ArgMin write int32 indices (what TFLite Micro can run)."""
    if node.op in _INDEX_OPS:
        return node.with_attrs(output_type="int32")
    return node


def build_int8_graph(
    graph: Graph,
    params: Mapping[str, QuantParams],
    int8_nodes: set[str],
    method: str,
    act: scheme.ActivationType = scheme.INT8,
) -> Graph:
    """The quantized graph: ``act`` (int8 or int16) input(s) and output(s), no external
    permutation. Integer inputs and outputs keep their type (ArgMax outputs become int32)."""
    b = _Builder(graph, params, int8_nodes, act)
    for name in graph.inputs:
        b.add_int8(name)
    for s in graph.state:  # why float: the state stays what the file keeps (_kept_state)
        b.add_float(s.read)
    for node in graph.nodes:
        b.emit(node)
    outputs = tuple(b.int8_of(name) for name in graph.outputs)
    scheme_name = "int8" if act.dtype == DType.INT8 else "16x8 (int16 activations, int8 weights)"
    metadata = {**graph.metadata, "quantization": f"{scheme_name} post-training ({method})"}
    new = Graph(
        graph.name,
        b.tensors,
        tuple(b.nodes),
        graph.inputs,
        outputs,
        external_perm={},
        metadata=metadata,
        state=_kept_state(graph, b.tensors),
    )
    return new.with_nodes(new.nodes).validate()


def _kept_state(graph: Graph, tensors: Mapping[str, Tensor]) -> tuple[StateVar, ...]:
    """The state of ``graph``, which the quantized graph keeps where its nodes stay float
    (an LSTM island); a state an int8 node would read or write is refused in one line."""
    for s in graph.state:
        for name in (s.read, s.write):
            t = tensors.get(name)
            if t is None or t.dtype != graph.tensor(name).dtype:
                raise EdgennError(
                    f"graph {graph.name!r}: state {s.name!r} would be quantized; quantizing "
                    "the state kept between invocations is not supported")
    return graph.state
