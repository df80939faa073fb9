"""ReduceMax / ReduceMin / ReduceSum, ArgMax / ArgMin, CumSum, LpNormalization (p = 2) and
Resize (nearest and linear, where TFLite's resize expresses the ONNX attributes exactly).

A rank-4 tensor stored NHWC keeps that layout where the result is again rank 4 (the axes are
remapped); a reduction that drops axes works in ONNX axis order instead, so the kept axes
come out in ONNX's order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import NodeProto

from edgenn.arith.resize import float_taps, nearest_indices
from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.frontends.onnx.values import nchw_axis_to_nhwc

_REDUCERS = {"ReduceMax": "ReduceMax", "ReduceMin": "ReduceMin", "ReduceSum": "ReduceSum"}
# the opset from which each reducer takes its axes as an input instead of an attribute
_AXES_INPUT_FROM = {"ReduceMax": 18, "ReduceMin": 18, "ReduceSum": 13}


def _rank_axes(ctx: Context, axes: Sequence[int], rank: int) -> list[int]:
    if any(not -rank <= a < rank for a in axes):
        raise ctx.malformed(f"axes {list(axes)} do not fit rank {rank}")
    return sorted({a % rank for a in axes})


def _layout(ctx: Context, x: str, axes: Sequence[int], keep: bool) -> tuple[str, list[int], bool]:
    """(IR input, IR axes, NHWC output?) for a reduction of ONNX ``axes`` of ``x``."""
    if ctx.is_nhwc(x) and keep:
        return ctx.nhwc(x), sorted(nchw_axis_to_nhwc(a) for a in axes), True
    return ctx.onnx_order(x), list(axes), False


@converter(*_REDUCERS)
def convert_reduce(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    rank = len(ctx.onnx_shape(x))
    if ctx.opset >= _AXES_INPUT_FROM[node.op_type]:
        name = ctx.input(1)
        raw = None if name is None else [int(a) for a in ctx.const_array(name).reshape(-1)]
    else:
        raw = ctx.attr("axes")
    if not raw:
        if ctx.attr("noop_with_empty_axes", 0):
            ctx.alias(ctx.output(), x)
            return
        raw = list(range(rank))
    keep = bool(ctx.attr("keepdims", 1))
    ir_x, axes, nhwc = _layout(ctx, x, _rank_axes(ctx, raw, rank), keep)
    ctx.emit(_REDUCERS[node.op_type], [ir_x], {"axes": tuple(axes), "keepdims": keep},
             out=ctx.output(), nhwc=nhwc)


@converter("ArgMax", "ArgMin")
def convert_arg(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    rank = len(ctx.onnx_shape(x))
    (axis,) = _rank_axes(ctx, [int(ctx.attr("axis", 0))], rank)
    keep = bool(ctx.attr("keepdims", 1))
    ir_x, (ir_axis,), nhwc = _layout(ctx, x, [axis], keep)
    attrs = {"axis": ir_axis, "keepdims": keep, "output_type": "int64",
             "select_last_index": bool(ctx.attr("select_last_index", 0))}
    ctx.emit(node.op_type, [ir_x], attrs, out=ctx.output(), nhwc=nhwc)


@converter("CumSum")
def convert_cumsum(ctx: Context, node: NodeProto) -> None:
    x = ctx.need(0)
    axis_data = ctx.const_array(ctx.need(1)).reshape(-1)
    if axis_data.size != 1:
        raise ctx.malformed(f"CumSum axis has {axis_data.size} elements")
    (axis,) = _rank_axes(ctx, [int(axis_data[0])], len(ctx.onnx_shape(x)))
    ir_x, (ir_axis,), nhwc = _layout(ctx, x, [axis], True)
    attrs = {"axis": ir_axis, "exclusive": bool(ctx.attr("exclusive", 0)),
             "reverse": bool(ctx.attr("reverse", 0))}
    ctx.emit("CumSum", [ir_x], attrs, out=ctx.output(), nhwc=nhwc)


@converter("LpNormalization")
def convert_lp_normalization(ctx: Context, node: NodeProto) -> None:
    p = int(ctx.attr("p", 2))
    if p != 2:
        raise ctx.fail(f"LpNormalization with p={p} is not supported (only p=2)")
    x = ctx.need(0)
    rank = len(ctx.onnx_shape(x))
    (axis,) = _rank_axes(ctx, [int(ctx.attr("axis", -1))], rank)
    out = ctx.output()
    # why the smallest normal float32: onnxruntime writes 0 where the norm is 0 (x is 0 there)
    attrs = {"epsilon": float(np.finfo(np.float32).tiny)}
    if ctx.is_nhwc(x) and nchw_axis_to_nhwc(axis) == 3:
        ctx.emit("L2Norm", [ctx.nhwc(x)], attrs, out=out, nhwc=True)
        return
    xo = ctx.onnx_order(x)
    if axis == rank - 1:
        ctx.emit("L2Norm", [xo], attrs, out=out)
        return
    perm = tuple(i for i in range(rank) if i != axis) + (axis,)
    t = ctx.emit("Transpose", [xo], {"perm": perm}, hint=x + ":axis_last")
    n = ctx.emit("L2Norm", [t], attrs, hint=out + ":axis_last")
    ctx.emit("Transpose", [n], {"perm": tuple(int(i) for i in np.argsort(perm))}, out=out)


# -- Resize ---------------------------------------------------------------------------------
_TFLITE_FORMS = ((False, False), (True, False), (False, True))  # (align_corners, half_pixel)


def _onnx_source(ctx: Context, mode: str, in_size: int, out_size: int,
                 scale: float) -> np.ndarray:
    """ONNX Resize's source coordinate of every output index (before rounding)."""
    x = np.arange(out_size, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_size > 1 else np.zeros(1)
    if mode == "align_corners":
        return x * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros(1)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    raise ctx.fail(f"Resize with coordinate_transformation_mode {mode!r} is not supported")


def _onnx_nearest(ctx: Context, coords: np.ndarray, rounding: str, in_size: int) -> np.ndarray:
    frac = coords - np.floor(coords)
    if rounding == "round_prefer_floor":
        idx = np.where(frac == 0.5, np.floor(coords), np.round(coords))
    elif rounding == "round_prefer_ceil":
        idx = np.where(frac == 0.5, np.ceil(coords), np.round(coords))
    elif rounding == "floor":
        idx = np.floor(coords)
    elif rounding == "ceil":
        idx = np.ceil(coords)
    else:
        raise ctx.fail(f"Resize with nearest_mode {rounding!r} is not supported")
    return np.clip(idx, 0, in_size - 1).astype(np.int64)


def _resize_form(ctx: Context, mode: str, sizes: Sequence[tuple[int, int, float]]
                 ) -> tuple[bool, bool]:
    """The TFLite (align_corners, half_pixel_centers) that computes exactly what ONNX asks,
    checked on this node's sizes; one error when none does."""
    coord = str(ctx.attr("coordinate_transformation_mode", "half_pixel"))
    for align, half in _TFLITE_FORMS:
        same = True
        for in_size, out_size, scale in sizes:
            src = _onnx_source(ctx, coord, in_size, out_size, scale)
            if mode == "nearest":
                want = _onnx_nearest(ctx, src, str(ctx.attr("nearest_mode",
                                                             "round_prefer_floor")), in_size)
                same &= bool(np.array_equal(want, nearest_indices(in_size, out_size, align,
                                                                  half)))
            else:
                taps = float_taps(in_size, out_size, align, half)
                clamped = np.clip(src, 0, in_size - 1)
                ours = np.clip(taps.lo + taps.w_hi.astype(np.float64), 0, in_size - 1)
                same &= bool(np.allclose(ours, clamped, rtol=0, atol=1e-5))
        if same:
            return align, half
    raise ctx.fail(f"Resize {mode} with coordinate_transformation_mode {coord!r} "
                   f"(nearest_mode {ctx.attr('nearest_mode', 'round_prefer_floor')!r}) is "
                   "not expressible as a TFLite resize for these sizes")


@converter("Resize")
def convert_resize(ctx: Context, node: NodeProto) -> None:
    if ctx.opset < 11:
        raise ctx.fail(f"Resize of opset {ctx.opset} is not supported (opset 11 or later)")
    mode = str(ctx.attr("mode", "nearest"))
    if mode not in ("nearest", "linear"):
        raise ctx.fail(f"Resize mode {mode!r} is not supported (nearest or linear)")
    if int(ctx.attr("antialias", 0)):
        raise ctx.fail("Resize with antialias is not supported")
    if str(ctx.attr("keep_aspect_ratio_policy", "stretch")) != "stretch":
        raise ctx.fail("Resize with a keep_aspect_ratio_policy other than stretch is "
                       "not supported")
    x = ctx.need(0)
    shape = ctx.onnx_shape(x)
    if len(shape) != 4:
        raise ctx.fail(f"Resize of a rank-{len(shape)} tensor is not supported (NCHW only)")
    axes = [int(a) % 4 for a in ctx.attr("axes", [0, 1, 2, 3])]
    if sorted(set(axes)) != sorted(axes) or not {2, 3} <= set(axes):
        raise ctx.fail(f"Resize over axes {ctx.attr('axes')} is not supported (H and W)")
    out_hw, scales = _resize_targets(ctx, shape, axes)
    sizes = [(shape[2], out_hw[0], scales[0]), (shape[3], out_hw[1], scales[1])]
    align, half = _resize_form(ctx, mode, sizes)
    attrs = {"mode": mode, "size": out_hw, "align_corners": align, "half_pixel_centers": half}
    ctx.emit("Resize", [ctx.nhwc(x)], attrs, out=ctx.output(), nhwc=True)


def _per_axis(ctx: Context, name: str, axes: Sequence[int], default: Sequence[float]
              ) -> list[float]:
    """A ``scales`` / ``sizes`` operand (one value per entry of ``axes``) for all 4 axes."""
    values = [float(v) for v in ctx.const_array(name).reshape(-1)]
    if len(values) != len(axes):
        raise ctx.malformed(f"Resize {name!r} has {len(values)} values for axes {list(axes)}")
    full = list(default)
    for axis, v in zip(axes, values, strict=True):
        full[axis] = v
    return full


def _resize_targets(ctx: Context, shape: Sequence[int], axes: Sequence[int]
                    ) -> tuple[tuple[int, int], tuple[float, float]]:
    """(output H and W, the scales ONNX maps coordinates with) from ``scales`` or ``sizes``."""
    scales_name, sizes_name = ctx.input(2), ctx.input(3)
    has = [n is not None and ctx.const_array(n).size > 0 for n in (scales_name, sizes_name)]
    if has[0] == has[1]:
        raise ctx.malformed("Resize needs exactly one of scales and sizes (as constants)")
    if has[1]:
        assert sizes_name is not None
        full = [int(v) for v in _per_axis(ctx, sizes_name, axes, shape)]
        if full[:2] != list(shape[:2]) or min(full[2:]) < 1:
            raise ctx.fail(f"Resize to sizes {full} of {list(shape)}: only H and W may change")
        return (full[2], full[3]), (full[2] / shape[2], full[3] / shape[3])
    assert scales_name is not None
    full_s = _per_axis(ctx, scales_name, axes, [1.0] * 4)
    if full_s[:2] != [1.0, 1.0] or min(full_s[2:]) <= 0:
        raise ctx.fail(f"Resize by scales {full_s}: only H and W may be scaled")
    out = (int(np.floor(shape[2] * full_s[2])), int(np.floor(shape[3] * full_s[3])))
    if min(out) < 1:
        raise ctx.fail(f"Resize by scales {full_s} leaves an empty image")
    return out, (full_s[2], full_s[3])
