"""Converters of TFLite's data-movement operators: STRIDED_SLICE, SLICE, SPLIT, SPLIT_V,
UNPACK, PACK, EXPAND_DIMS, GATHER, SPACE_TO_DEPTH and DEPTH_TO_SPACE.

Index operands (begin / end / strides / sizes / axis) must be constants; masks and negative
indices are resolved here exactly as TFLite Micro resolves them, so the IR ``Slice`` carries
only in-range ``begin`` / ``end`` / ``steps``. A shrunk axis is a ``Reshape`` after the slice,
UNPACK a ``Split`` into pieces of one then a ``Reshape`` each, PACK a ``Reshape`` per input
then a ``Concat`` and EXPAND_DIMS a ``Reshape``.
"""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import converter, output_name
from edgenn.ir import DType, Node, Tensor
from edgenn.ir.tflite_enums import OP


def _vector(b: Builder, op: RawOperator, slot: int, what: str, count: int) -> list[int]:
    """Constant integer operand ``slot`` as ``count`` Python ints (one error otherwise)."""
    data = b.const_array(op, slot, what)
    if data.dtype.kind not in "iu":
        raise b.fail(op, f"{what} must be integers, got {data.dtype.name}")
    flat = [int(v) for v in data.reshape(-1)]
    if len(flat) != count:
        raise b.fail(op, f"{what} has {len(flat)} entries for a rank-{count} input")
    return flat


