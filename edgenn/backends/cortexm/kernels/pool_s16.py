"""Portable int16 MaxPool2D / AvgPool2D kernels (TFLite's 16x8 scheme), plus the in-place
int16 -> int16 requantization when the output is declared with other parameters."""

from __future__ import annotations

from typing import Any

from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, args, ref_layer
from edgenn.ir import DType, Graph, Node

SRC = ("edgenn_s16_misc_pool.c", "edgenn_s16_misc_quant.c")


def is_int16(node: Node, graph: Graph) -> bool:
    """True when the node's first input and first output are int16."""
    if not node.inputs or not node.inputs[0]:
        return False
    return (graph.tensor(node.inputs[0]).dtype is DType.INT16
            and graph.tensor(node.outputs[0]).dtype is DType.INT16)


def requant_tail_s16(layer: Any, out: str, n: int) -> str:
    """The in-place int16 -> int16 rescale TFLM applies after a data-moving op, or ''."""
    r = layer.requant
    if r is None:
        return ""
    return (f"\n    edgenn_requant_s16_s16({out}, {out}, {n}, "
            f"{args(r.zp_in, r.multiplier, r.shift, r.zp_out, r.lo, r.hi)});")


def _common(node: Node, graph: Graph) -> tuple[Any, str, int]:
    layer = ref_layer(node, graph)
    _, h, w, c = graph.tensor(node.inputs[0]).shape
    geometry = args(h, w, c, layer.oh, layer.ow, *layer.kernel, *layer.strides,
                    layer.pads[0], layer.pads[1])
    return layer, geometry, layer.oh * layer.ow * c


def _max(node: Node, graph: Graph) -> KernelCall:
    layer, geometry, n = _common(node, graph)
    call = (f"edgenn_maxpool_s16({{in0}}, {{out0}}, {geometry}, {args(layer.lo, layer.hi)});"
            + requant_tail_s16(layer, "{out0}", n))
    return KernelCall(call, SRC, kernel_name="edgenn_maxpool_s16")


def _avg(node: Node, graph: Graph) -> KernelCall:
    layer, geometry, n = _common(node, graph)
    c = graph.tensor(node.inputs[0]).shape[3]
    include = int(bool(node.attr("count_include_pad", False)))
    call = (f"edgenn_avgpool_s16({{in0}}, {{out0}}, {{scratch}}, {geometry}, "
            f"{args(include, layer.zp, layer.lo, layer.hi)});"
            + requant_tail_s16(layer, "{out0}", n))
    return KernelCall(call, SRC, scratch_bytes=4 * c, kernel_name="edgenn_avgpool_s16")


register_kernel(PortableKernel("MaxPool2D", "edgenn_maxpool_s16", is_int16, _max,
                               (DType.INT16,)))
register_kernel(PortableKernel("AvgPool2D", "edgenn_avgpool_s16", is_int16, _avg,
                               (DType.INT16,)))
