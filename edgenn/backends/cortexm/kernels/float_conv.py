"""Portable float32 Conv2D (any groups, stride, dilation, padding), depthwise Conv2D and
FullyConnected, with the fused activation (``c/edgenn_conv_f32.c``).

The weights are the model's float32 values in flash, in the layout the C walks (TFLite's
OHWI for convolutions, [KH, KW, Cout] for depthwise, [Cout, K] for dense); the sums follow
TFLite Micro's reference order (see the C file), so outputs agree with it to rounding.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, NULL, OUT0, Arg, Array, Float, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, conv_shape
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import FloatConvParams, prepare_float_conv
from edgenn.prepared.fully_connected import (
    FloatFullyConnectedParams,
    prepare_float_fully_connected,
)

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


def _bias(layer: FloatConvParams | FloatFullyConnectedParams, arrays: list[CArray]) -> Arg:
    bias = layer.bias
    if bias is None:
        return NULL
    arrays.append(CArray("bias", "float", bias))
    return Array("bias")


def _clamp_args(layer: FloatConvParams | FloatFullyConnectedParams) -> tuple[Float, Float]:
    # the reference layer's bounds: +-FLT_MAX without an activation in a TFLite model, +-inf
    # (a clamp that passes every value, NaN included) in an ONNX one
    return Float(layer.act_min), Float(layer.act_max)


def _conv_match(node: Node, graph: Graph) -> bool:
    return _float_weights(node, graph) and not is_depthwise(node, graph)


def _conv(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_float_conv(node, graph)
    arrays = [CArray("w", "float", layer.w)]  # [Cout, KH, KW, Cin/g]
    bias = _bias(layer, arrays)
    call = c_call("edgenn_conv_f32", IN0, OUT0, Array("w"), bias, *conv_shape(layer),
                  layer.groups, *_clamp_args(layer))
    return KernelCall(call, SRC, tuple(arrays),
                      comment=f"Conv2D float32 {layer.k_h}x{layer.k_w}, {layer.groups} group(s)")


def _dw_match(node: Node, graph: Graph) -> bool:
    return _float_weights(node, graph) and is_depthwise(node, graph)


def _dwconv(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_float_conv(node, graph)
    w = layer.w  # [Cout, KH, KW, 1]
    arrays = [CArray("w", "float", np.ascontiguousarray(w[..., 0].transpose(1, 2, 0)))]
    bias = _bias(layer, arrays)
    call = c_call("edgenn_dwconv_f32", IN0, OUT0, Array("w"), bias, *conv_shape(layer),
                  *_clamp_args(layer))
    return KernelCall(call, SRC, tuple(arrays),
                      comment=f"depthwise Conv2D float32 {layer.k_h}x{layer.k_w}")


def _fc(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_float_fully_connected(node, graph)
    w = layer.w  # [Cout, K]
    co, depth = w.shape
    rows = graph.tensor(node.inputs[0]).size // depth
    arrays = [CArray("w", "float", w)]
    bias = _bias(layer, arrays)
    call = c_call("edgenn_fc_f32", IN0, OUT0, Array("w"), bias, rows, depth, co,
                  *_clamp_args(layer))
    return KernelCall(call, SRC, tuple(arrays),
                      comment=f"FullyConnected float32 {rows} x {depth} -> {co}")


register_kernel(PortableKernel("Conv2D", "edgenn_conv_f32", _conv_match, _conv, F32))
register_kernel(PortableKernel("Conv2D", "edgenn_dwconv_f32", _dw_match, _dwconv, F32))
register_kernel(PortableKernel("FullyConnected", "edgenn_fc_f32", _float_weights, _fc, F32))