def _axis(b: Builder, op: RawOperator, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise b.fail(op, f"axis {axis} does not fit rank {rank}")
    return axis % rank


def _outputs(b: Builder, op: RawOperator) -> list[str]:
    return [output_name(b, op, k) for k in range(len(op.outputs))]


# -- slices ----------------------------------------------------------------------------------
def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def _tflm_span(size: int, begin: int, end: int, stride: int, begin_masked: bool,
               end_masked: bool, shrink: bool) -> tuple[int, int]:
    """TFLite Micro's (start, stop) of one axis (``StridedSliceStartForAxis`` /
    ``StridedSliceEndForAxis``): negative indices count from the end, then clamp; masks win."""
    start = begin + size if begin < 0 else begin
    start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
    if begin_masked:
        start = 0 if stride > 0 else size - 1
    if shrink:
        return start, (start + 1 if start < size else start)
    stop = end + size if end < 0 else end
    stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
    if end_masked:
        stop = size if stride > 0 else -1
    return start, stop


def _emit_slice(b: Builder, op: RawOperator, x: Tensor, spans: list[tuple[int, int, int]],
                shrink: set[int]) -> None:
    """A ``Slice`` to the declared output (through a ``Reshape`` when axes are shrunk)."""
    out = output_name(b, op)
    shape = []
    for axis, (start, stop, step) in enumerate(spans):
        n = len(range(start, stop, step))
        if n == 0:
            raise b.unsupported(op, f"axis {axis} is sliced to nothing (empty tensors are "
                                    "unsupported)")
        shape.append(n)
    attrs = {"begin": tuple(s[0] for s in spans), "end": tuple(s[1] for s in spans),
             "steps": tuple(s[2] for s in spans)}
    name = b.op_name(op)
    if not shrink:
        b.emit(Node(name, "Slice", (x.name,), (out,), attrs))
        return
    declared = b.tensors[out]
    mid = b.add_intermediate(f"{name}/unshrunk", declared, tuple(shape))
    b.emit(Node(name, "Slice", (x.name,), (mid,), attrs))
    kept = tuple(n for axis, n in enumerate(shape) if axis not in shrink)
    b.emit(Node(f"{name}/shrink", "Reshape", (mid,), (out,), {"shape": kept}))


@converter("STRIDED_SLICE")
def strided_slice(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    rank = len(x.shape)
    begin = _vector(b, op, 1, "begin", rank)
    end = _vector(b, op, 2, "end", rank)
    strides = _vector(b, op, 3, "strides", rank)
    masks = {k: int(op.options.get(k, 0)) for k in
             ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    if masks["ellipsis_mask"] or masks["new_axis_mask"]:
        # why refused: TFLite Micro zeroes both masks, so such a model means something else
        # there than in TensorFlow
        raise b.unsupported(op, "STRIDED_SLICE with an ellipsis or new-axis mask is "
                                "unsupported")
    spans, shrink = [], set()
    for axis, size in enumerate(x.shape):
        if strides[axis] == 0:
            raise b.fail(op, f"stride of axis {axis} is 0")
        bit = 1 << axis
        is_shrunk = bool(masks["shrink_axis_mask"] & bit)
        start, stop = _tflm_span(size, begin[axis], end[axis], strides[axis],
                                 bool(masks["begin_mask"] & bit), bool(masks["end_mask"] & bit),
                                 is_shrunk)
        if is_shrunk:
            if start >= size:
                raise b.fail(op, f"shrunk axis {axis} index {begin[axis]} is out of range "
                                 f"for size {size}")
            shrink.add(axis)
            spans.append((start, start + 1, 1))
        else:
            spans.append((start, stop, strides[axis]))
    _emit_slice(b, op, x, spans, shrink)


@converter("SLICE")
def slice_(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    rank = len(x.shape)
    begin = _vector(b, op, 1, "begin", rank)
    size = _vector(b, op, 2, "size", rank)
    spans = []
    for axis, (dim, start, n) in enumerate(zip(x.shape, begin, size, strict=True)):
        # why these checks: TFLite Micro's GetValidatedBeginAndSizeVectors
        if not 0 <= start <= dim:
            raise b.fail(op, f"begin {start} of axis {axis} is outside [0, {dim}]")
        n = dim - start if n == -1 else n
        if not 0 <= n <= dim - start:
            raise b.fail(op, f"size {size[axis]} of axis {axis} does not fit {dim - start} "
                             "remaining elements")
        spans.append((start, start + n, 1))
    _emit_slice(b, op, x, spans, set())


# -- splits ----------------------------------------------------------------------------------
def _scalar(b: Builder, op: RawOperator, slot: int, what: str) -> int:
    data = b.const_array(op, slot, what)
    if data.size != 1 or data.dtype.kind not in "iu":
        raise b.fail(op, f"{what} must be one integer, got {data.dtype.name}{list(data.shape)}")
    return int(data.reshape(-1)[0])


def _emit_split(b: Builder, op: RawOperator, x: Tensor, axis: int, sizes: list[int],
                outs: list[str]) -> None:
    if any(n < 1 for n in sizes):
        raise b.unsupported(op, f"split sizes {sizes}: empty pieces are unsupported")
    b.emit(Node(b.op_name(op), "Split", (x.name,), tuple(outs),
                {"axis": axis, "sizes": tuple(sizes)}))


@converter("SPLIT")
def split(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 1)
    axis = _axis(b, op, _scalar(b, op, 0, "SPLIT axis"), len(x.shape))
    outs = _outputs(b, op)
    count = int(op.options.get("num_splits", len(outs)))
    if count != len(outs) or count < 1 or x.shape[axis] % count:
        raise b.fail(op, f"{count} splits ({len(outs)} outputs) do not divide axis {axis} "
                         f"of size {x.shape[axis]}")
    _emit_split(b, op, x, axis, [x.shape[axis] // count] * count, outs)


@converter("SPLIT_V")
def split_v(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    axis = _axis(b, op, _scalar(b, op, 2, "SPLIT_V axis"), len(x.shape))
    outs = _outputs(b, op)
    sizes = _vector(b, op, 1, "size_splits", len(outs))
    if sizes.count(-1) > 1:
        raise b.fail(op, f"size_splits {sizes} has more than one -1")
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != x.shape[axis]:
        raise b.fail(op, f"size_splits {sizes} do not add up to axis {axis} of size "
                         f"{x.shape[axis]}")
    _emit_split(b, op, x, axis, sizes, outs)


@converter("UNPACK")
def unpack(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    axis = _axis(b, op, int(op.options.get("axis", 0)), len(x.shape))
    outs = _outputs(b, op)
    count = int(op.options.get("num", len(outs)))
    if count != len(outs) or count != x.shape[axis]:
        raise b.fail(op, f"unpacking {count} values ({len(outs)} outputs) from axis {axis} "
                         f"of size {x.shape[axis]}")
    name = b.op_name(op)
    piece = tuple(1 if k == axis else d for k, d in enumerate(x.shape))
    # why the pieces carry the outputs' quantization: the Reshape after them then moves
    # bytes only, as TFLite Micro does
    mids = [b.add_intermediate(f"{name}/piece{k}", b.tensors[o], piece)
            for k, o in enumerate(outs)]
    _emit_split(b, op, x, axis, [1] * count, mids)
    kept = tuple(d for k, d in enumerate(x.shape) if k != axis)
    for k, (mid, out) in enumerate(zip(mids, outs, strict=True)):
        b.emit(Node(f"{name}/squeeze{k}", "Reshape", (mid,), (out,), {"shape": kept}))


@converter("PACK")
def pack(b: Builder, op: RawOperator) -> None:
    xs = [b.input(op, i) for i in range(len(op.inputs))]
    if not xs:
        raise b.fail(op, "no inputs")
    count = int(op.options.get("values_count", len(xs)))
    if count != len(xs):
        raise b.fail(op, f"values_count {count} but {len(xs)} inputs")
    shape = xs[0].shape
    if any(t.shape != shape or t.dtype != xs[0].dtype for t in xs):
        raise b.fail(op, "PACK inputs differ in shape or type")
    axis = int(op.options.get("axis", 0))
    if not -(len(shape) + 1) <= axis <= len(shape):
        raise b.fail(op, f"axis {axis} does not fit rank {len(shape) + 1}")
    axis %= len(shape) + 1
    unit = (*shape[:axis], 1, *shape[axis:])
    out = output_name(b, op)
    name = b.op_name(op)
    parts = []
    for k, t in enumerate(xs):
        if t.data is not None:
            parts.append(b.add_const(f"{name}/value{k}", t.data.reshape(unit), t.quant))
            continue
        mid = b.add_intermediate(f"{name}/value{k}", t, unit)
        b.emit(Node(f"{name}/expand{k}", "Reshape", (t.name,), (mid,), {"shape": unit}))
        parts.append(mid)
    attrs: dict[str, object] = {"axis": axis}
    y = b.tensors[out]
    if y.dtype is DType.INT8 and any(t.quant != y.quant for t in xs):
        attrs["requantize"] = False  # TFLite Micro's PACK copies int8 bytes as they are
    b.emit(Node(name, "Concat", tuple(parts), (out,), attrs))


@converter("EXPAND_DIMS")
def expand_dims(b: Builder, op: RawOperator) -> None:
    x = b.input(op, 0)
    rank = len(x.shape)
    axis = _scalar(b, op, 1, "EXPAND_DIMS axis")
    if not -(rank + 1) <= axis <= rank:
        raise b.fail(op, f"axis {axis} does not fit rank {rank + 1}")
    axis %= rank + 1
    out = output_name(b, op)
    y = b.tensors[out]
    if x.dtype is DType.INT8 and x.quant != y.quant:
        # why: TFLite Micro copies the bytes, the IR Reshape would rescale them
        raise b.unsupported(op, "int8 EXPAND_DIMS with an output quantized differently from "
                                "its input is unsupported")
    shape = (*x.shape[:axis], 1, *x.shape[axis:])
    b.emit(Node(b.op_name(op), "Reshape", (x.name,), (out,), {"shape": shape}))


# -- gather and block moves ------------------------------------------------------------------
@converter("GATHER")
def gather(b: Builder, op: RawOperator) -> None:
    x, idx = b.input(op, 0), b.input(op, 1)
    attrs = {"axis": int(op.options.get("axis", 0)),
             "batch_dims": int(op.options.get("batch_dims", 0))}
    b.emit(Node(b.op_name(op), "Gather", (x.name, idx.name), (output_name(b, op),), attrs))


@converter("SPACE_TO_DEPTH", "DEPTH_TO_SPACE")
def block_move(b: Builder, op: RawOperator) -> None:
    if "block_size" not in op.options:
        raise b.fail(op, "operator options are missing")
    kind = "SpaceToDepth" if op.opcode == OP.SPACE_TO_DEPTH else \
        "DepthToSpace"
    block = int(op.options["block_size"])
    if block < 1:
        raise b.fail(op, f"block size {block}")
    b.emit(Node(b.op_name(op), kind, (b.input(op, 0).name,), (output_name(b, op),),
                {"block": block}))
