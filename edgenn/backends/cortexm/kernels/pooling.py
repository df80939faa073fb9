"""Portable MaxPool2D / AvgPool2D kernels, int8 and int16 (TFLite's 16x8 scheme), plus the
requantization to a differently quantized output. The C loops are written once for both
types (``edgenn_pool_generic.h``)."""

from __future__ import annotations

from typing import Any

from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    args,
    is_int8,
    is_int16,
    ref_layer,
)
from edgenn.ir import DType, Graph, Node

# per element type: the C suffix, the pooling source, the in-place requantization
_TYPES = {DType.INT8: ("s8", ("edgenn_pool_s8.c", "edgenn_unary_s8.c"), "edgenn_requant_s8"),
          DType.INT16: ("s16", ("edgenn_s16_misc_pool.c", "edgenn_s16_misc_quant.c"),
                        "edgenn_requant_s16_s16")}


def requant_tail(layer: Any, out: str, n: int, dtype: DType = DType.INT8) -> str:
    """The in-place rescale TFLM applies after a data-moving op on ``dtype`` data, or ''."""
    r = layer.requant
    if r is None:
        return ""
    info_lo, info_hi = (-128, 127) if dtype is DType.INT8 else (-32768, 32767)
    lo, hi = getattr(r, "lo", info_lo), getattr(r, "hi", info_hi)
    return (f"\n    {_TYPES[dtype][2]}({out}, {out}, {n}, "
            f"{args(r.zp_in, r.multiplier, r.shift, r.zp_out, lo, hi)});")


def _common(node: Node, graph: Graph) -> tuple[Any, str, int, DType]:
    layer = ref_layer(node, graph)
    x = graph.tensor(node.inputs[0])
    _, h, w, c = x.shape
    geometry = args(h, w, c, layer.oh, layer.ow, *layer.kernel, *layer.strides,
                    layer.pads[0], layer.pads[1])
    return layer, geometry, layer.oh * layer.ow * c, x.dtype


def _max(node: Node, graph: Graph) -> KernelCall:
    layer, geometry, n, dtype = _common(node, graph)
    suffix, sources, _ = _TYPES[dtype]
    call = (f"edgenn_maxpool_{suffix}({{in0}}, {{out0}}, {geometry}, "
            f"{args(layer.lo, layer.hi)});" + requant_tail(layer, "{out0}", n, dtype))
    return KernelCall(call, sources, kernel_name=f"edgenn_maxpool_{suffix}")


def _avg(node: Node, graph: Graph) -> KernelCall:
    layer, geometry, n, dtype = _common(node, graph)
    suffix, sources, _ = _TYPES[dtype]
    c = graph.tensor(node.inputs[0]).shape[3]
    include = int(bool(node.attr("count_include_pad", False)))
    call = (f"edgenn_avgpool_{suffix}({{in0}}, {{out0}}, {{scratch}}, {geometry}, "
            f"{args(include, layer.zp, layer.lo, layer.hi)});"
            + requant_tail(layer, "{out0}", n, dtype))
    return KernelCall(call, sources, scratch_bytes=4 * c, kernel_name=f"edgenn_avgpool_{suffix}")


for _match, _dtype in ((is_int8, DType.INT8), (is_int16, DType.INT16)):
    _suffix = _TYPES[_dtype][0]
    register_kernel(PortableKernel("MaxPool2D", f"edgenn_maxpool_{_suffix}", _match, _max,
                                   (_dtype,)))
    register_kernel(PortableKernel("AvgPool2D", f"edgenn_avgpool_{_suffix}", _match, _avg,
                                   (_dtype,)))
