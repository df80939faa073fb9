"""Portable float32 Conv2D (any groups, stride, dilation, padding), depthwise Conv2D and
FullyConnected, with the fused activation (``c/edgenn_conv_f32.c``).

The weights are the model's float32 values in flash, in the layout the C walks (TFLite's
OHWI for convolutions, [KH, KW, Cout] for depthwise, [Cout, K] for dense); the sums follow
TFLite Micro's reference order (see the C file), so outputs agree with it to rounding.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, args, c_float, ref_layer
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise

SRC = ("edgenn_conv_f32.c",)
F32 = (DType.FLOAT32,)


def _float_weights(node: Node, graph: Graph) -> bool:
    """Float32 data in and out, constant float32 weights (and bias, when present)."""
    if len(node.inputs) < 2 or not node.inputs[0] or not node.inputs[1]:
        return False
    consts = [n for n in node.inputs[1:3] if n]
    io = [node.inputs[0], *node.outputs]
    return (all(graph.tensor(n).dtype is DType.FLOAT32 for n in [*io, *consts])
            and all(graph.tensor(n).is_const for n in consts))


def _bias(layer: object, arrays: list[CArray]) -> str:
    bias = getattr(layer, "bias_f", None)
    if bias is None:
        return "NULL"
    arrays.append(CArray("bias", "float", bias))
    return "{bias}"


def _clamp_args(layer: object) -> str:
    # the reference layer's bounds: +-FLT_MAX without an activation in a TFLite model, +-inf
    # (a clamp that passes every value, NaN included) in an ONNX one
    lo, hi = layer.flo, layer.fhi  # type: ignore[attr-defined]
    return f"{c_float(lo)}, {c_float(hi)}"


def _geometry(node: Node, graph: Graph, layer: object) -> str:
    _, in_h, in_w, in_c = graph.tensor(node.inputs[0]).shape
    _, out_h, out_w, out_c = graph.tensor(node.outputs[0]).shape
    k = layer
    return args(in_h, in_w, in_c, out_h, out_w, out_c, k.kh, k.kw,  # type: ignore[attr-defined]
                *k.strides, *k.dilations, k.pads[0], k.pads[1])  # type: ignore[attr-defined]


def _conv_match(node: Node, graph: Graph) -> bool:
    return _float_weights(node, graph) and not is_depthwise(node, graph)


def _conv(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)
    w = np.asarray(graph.tensor(node.inputs[1]).data, np.float32)  # [Cout, KH, KW, Cin/g]
    arrays = [CArray("w", "float", w)]
    bias = _bias(layer, arrays)
    call = (f"edgenn_conv_f32({{in0}}, {{out0}}, {{w}}, {bias}, "
            f"{_geometry(node, graph, layer)}, {layer.groups}, {_clamp_args(layer)});")
    return KernelCall(call, SRC, tuple(arrays), kernel_name="edgenn_conv_f32",
                      comment=f"Conv2D float32 {layer.kh}x{layer.kw}, {layer.groups} group(s)")


def _dw_match(node: Node, graph: Graph) -> bool:
    return _float_weights(node, graph) and is_depthwise(node, graph)


def _dwconv(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)
    w = np.asarray(graph.tensor(node.inputs[1]).data, np.float32)  # [Cout, KH, KW, 1]
    arrays = [CArray("w", "float", np.ascontiguousarray(w[..., 0].transpose(1, 2, 0)))]
    bias = _bias(layer, arrays)
    call = (f"edgenn_dwconv_f32({{in0}}, {{out0}}, {{w}}, {bias}, "
            f"{_geometry(node, graph, layer)}, {_clamp_args(layer)});")
    return KernelCall(call, SRC, tuple(arrays), kernel_name="edgenn_dwconv_f32",
                      comment=f"depthwise Conv2D float32 {layer.kh}x{layer.kw}")


def _fc(node: Node, graph: Graph) -> KernelCall:
    layer = ref_layer(node, graph)
    w = np.asarray(graph.tensor(node.inputs[1]).data, np.float32)  # [Cout, K]
    co, depth = w.shape
    rows = graph.tensor(node.inputs[0]).size // depth
    arrays = [CArray("w", "float", w)]
    bias = _bias(layer, arrays)
    call = (f"edgenn_fc_f32({{in0}}, {{out0}}, {{w}}, {bias}, {args(rows, depth, co)}, "
            f"{_clamp_args(layer)});")
    return KernelCall(call, SRC, tuple(arrays), kernel_name="edgenn_fc_f32",
                      comment=f"FullyConnected float32 {rows} x {depth} -> {co}")


register_kernel(PortableKernel("Conv2D", "edgenn_conv_f32", _conv_match, _conv, F32))
register_kernel(PortableKernel("Conv2D", "edgenn_dwconv_f32", _dw_match, _dwconv, F32))
register_kernel(PortableKernel("FullyConnected", "edgenn_fc_f32", _float_weights, _fc, F32))
