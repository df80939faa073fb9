"""Portable Reshape, Transpose, Pad and Concat (int8, int16, int32 or float32; up to 6-D).

Transpose and Concat are strided copies (``movement.py``). int8 outputs quantized
differently from the input are requantized in place afterwards, as TFLite Micro runs such a
node (the op, then an int8 -> int8 QUANTIZE). A Reshape whose output the memory planner
aliased to its input costs nothing.
"""

from __future__ import annotations

import struct

import numpy as np

from edgenn.backends.cortexm.ccall import OUT0, Array, Cast, Int, Offset, c_call
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import (
    PortableKernel,
    const_operand,
    dense_strides,
    padded,
)
from edgenn.backends.cortexm.kernels.movement import (
    SOURCES,
    TYPES,
    StridedCopy,
    copy_statement,
    same_types,
)
from edgenn.backends.cortexm.kernels.pooling import requant_tail
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.movement import move_requant, prepare_concat, prepare_pad

RANK = 6
MOVE = ("edgenn_move.c", "edgenn_unary_s8.c")
_movable = same_types


def _rank_ok(node: Node, shape: tuple[int, ...]) -> None:
    if len(shape) > RANK:
        raise UnsupportedOperatorError(f"{node}: {node.op} of a {len(shape)}-D tensor on Cortex-M")


def _reshape(node: Node, graph: Graph) -> KernelCall:
    requant = move_requant(node, graph)
    x = graph.tensor(node.inputs[0])
    # why copy_blocks: it returns at once when the planner aliased output and input.
    arrays: list[CArray] = []
    src = const_operand(node, graph, 0, arrays)
    call = (c_call("edgenn_copy_blocks", src, OUT0, 1, x.nbytes, x.nbytes),
            *requant_tail(requant, OUT0, x.size))
    return KernelCall(call, MOVE, tuple(arrays))


def _transpose(node: Node, graph: Graph) -> KernelCall:
    perm = [int(p) for p in node.attr("perm")]
    x = graph.tensor(node.inputs[0])
    _rank_ok(node, x.shape)
    out = graph.tensor(node.outputs[0]).shape
    strides = dense_strides(x.shape)
    copy = StridedCopy.gathering(out, [strides[p] for p in perm])
    arrays: list[CArray] = []
    src = const_operand(node, graph, 0, arrays)
    call = (copy_statement(node, src, OUT0, copy, x.dtype.itemsize, arrays),
            *requant_tail(move_requant(node, graph), OUT0, x.size))
    return KernelCall(call, MOVE + SOURCES, tuple(arrays))


def _pad(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_pad(node, graph)
    x = graph.tensor(node.inputs[0])
    _rank_ok(node, x.shape)
    y = graph.tensor(node.outputs[0])
    if x.dtype is not DType.FLOAT32:  # the value's low bytes, little-endian
        value = int(layer.value) & ((1 << (8 * x.dtype.itemsize)) - 1)
    else:
        value = struct.unpack("<I", struct.pack("<f", float(layer.value)))[0]
    before = [b for b, _ in layer.pads]
    arrays: list[CArray] = []
    src = const_operand(node, graph, 0, arrays)
    arrays += [CArray("dims", "int32_t", padded(x.shape, RANK)),
               CArray("before", "int32_t", padded(before, RANK, 0)),
               CArray("out_strides", "int32_t", padded(dense_strides(y.shape), RANK, 0))]
    call = (c_call("edgenn_pad", src, OUT0, Array("dims"), Array("before"),
                   Array("out_strides"), y.size, Int(value, unsigned=True), x.dtype.itemsize),
            *requant_tail(layer.requant, OUT0, y.size))
    return KernelCall(call, MOVE, tuple(arrays))


def _concat(node: Node, graph: Graph) -> KernelCall:
    layer = prepare_concat(node, graph)
    y = graph.tensor(node.outputs[0])
    axis = layer.axis
    outer = int(np.prod(y.shape[:axis], dtype=np.int64))
    es = y.dtype.itemsize
    out_strides = dense_strides(y.shape)
    out_inner = int(np.prod(y.shape[axis:], dtype=np.int64))
    arrays: list[CArray] = []
    calls = []
    offset = 0
    for i, name in enumerate(node.inputs):
        t = graph.tensor(name)
        inner = int(np.prod(t.shape[axis:], dtype=np.int64))
        src = const_operand(node, graph, i, arrays)
        r = layer.rescale[i] if layer.rescale else None
        if r is None:
            copy = StridedCopy.scattering(t.shape, out_strides, offset)
            calls.append(copy_statement(node, src, OUT0, copy, es, arrays, str(i)))
        else:
            dst = Offset(Cast("int8_t *", OUT0), offset)
            calls.append(c_call("edgenn_copy_blocks_requant_s8", src, dst, outer, inner,
                                out_inner, r.in_zp, r.mult, r.shift, r.out_zp))
        offset += inner  # elements: the input's slab starts there in every outer row
    return KernelCall(tuple(calls), MOVE + SOURCES, tuple(arrays))


# why bool too: a Reshape is a byte copy, and TFLite reshapes comparison results (an IF's
# condition to a scalar)
def _reshapable(node: Node, graph: Graph) -> bool:
    dts = {graph.tensor(n).dtype for n in (*node.inputs, *node.outputs) if n}
    return same_types(node, graph) or dts == {DType.BOOL}


register_kernel(PortableKernel("Reshape", "edgenn_copy_blocks", _reshapable, _reshape,
                               (*TYPES, DType.BOOL)))
register_kernel(PortableKernel("Transpose", "edgenn_strided_copy", _movable, _transpose, TYPES))
register_kernel(PortableKernel("Pad", "edgenn_pad", _movable, _pad, TYPES))
# why the strided copy's name: a concat is one copy per input (a rescaled input's is
# edgenn_copy_blocks_requant_s8, then the layer is named by its first input's)
register_kernel(PortableKernel("Concat", "edgenn_strided_copy", _movable, _concat, TYPES))
