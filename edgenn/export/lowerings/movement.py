"""Data movement: Slice (SLICE / STRIDED_SLICE), Split (SPLIT / SPLIT_V), Gather, SpaceToDepth,
DepthToSpace.

TFLite Micro's kernels copy bytes, as the IR defines these operators, so quantized tensors
are written with the parameters the graph gives them. Index operands become int32 constants
(TFLM reads no int64 positions). ONNX's CRD DepthToSpace is TFLite's (DCR) DEPTH_TO_SPACE
after a GATHER that reorders the channels.
"""

from __future__ import annotations

import numpy as np

from edgenn.export.lowering import OP, Lowering, op_version
from edgenn.export.lowerings.common import node_name, options
from edgenn.export.ops import lowers
from edgenn.ir import DType


@lowers("Slice")
def _slice(lw: Lowering) -> None:
    assert lw.node is not None
    x_ir = lw.ir(0)
    rank = len(x_ir.shape)
    begin = [int(v) for v in lw.node.attr("begin")]
    end = [int(v) for v in lw.node.attr("end")]
    steps = [int(v) for v in lw.node.attr("steps")]
    name = node_name(lw)
    x, y = lw.input(0), lw.output()
    version = op_version(OP.SLICE, x_ir.dtype)
    if all(s == 1 for s in steps):
        sizes = [e - b for b, e in zip(begin, end, strict=True)]
        if rank > 4:
            version = 5
        lw.emit(OP.SLICE, [x, lw.int32_const(f"{name}_begin", begin),
                           lw.int32_const(f"{name}_size", sizes)], [y],
                *options("SliceOptions"), version=version)
        return
    # why: the IR's end is -1 where a negative step runs through index 0; TFLite would read
    # -1 as the last element, so that axis takes its end from the mask instead
    end_mask = sum(1 << i for i, (e, s) in enumerate(zip(end, steps, strict=True))
                   if s < 0 and e < 0)
    ends = [0 if end_mask >> i & 1 else e for i, e in enumerate(end)]
    version = 4 if rank > 4 else op_version(OP.STRIDED_SLICE, x_ir.dtype)
    lw.emit(OP.STRIDED_SLICE,
            [x, lw.int32_const(f"{name}_begin", begin), lw.int32_const(f"{name}_end", ends),
             lw.int32_const(f"{name}_strides", steps)],
            [y], *options("StridedSliceOptions", begin_mask=0, end_mask=end_mask,
                          ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0),
            version=version)


@lowers("Split")
def _split(lw: Lowering) -> None:
    assert lw.node is not None
    x_ir = lw.ir(0)
    axis = int(lw.node.attr("axis")) % len(x_ir.shape)
    sizes = [int(v) for v in lw.node.attr("sizes")]
    name = node_name(lw)
    x = lw.input(0)
    ys = [lw.output(i) for i in range(len(lw.node.outputs))]
    axis_t = lw.int32_const(f"{name}_axis", [axis])
    if len(set(sizes)) == 1:
        lw.emit(OP.SPLIT, [axis_t, x], ys, *options("SplitOptions", num_splits=len(ys)),
                dtype=x_ir.dtype)
        return
    sizes_t = lw.int32_const(f"{name}_sizes", sizes)
    lw.emit(OP.SPLIT_V, [x, sizes_t, axis_t], ys, *options("SplitVOptions", num_splits=len(ys)),
            dtype=x_ir.dtype)


def _int32_indices(lw: Lowering, index: int) -> int:
    """Operand ``index`` as int32 indices: a constant is converted, an int32 input used."""
    t = lw.ir(index)
    if t.data is not None:
        data = np.asarray(t.data)
        info = np.iinfo(np.int32)
        if data.size and (data.min() < info.min or data.max() > info.max):
            raise lw.unsupported(f"indices {t.name!r} do not fit int32")
        return lw.int32_const(f"{t.name}_int32", data.astype(np.int32))
    if t.dtype is not DType.INT32:
        raise lw.unsupported(f"indices {t.name!r} are {t.dtype.value}; TFLite Micro's GATHER "
                             "reads int32 positions only")
    return lw.tensor(t)


@lowers("Gather")
def _gather(lw: Lowering) -> None:
    assert lw.node is not None
    x_ir = lw.ir(0)
    axis = int(lw.node.attr("axis")) % len(x_ir.shape)
    batch_dims = int(lw.node.attr("batch_dims", 0) or 0)
    if batch_dims < 0:
        batch_dims += len(lw.ir(1).shape)
    version = 5 if batch_dims else op_version(OP.GATHER, x_ir.dtype)
    lw.emit(OP.GATHER, [lw.input(0), _int32_indices(lw, 1)], [lw.output()],
            *options("GatherOptions", axis=axis, batch_dims=batch_dims), version=version)


@lowers("SpaceToDepth")
def _space_to_depth(lw: Lowering) -> None:
    assert lw.node is not None
    block = int(lw.node.attr("block"))
    if lw.node.attr("mode", "DCR") != "CRD":
        lw.emit(OP.SPACE_TO_DEPTH, [lw.input(0)], [lw.output()],
                *options("SpaceToDepthOptions", block_size=block))
        return
    # CRD: TFLite's (DCR) SPACE_TO_DEPTH, then the channels gathered into CRD order
    y_ir = lw.out()
    name = node_name(lw)
    dcr = lw.new_tensor(f"{name}_dcr", y_ir.shape, y_ir.dtype, y_ir.quant)
    lw.emit(OP.SPACE_TO_DEPTH, [lw.input(0)], [dcr],
            *options("SpaceToDepthOptions", block_size=block))
    channels = y_ir.shape[3]
    k = np.arange(channels)
    # CRD channel k = c*b*b + (i*b + j) comes from DCR channel (i*b + j)*C + c
    order = ((k % (block * block)) * (channels // (block * block)) + k // (block * block))
    order_t = lw.int32_const(f"{name}_crd_order", order.astype(np.int32))
    lw.emit(OP.GATHER, [dcr, order_t], [lw.output()],
            *options("GatherOptions", axis=3, batch_dims=0), dtype=y_ir.dtype)


def crd_to_dcr(channels: int, block: int) -> np.ndarray:
    """The channel order that turns a CRD DepthToSpace into TFLite's DCR one.

    CRD reads output channel ``c`` at block offset ``(i, j)`` from input channel
    ``c*b*b + i*b + j``, DCR from ``(i*b + j)*C' + c``; gathering the channels in this order
    first makes the DCR kernel read what CRD would.
    """
    out_c = channels // (block * block)
    k = np.arange(channels)
    offset, c = k // out_c, k % out_c  # DCR's (i*b + j) and c of channel k
    return (c * block * block + offset).astype(np.int32)


@lowers("DepthToSpace")
def _depth_to_space(lw: Lowering) -> None:
    assert lw.node is not None
    x_ir = lw.ir(0)
    block = int(lw.node.attr("block"))
    x = lw.input(0)
    if lw.node.attr("mode", "DCR") == "CRD":
        name = node_name(lw)
        order = lw.int32_const(f"{name}_crd_order", crd_to_dcr(x_ir.shape[3], block))
        dcr = lw.new_tensor(f"{name}_dcr", x_ir.shape, x_ir.dtype, x_ir.quant)
        lw.emit(OP.GATHER, [x, order], [dcr], *options("GatherOptions", axis=3, batch_dims=0),
                dtype=x_ir.dtype)
        x = dcr
    lw.emit(OP.DEPTH_TO_SPACE, [x], [lw.output()],
            *options("DepthToSpaceOptions", block_size=block), dtype=x_ir.dtype)
