"""Portable int8 Conv2D and depthwise Conv2D kernels (and the parameters DSP kernels reuse)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import args, i32, int8_weights, is_int8, ref_layer
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node
from edgenn.ir.conv import is_depthwise, is_depthwise_conv


@dataclass(frozen=True)
class ConvParams:
    """Everything an int8 Conv2D kernel needs, computed as TFLite Micro's prepare does.

    ``w`` is int8 [Cout, KH, KW, Cin/groups] with weight zero points removed; ``bias`` is the
    int32 bias (zeros if absent); ``bias_folded = bias - in_zp * sum(w[c])`` (int32 wrap),
    valid where a window lies wholly inside the input; ``mult``/``shift`` per channel.
    """

    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    k_h: int
    k_w: int
    stride_h: int
    stride_w: int
    dil_h: int
    dil_w: int
    pad_t: int
    pad_l: int
    pad_b: int
    pad_r: int
    groups: int
    in_zp: int
    out_zp: int
    act_min: int
    act_max: int
    w: np.ndarray
    bias: np.ndarray
    bias_folded: np.ndarray
    mult: np.ndarray
    shift: np.ndarray

    @property
    def depthwise(self) -> bool:
        return is_depthwise_conv(self.groups, self.in_c, self.w.shape)

    @property
    def has_padding(self) -> bool:
        return any((self.pad_t, self.pad_l, self.pad_b, self.pad_r))

    def shape_args(self) -> str:
        """in_h..pad_l as a C argument list (the common part of the portable calls)."""
        return args(self.in_h, self.in_w, self.in_c, self.out_h, self.out_w, self.out_c,
                    self.k_h, self.k_w, self.stride_h, self.stride_w, self.dil_h, self.dil_w,
                    self.pad_t, self.pad_l)

    def quant_args(self) -> str:
        return args(self.in_zp, self.out_zp, self.act_min, self.act_max)


def conv_params(node: Node, graph: Graph) -> ConvParams:
    """The int8 parameters of a Conv2D node (raises for float or malformed nodes)."""
    layer = ref_layer(node, graph)
    if not layer.int8:
        raise UnsupportedOperatorError(f"{node}: the Cortex-M backend runs int8 Conv2D only")
    x = graph.tensor(node.inputs[0])
    wt = graph.tensor(node.inputs[1])
    w = int8_weights(node, wt)
    _, in_h, in_w, in_c = x.shape
    _, out_h, out_w, out_c = graph.tensor(node.outputs[0]).shape
    bias = np.asarray(layer.bias_int, dtype=np.int64)
    pt, pl, pb, pr = layer.pads
    return ConvParams(
        in_h, in_w, in_c, out_h, out_w, out_c, layer.kh, layer.kw,
        layer.strides[0], layer.strides[1], layer.dilations[0], layer.dilations[1],
        pt, pl, pb, pr, layer.groups, layer.in_zp, layer.out_zp, layer.lo, layer.hi,
        w, i32(bias), i32(fold_input_zero_point(bias, w, layer.in_zp)),
        np.broadcast_to(np.asarray(layer.mult, np.int64), (out_c,)).astype(np.int32),
        np.broadcast_to(np.asarray(layer.shift, np.int64), (out_c,)).astype(np.int32),
    )


def _quant_arrays(p: ConvParams) -> list[CArray]:
    return [
        CArray("bias", "int32_t", p.bias),
        CArray("bias_folded", "int32_t", p.bias_folded),
        CArray("mult", "int32_t", p.mult),
        CArray("shift", "int32_t", p.shift),
    ]


class PortableConv:
    """Direct (im2col-free) convolution, any groups/stride/dilation/padding, every core."""

    op = "Conv2D"
    priority = 0
    name = "edgenn_conv_s8"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return is_int8(node, graph) and not is_depthwise(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        call = (f"edgenn_conv_s8({{in0}}, {{out0}}, {{w}}, {{bias}}, {{bias_folded}}, {{mult}}, "
                f"{{shift}}, {p.shape_args()}, {p.groups}, {p.quant_args()});")
        return KernelCall(
            call=call,
            sources=("edgenn_conv_s8.c",),
            arrays=(CArray("w", "int8_t", p.w), *_quant_arrays(p)),
            kernel_name=self.name,
        )


class PortableDepthwiseConv:
    """Depthwise convolution (groups == Cin, any depth multiplier), channels innermost."""

    op = "Conv2D"
    priority = 0
    name = "edgenn_dwconv_s8"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return is_int8(node, graph) and is_depthwise(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        # [Cout, KH, KW, 1] -> [KH, KW, Cout]: channels contiguous per tap
        w = np.ascontiguousarray(p.w[..., 0].transpose(1, 2, 0))
        call = (f"edgenn_dwconv_s8({{in0}}, {{out0}}, {{w}}, {{bias}}, {{bias_folded}}, "
                f"{{mult}}, {{shift}}, {{scratch}}, {p.shape_args()}, {p.quant_args()});")
        return KernelCall(
            call=call,
            sources=("edgenn_dwconv_s8.c",),
            arrays=(CArray("w", "int8_t", w), *_quant_arrays(p)),
            scratch_bytes=4 * p.out_c,
            kernel_name=self.name,
        )


register_kernel(PortableConv())
register_kernel(PortableDepthwiseConv())
