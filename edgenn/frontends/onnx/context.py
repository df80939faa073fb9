"""The importer's working state: ONNX names -> IR tensors, layouts, constants, quantization.

Layout rule: every rank-4 tensor that a layout-sensitive operator (Conv, pooling, BatchNorm,
LRN, global pooling) produces or consumes is stored NHWC; every rank-3 (NCL, 1-D) tensor such an
operator produces or consumes is stored [N, 1, L, C]; other tensors keep ONNX axis order.
``Value.nhwc`` / ``Value.ncl`` record which one a tensor is, and ``nhwc()`` /
``channels_last()`` / ``onnx_order()`` insert the Transpose that gives a converter the order it
needs (shared by every consumer). ``act()`` never hands out an NCL-stored array: converters
that do not know that layout get the ONNX-order copy; ``value()`` is the layout-aware look-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import NodeProto, helper

from edgenn.errors import ModelFormatError, UnsupportedOperatorError
from edgenn.frontends.onnx.values import (
    NCHW_TO_NHWC,
    NCL_AXIS_TO_IR,
    NHWC_TO_NCHW,
    ConstVal,
    Value,
)
from edgenn.ir import DType, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

# Operators whose int8 output simply carries its input's quantization.
_LAYOUT_OPS = frozenset({"Transpose", "Reshape", "Pad", "BorderPad", "MaxPool2D"})


class Context:
    """Mutable state of one import; converters call its methods, never touch the dicts."""

    def __init__(self, file: str, opset: int, consumers: dict[str, list[NodeProto]],
                 graph_outputs: set[str], producers: dict[str, NodeProto] | None = None,
                 graph_inputs: set[str] | None = None) -> None:
        self.file = file
        self.opset = opset
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.values: dict[str, Value] = {}
        self.consts: dict[str, ConstVal] = {}
        # DequantizeLinear output -> the ONNX name of the int8 activation it reads
        self.dq_src: dict[str, str] = {}
        # ONNX tensor names that become int8 IR tensors, with the quantization the Q gives
        self.quant_out: dict[str, QuantParams] = {}
        self.consumers = consumers
        self.graph_outputs = graph_outputs
        # ONNX tensor name -> the node that computes it (subgraphs' nodes included), and the
        # graph's inputs: to say which inputs a value depends on in an error message
        self.producers = producers or {}
        self.graph_inputs = graph_inputs or set()
        self.node: NodeProto | None = None
        self.quantized = False
        self._attrs: dict[str, Any] = {}
        self._views: dict[tuple[str, str], str] = {}
        self._node_names: set[str] = set()

    # -- the node being converted -------------------------------------------------------------
    @property
    def node_name(self) -> str:
        n = self.node
        if n is None:
            return "<graph>"
        return n.name or (n.output[0] if n.output else n.op_type)

    def begin(self, node: NodeProto, quantized: bool) -> None:
        self.node = node
        self.quantized = quantized
        self._attrs = {}
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            self._attrs[a.name] = v.decode() if isinstance(v, bytes) else v

    def attr(self, key: str, default: Any = None) -> Any:
        return self._attrs.get(key, default)

    def fail(self, msg: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"{self.file}: node {self.node_name!r}: {msg}")

    def malformed(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.file}: node {self.node_name!r}: {msg}")

    def inputs(self) -> list[str]:
        assert self.node is not None
        return list(self.node.input)

    def input(self, index: int) -> str | None:
        """The ONNX name of input ``index``, or None when it is omitted."""
        assert self.node is not None
        if index < len(self.node.input) and self.node.input[index]:
            return str(self.node.input[index])
        return None

    def need(self, index: int) -> str:
        name = self.input(index)
        if name is None:
            raise self.malformed(f"input {index} is missing")
        return name

    def output(self, index: int = 0) -> str:
        assert self.node is not None
        if index >= len(self.node.output) or not self.node.output[index]:
            raise self.malformed(f"output {index} is missing")
        return str(self.node.output[index])

    # -- constants ------------------------------------------------------------------------------
    def is_const(self, name: str | None) -> bool:
        return name is not None and name in self.consts

    def const(self, name: str) -> ConstVal:
        """A constant operand; dequantized to float unless the node is converted to int8."""
        c = self.consts.get(name)
        if c is None:
            raise self.fail(f"input {name!r} must be a constant")
        if c.quant is not None and not self.quantized:
            return ConstVal(c.dequantized())
        if c.quant is None and np.issubdtype(c.data.dtype, np.floating):
            return ConstVal(c.data.astype(np.float32, copy=False))
        return c

    def const_array(self, name: str) -> np.ndarray:
        return self.const(name).data

    def set_const(self, name: str, value: ConstVal) -> None:
        self.consts[name] = value

    def new_const(self, hint: str, data: np.ndarray, quant: QuantParams | None = None) -> str:
        name = self._fresh(hint)
        self.tensors[name] = Tensor.const(name, data, quant)
        return name

    # -- activations ----------------------------------------------------------------------------
    def act(self, name: str) -> Value:
        """The IR tensor of a computed ONNX tensor (int8 in a quantized node, else float),
        in ONNX axis order or rank-4 NHWC (an NCL-stored 1-D tensor is transposed back)."""
        v = self.value(name)
        return Value(self.onnx_order(name)) if v.ncl else v

    def value(self, name: str) -> Value:
        """Like ``act`` but in the layout the tensor is stored in (NCL-stored included)."""
        src = self.dq_src.get(name)
        if src is not None:
            if self.quantized:
                return self.values[src]
            if name not in self.values:  # a float consumer of a quantized tensor
                v = self.values[src]
                self.emit("Dequantize", [v.ir], out=name, nhwc=v.nhwc, ncl=v.ncl)
            return self.values[name]
        found = self.values.get(name)
        if found is None:
            if name in self.consts:
                raise self.fail(f"input {name!r} is a constant where a computed tensor is needed")
            raise self.malformed(f"input {name!r} is never produced")
        return found

    def ir_tensor(self, name: str) -> Tensor:
        return self.tensors[self.act(name).ir]

    def rank(self, name: str) -> int:
        """The ONNX rank."""
        return len(self.onnx_shape(name))

    def onnx_shape(self, name: str) -> tuple[int, ...]:
        """The shape in ONNX axis order (batch 1)."""
        if name in self.consts:
            return tuple(self.consts[name].data.shape)
        v = self.value(name)
        shape = self.tensors[v.ir].shape
        if v.ncl:
            return tuple(shape[p] for p in NCL_AXIS_TO_IR)
        return tuple(shape[p] for p in NHWC_TO_NCHW) if v.nhwc else shape

    def is_nhwc(self, name: str) -> bool:
        return name not in self.consts and self.act(name).nhwc

    def nhwc(self, name: str) -> str:
        """IR name of the NHWC copy of a rank-4 tensor (transposing an ONNX-order one)."""
        v = self.act(name)
        shape = self.tensors[v.ir].shape
        if len(shape) != 4:
            raise self.fail(f"expects a rank-4 input, {name!r} has shape {list(shape)}")
        return v.ir if v.nhwc else self._view(v.ir, NCHW_TO_NHWC, ":nhwc")

    def onnx_order(self, name: str) -> str:
        """IR name of the tensor in ONNX axis order (NHWC -> NCHW, [N,1,L,C] -> NCL)."""
        v = self.value(name)
        if v.ncl:
            n, _, length, c = self.tensors[v.ir].shape
            # why: [N,1,L,C] is the NHWC array of [N,C,1,L]; the well-trodden rank-4
            # NHWC -> NCHW transpose, then dropping H, gives NCL
            t = self._view(v.ir, NHWC_TO_NCHW, ":nchw")
            return self._view(t, (n, c, length), ":ncl", reshape=True)
        return self._view(v.ir, NHWC_TO_NCHW, ":nchw") if v.nhwc else v.ir

    def channels_last(self, name: str) -> Value:
        """The channels-last copy of a rank-4 (NHWC) or rank-3 ([N, 1, L, C]) tensor."""
        v = self.value(name)
        if v.channels_last:
            return v
        shape = self.onnx_shape(name)
        if len(shape) == 4:
            return Value(self.nhwc(name), nhwc=True)
        if len(shape) != 3:
            raise self.fail(f"expects a rank-3 or rank-4 input, {name!r} has shape "
                            f"{list(shape)}")
        n, c, length = shape
        r = self._view(v.ir, (n, c, 1, length), ":nc1l", reshape=True)
        return Value(self._view(r, NCHW_TO_NHWC, ":nhwc"), ncl=True)

    def _view(self, ir: str, arg: tuple[int, ...], suffix: str, reshape: bool = False) -> str:
        """A Transpose (``arg`` = perm) or Reshape (``arg`` = shape) of ``ir``, made once."""
        key = (ir, suffix)
        if key not in self._views:
            op, attrs = ("Reshape", {"shape": arg}) if reshape else ("Transpose", {"perm": arg})
            self._views[key] = self.emit(op, [ir], attrs, hint=ir + suffix)
        return self._views[key]

    def elementwise_layout(self, names: Sequence[str]) -> tuple[bool, bool]:
        """(nhwc, ncl): the layout an elementwise operation on ``names`` runs in.

        NHWC when a computed operand is stored NHWC; NCL-stored when one is stored so and no
        operand has a rank above 3 (ONNX broadcasting then keeps rank 3); else ONNX order.
        """
        computed = [self.value(n) for n in names if n not in self.consts]
        if any(v.nhwc for v in computed):
            return True, False
        if any(v.ncl for v in computed) and all(self.rank(n) <= 3 for n in names):
            return False, True
        return False, False

    def operand(self, name: str, nhwc: bool, ncl: bool = False) -> str:
        """An elementwise operand as an IR tensor in the chosen layout.

        Constants are broadcast-aligned the ONNX way (leading 1s) before the NHWC permutation
        (NCL: aligned to rank 3, then stored [N, 1, L, C]); a lower-rank computed operand is
        reshaped to rank 4 (rank 3) first.
        """
        if name in self.consts:
            c = self.const(name)
            if self.quantized and c.quant is None and c.data.dtype == np.float32:
                raise self.fail(f"float constant {name!r} in an int8 operation")
            if nhwc or ncl:
                if c.quant is not None and c.quant.axis is not None:
                    raise self.fail(f"per-channel constant {name!r} in an elementwise operation")
                rank = 4 if nhwc else 3
                data = c.data.reshape((1,) * (rank - c.data.ndim) + c.data.shape)
                if ncl:  # why: [N, C, L] -> [N, C, 1, L], whose NHWC array is [N, 1, L, C]
                    data = data.reshape(data.shape[:2] + (1,) + data.shape[2:])
                c = ConstVal(data, c.quant).transpose(NCHW_TO_NHWC)
            return self.new_const(name, c.data, c.quant)
        if ncl:
            if self.rank(name) < 3:
                shape = self.onnx_shape(name)
                full = (1,) * (3 - len(shape)) + shape
                r = self.emit("Reshape", [self.onnx_order(name)],
                              {"shape": (full[0], full[1], 1, full[2])}, hint=name + ":4d")
                return self._view(r, NCHW_TO_NHWC, ":nhwc")
            return self.channels_last(name).ir
        if not nhwc:
            return self.onnx_order(name)
        if self.rank(name) < 4:
            shape = self.onnx_shape(name)
            ir = self.emit("Reshape", [self.onnx_order(name)],
                           {"shape": (1,) * (4 - len(shape)) + shape}, hint=name + ":4d")
            return self._view(ir, NCHW_TO_NHWC, ":nhwc")
        return self.nhwc(name)

    def bind(self, name: str, value: Value) -> None:
        self.values[name] = value

    def alias(self, out: str, src: str) -> None:
        """Make ONNX tensor ``out`` stand for the same value as ``src`` (Identity, Dropout)."""
        if src in self.consts:
            self.consts[out] = self.consts[src]
        elif src in self.dq_src:
            self.dq_src[out] = self.dq_src[src]
        else:
            self.values[out] = self.value(src)

    # -- building nodes -------------------------------------------------------------------------
    def emit(self, op: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, *,
             out: str | None = None, nhwc: bool = False, ncl: bool = False,
             quant: QuantParams | None = None, hint: str | None = None) -> str:
        """Append one IR node; returns its output's IR name (bound to ONNX ``out`` if given,
        stored NHWC / [N, 1, L, C] as ``nhwc`` / ``ncl`` say)."""
        ir_out = self._fresh(out or hint or f"{self.node_name}/{op}")
        node_name = self._fresh_node(self.node_name if self.node is not None else ir_out)
        node = Node(node_name, op, tuple(inputs), (ir_out,), dict(attrs or {}))
        ((shape, dtype),) = infer(node, [self.tensors[i] if i else None for i in inputs])
        q = None
        if dtype == DType.INT8:
            q = quant if quant is not None else self._out_quant(op, inputs, out)
        self.tensors[ir_out] = Tensor(ir_out, shape, dtype, q)
        self.nodes.append(node)
        if out is not None:
            self.values[out] = Value(ir_out, nhwc, ncl)
        return ir_out

    def _out_quant(self, op: str, inputs: Sequence[str], out: str | None) -> QuantParams:
        first = self.tensors[inputs[0]].quant if inputs else None
        if out is not None and out in self.quant_out:
            return self.quant_out[out]
        if op in _LAYOUT_OPS and first is not None:
            return first
        assert self.node is not None
        for o in self.node.output:
            if o in self.quant_out:
                return self.quant_out[o]
        raise self.fail(f"cannot find the quantization of the int8 output of {op}")

    def _fresh(self, hint: str) -> str:
        name, i = hint, 1
        while name in self.tensors:
            name = f"{hint}_{i}"
            i += 1
        return name

    def _fresh_node(self, hint: str) -> str:
        name, i = hint, 1
        while name in self._node_names:
            name = f"{hint}_{i}"
            i += 1
        self._node_names.add(name)
        return name
