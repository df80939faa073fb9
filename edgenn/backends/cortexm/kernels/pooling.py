"""Portable MaxPool2D / AvgPool2D kernels, int8 and int16 (TFLite's 16x8 scheme), plus the
requantization to a differently quantized output. The C loops are written once for both
types (``edgenn_pool_generic.h``)."""

from __future__ import annotations

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Arg, CCall, c_call
from edgenn.backends.cortexm.kernel import KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    is_int8,
    is_int16,
)
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.pooling import PoolParams, prepare_pool
from edgenn.prepared.requant import Requant

# per element type: the C suffix, the pooling source, the in-place requantization
_TYPES = {DType.INT8: ("s8", ("edgenn_pool_s8.c", "edgenn_unary_s8.c"), "edgenn_requant_s8"),
          DType.INT16: ("s16", ("edgenn_s16_misc_pool.c", "edgenn_s16_misc_quant.c"),
                        "edgenn_requant_s16_s16")}


def requant_tail(r: Requant | None, out: Arg, n: int,
                 dtype: DType = DType.INT8) -> tuple[CCall, ...]:
    """The in-place rescale TFLM applies after a data-moving op on ``dtype`` data, or ()."""
    if r is None:
        return ()
    return (c_call(_TYPES[dtype][2], out, out, n, r.in_zp, r.mult, r.shift, r.out_zp,
                   r.act_min, r.act_max),)


def pool_geometry(p: PoolParams) -> tuple[int, ...]:
    """in_h .. pad_l, the arguments every pooling kernel starts with."""
    return (p.in_h, p.in_w, p.in_c, p.out_h, p.out_w, p.k_h, p.k_w, p.stride_h, p.stride_w,
            p.pad_t, p.pad_l)


def _common(node: Node, graph: Graph) -> tuple[PoolParams, tuple[int, ...], int, DType]:
    p = prepare_pool(node, graph)
    return p, pool_geometry(p), p.out_h * p.out_w * p.in_c, p.dtype


def _max(node: Node, graph: Graph) -> KernelCall:
    p, geometry, n, dtype = _common(node, graph)
    suffix, sources, _ = _TYPES[dtype]
    call = (c_call(f"edgenn_maxpool_{suffix}", IN0, OUT0, *geometry, p.act_min, p.act_max),
            *requant_tail(p.requant, OUT0, n, dtype))
    return KernelCall(call, sources)


def _avg(node: Node, graph: Graph) -> KernelCall:
    p, geometry, n, dtype = _common(node, graph)
    suffix, sources, _ = _TYPES[dtype]
    c = graph.tensor(node.inputs[0]).shape[3]
    include = int(bool(node.attr("count_include_pad", False)))
    call = (c_call(f"edgenn_avgpool_{suffix}", IN0, OUT0, SCRATCH, *geometry, include, p.in_zp,
                   p.act_min, p.act_max),
            *requant_tail(p.requant, OUT0, n, dtype))
    return KernelCall(call, sources, scratch_bytes=4 * c)


for _match, _dtype in ((is_int8, DType.INT8), (is_int16, DType.INT16)):
    _suffix = _TYPES[_dtype][0]
    register_kernel(PortableKernel("MaxPool2D", f"edgenn_maxpool_{_suffix}", _match, _max,
                                   (_dtype,)))
    register_kernel(PortableKernel("AvgPool2D", f"edgenn_avgpool_{_suffix}", _match, _avg,
                                   (_dtype,)))
