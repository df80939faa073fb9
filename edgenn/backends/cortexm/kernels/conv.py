"""Portable int8 Conv2D and depthwise Conv2D kernels (and the parameters DSP kernels reuse)."""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import conv_shape, is_int8
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvParams, prepare_conv

__all__ = ["ConvParams", "conv_params"]  # the record, re-exported for the DSP kernels


def conv_params(node: Node, graph: Graph) -> ConvParams:
    """The int8 record of a Conv2D node (``edgenn.prepared.conv``; raises for float or
    malformed nodes)."""
    if graph.tensor(node.inputs[0]).dtype is not DType.INT8:
        raise UnsupportedOperatorError(f"{node}: the Cortex-M backend runs int8 Conv2D only")
    return prepare_conv(node, graph)


def _quant_arrays(p: ConvParams) -> list[CArray]:
    return [
        CArray("bias", "int32_t", p.bias),
        CArray("bias_folded", "int32_t", p.bias_folded),
        CArray("mult", "int32_t", p.mult),
        CArray("shift", "int32_t", p.shift),
    ]


# the weights and _quant_arrays, in the order the portable conv kernels take them
_QUANT = (Array("w"), Array("bias"), Array("bias_folded"), Array("mult"), Array("shift"))


class PortableConv:
    """Direct (im2col-free) convolution, any groups/stride/dilation/padding, every core."""

    op = "Conv2D"
    priority = 0
    name = "edgenn_conv_s8"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return is_int8(node, graph) and not is_depthwise(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        call = c_call("edgenn_conv_s8", IN0, OUT0, *_QUANT, *conv_shape(p), p.groups,
                      p.in_zp, p.out_zp, p.act_min, p.act_max)
        return KernelCall(
            call=call,
            sources=("edgenn_conv_s8.c",),
            arrays=(CArray("w", "int8_t", p.w), *_quant_arrays(p)),
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
        call = c_call("edgenn_dwconv_s8", IN0, OUT0, *_QUANT, SCRATCH, *conv_shape(p),
                      p.in_zp, p.out_zp, p.act_min, p.act_max)
        return KernelCall(
            call=call,
            sources=("edgenn_dwconv_s8.c",),
            arrays=(CArray("w", "int8_t", w), *_quant_arrays(p)),
            scratch_bytes=4 * p.out_c,
        )


register_kernel(PortableConv())
register_kernel(PortableDepthwiseConv())
