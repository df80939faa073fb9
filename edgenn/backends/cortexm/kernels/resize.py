"""Portable Resize: nearest neighbour of int8 / int16 (a row copy by source tables) and
bilinear of int8 (10-bit taps), with the tables of ``edgenn.prepared.resize`` (the reference
layer's too)."""

from __future__ import annotations

import numpy as np

from edgenn.arith.resize import Taps
from edgenn.backends.cortexm.ccall import IN0, OUT0, Array, CCall, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.requant import Requant
from edgenn.prepared.resize import prepare_resize

SRC = ("edgenn_resize.c",)


def _matches(node: Node, graph: Graph) -> bool:
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    if x.dtype is not y.dtype or x.dtype not in (DType.INT8, DType.INT16):
        return False
    return node.attr("mode") == "nearest" or x.dtype is DType.INT8


def _requant(r: Requant | None, dtype: DType,
             n: int) -> tuple[tuple[CCall, ...], tuple[str, ...]]:
    """The rescale to a differently quantized output, in place after the resize."""
    if r is None:
        return (), ()
    values = (n, r.in_zp, r.mult, r.shift, r.out_zp, r.act_min, r.act_max)
    if dtype is DType.INT8:
        return (c_call("edgenn_requant_s8", OUT0, OUT0, *values),), ("edgenn_unary_s8.c",)
    return ((c_call("edgenn_requant_s16_s16", OUT0, OUT0, *values),),
            ("edgenn_s16_misc_quant.c",))


def _taps(t: Taps | None) -> np.ndarray:
    assert t is not None
    return np.stack([t.lo, t.hi, t.w_lo, t.w_hi], axis=1).astype(np.int32)


def _prepare(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_resize(node, graph)
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    _, _, w, c = x.shape
    _, oh, ow, _ = y.shape
    tail, extra = _requant(layer.requant, x.dtype, y.size)
    if layer.mode == "nearest":
        call = c_call("edgenn_resize_nearest", IN0, OUT0, w, oh, ow, c * x.dtype.itemsize,
                      Array("rows"), Array("cols"))
        return KernelCall((call, *tail), SRC + extra,
                          (CArray("rows", "int32_t", layer.rows),
                           CArray("cols", "int32_t", layer.cols)))
    call = c_call("edgenn_resize_bilinear_s8", IN0, OUT0, w, c, oh, ow, Array("y_taps"),
                  Array("x_taps"))
    return KernelCall((call, *tail), SRC + extra,
                      (CArray("y_taps", "int32_t", _taps(layer.y_taps)),
                       CArray("x_taps", "int32_t", _taps(layer.x_taps))))


register_kernel(PortableKernel("Resize", "edgenn_resize", _matches, _prepare,
                               (DType.INT8, DType.INT16)))
