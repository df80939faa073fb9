"""Reductions (REDUCE_MAX / REDUCE_MIN / SUM / MEAN, ARG_MAX / ARG_MIN), CUMSUM,
L2_NORMALIZATION, RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR and BATCH_MATMUL.

The types are those TFLite Micro runs: int8 and float32 everywhere; int16 for SUM, MEAN,
RESIZE_NEAREST_NEIGHBOR and BATCH_MATMUL (zero points 0); ARG_MAX / ARG_MIN write int32
(TFLM rejects int64). REDUCE_MAX / REDUCE_MIN keep the input's quantization (TFLM checks it);
L2_NORMALIZATION's int8 output is 1/128 with zero point 0. CUMSUM axes stay short: TFLM sums
inputs scaled by 2**19 in int32, so about 16 full-range values overflow it.
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, i16, like

I32 = DType.INT32


def _axes(*axes: int) -> Spec:
    return const(list(axes), I32)


def _reducer(op: str, name: str, x: Spec, axes: tuple[int, ...], keep: bool, out: Spec) -> Case:
    return Case(op, name, (x, _axes(*axes)), (out,), ("ReducerOptions", {"keep_dims": keep}))


X8 = i8((1, 4, 5, 6), 0.05, -3)
X16 = i16((1, 4, 5, 6), 0.002)

_REDUCE = [
    _reducer("REDUCE_MAX", "int8_hw_keep", X8, (1, 2), True, like(X8, shape=(1, 1, 1, 6))),
    _reducer("REDUCE_MAX", "int8_last_drop", i8((1, 3, 7), 0.1, 5), (-1,), False,
             i8((1, 3), 0.1, 5)),
    _reducer("REDUCE_MAX", "int8_duplicate_axes", i8((1, 3, 7), 0.1, 5), (1, -2), False,
             i8((1, 7), 0.1, 5)),
    _reducer("REDUCE_MAX", "float_batch_axis_keep", f32((1, 4, 5)), (0, 2), True,
             f32((1, 4, 1))),
    _reducer("REDUCE_MAX", "float_all_but_batch", f32((1, 3, 4, 5)), (1, 2, 3), False,
             f32((1,))),
    _reducer("REDUCE_MIN", "int8_channels_drop", X8, (3,), False, like(X8, shape=(1, 4, 5))),
    _reducer("REDUCE_MIN", "float_w_keep", f32((1, 4, 5, 3)), (2,), True, f32((1, 4, 1, 3))),
    _reducer("SUM", "int8_hw_rescale", X8, (1, 2), False, i8((1, 6), 0.3, 4)),
    _reducer("SUM", "int8_saturates", X8, (2,), True, i8((1, 4, 1, 6), 0.02, -10)),
    _reducer("SUM", "int8_all_axes_keep", i8((1, 3, 5), 0.02, 7), (1, 2), True,
             i8((1, 1, 1), 0.25, -2)),
    _reducer("SUM", "int16_hw", X16, (1, 2), False, i16((1, 6), 0.03)),
    _reducer("SUM", "int16_last_keep", i16((1, 6, 9), 0.001), (-1,), True, i16((1, 6, 1), 0.004)),
    _reducer("SUM", "float_axis1", f32((1, 4, 5)), (1,), False, f32((1, 5))),
    _reducer("MEAN", "int16_hw_keep", X16, (1, 2), True, i16((1, 1, 1, 6), 0.0008)),
    _reducer("MEAN", "int16_channels", X16, (3,), False, i16((1, 4, 5), 0.002)),
    _reducer("MEAN", "int16_three_axes", i16((1, 3, 5, 7), 0.003), (1, 2, 3), False,
             i16((1,), 0.0011)),
    # Keras LayerNormalization as the converter writes it: MEAN over [0, 1, 2] of [1, C, 1, 1]
    _reducer("MEAN", "float_layernorm_axes012", f32((1, 64, 1, 1)), (0, 1, 2), True,
             f32((1, 1, 1, 1))),
    # why a leading 1 in the dropped-axis cases: the oracle stacks samples along axis 0
    _reducer("MEAN", "float_batch_axis_drop", f32((1, 1, 4, 5)), (0, 2), False, f32((1, 5))),
    _reducer("MEAN", "int8_layernorm_axes012", i8((1, 64, 1, 1), 0.04, -7), (0, 1, 2), True,
             i8((1, 1, 1, 1), 0.01, 3)),
    _reducer("MEAN", "int8_batch_and_last_drop", i8((1, 1, 6, 9), 0.05, 4), (0, -1), False,
             i8((1, 6), 0.03, -2)),
    _reducer("MEAN", "int8_all_axes_keep", i8((1, 3, 4, 5), 0.02, -1), (0, 1, 2, 3), True,
             i8((1, 1, 1, 1), 0.005, 0)),
    _reducer("MEAN", "int16_layernorm_axes012", i16((1, 64, 1, 1), 0.002), (0, 1, 2), True,
             i16((1, 1, 1, 1), 0.0007)),
    _reducer("MEAN", "int16_batch_axis_drop", i16((1, 1, 5, 6), 0.003), (0, 2), False,
             i16((1, 6), 0.002)),
    _reducer("SUM", "int8_batch_axis_keep", i8((1, 4, 5), 0.02, 3), (0, 1), True,
             i8((1, 1, 5), 0.1, -4)),
    _reducer("REDUCE_MIN", "int8_batch_axis_drop", i8((1, 1, 4, 6), 0.05, -3), (0, 3), False,
             i8((1, 4), 0.05, -3)),
]


def _arg(op: str, name: str, x: Spec, axis: int, out_shape: tuple[int, ...]) -> Case:
    options = "ArgMaxOptions" if op == "ARG_MAX" else "ArgMinOptions"
    return Case(op, name, (x, const([axis], I32)), (Spec(out_shape, I32),),
                (options, {"output_type": 2}))  # 2: tflite.TensorType.INT32


_ARG = [
    _arg("ARG_MAX", "int8_last", X8, 3, (1, 4, 5)),
    _arg("ARG_MAX", "int8_middle_ties", i8((1, 6, 4), 0.1, 0, values=(-2, 2)), 1, (1, 4)),
    _arg("ARG_MAX", "float_axis1", f32((1, 7, 3)), 1, (1, 3)),
    _arg("ARG_MIN", "int8_negative_axis_ties", i8((1, 3, 8), 0.1, 0, values=(0, 3)), -1,
         (1, 3)),
    _arg("ARG_MIN", "float_last", f32((1, 2, 3, 9)), 3, (1, 2, 3)),
]


def _cumsum(name: str, x: Spec, axis: int, exclusive: bool, reverse: bool,
            out: Spec) -> Case:
    return Case("CUMSUM", name, (x, const(axis, I32)), (out,),
                ("CumsumOptions", {"exclusive": exclusive, "reverse": reverse}))


C8 = i8((1, 4, 6), 0.05, 3)
_CUMSUM = [
    _cumsum("int8_axis1", C8, 1, False, False, i8((1, 4, 6), 0.12, -5)),
    _cumsum("int8_last_exclusive", C8, -1, True, False, i8((1, 4, 6), 0.2, 2)),
    _cumsum("int8_reverse", C8, 2, False, True, i8((1, 4, 6), 0.2, 0)),
    _cumsum("int8_exclusive_reverse_saturates", C8, 1, True, True, i8((1, 4, 6), 0.04, 10)),
    _cumsum("int8_batch_axis", C8, 0, False, False, i8((1, 4, 6), 0.07, -1)),
    _cumsum("float_axis1", f32((1, 5, 3)), 1, False, False, f32((1, 5, 3))),
    _cumsum("float_exclusive_reverse", f32((1, 3, 6)), -1, True, True, f32((1, 3, 6))),
]

L2_OUT = QuantParams.per_tensor(1 / 128, 0)


def _l2(name: str, x: Spec) -> Case:
    out = Spec(x.shape, DType.INT8, L2_OUT) if x.dtype is DType.INT8 else f32(x.shape)
    return Case("L2_NORMALIZATION", name, (x,), (out,),
                ("L2NormOptions", {"fused_activation_function": 0}))


_L2 = [
    _l2("int8_rank3", i8((1, 4, 8), 0.05, -4)),
    _l2("int8_rank2_long", i8((1, 40), 0.02, 6)),
    _l2("int8_tiny_norms", i8((1, 6, 3), 0.1, 1, values=(0, 2))),
    _l2("int8_rank4", i8((1, 2, 3, 5), 0.03, 0)),
    _l2("float_rank3", f32((1, 3, 5))),
]


def _resize(op: str, name: str, x: Spec, size: tuple[int, int], align: bool = False,
            half: bool = False) -> Case:
    table = ("ResizeNearestNeighborOptions" if op == "RESIZE_NEAREST_NEIGHBOR"
             else "ResizeBilinearOptions")
    out = like(x, shape=(x.shape[0], size[0], size[1], x.shape[3]))
    return Case(op, name, (x, const(list(size), I32)), (out,),
                (table, {"align_corners": align, "half_pixel_centers": half}))


R8 = i8((1, 4, 5, 3), 0.05, 2)
NN, BL = "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"
_RESIZE = [
    _resize(NN, "int8_up2", R8, (8, 10)),
    _resize(NN, "int8_down_align", R8, (3, 2), align=True),
    _resize(NN, "int8_odd_half_pixel", R8, (7, 3), half=True),
    _resize(NN, "int16_up_align", i16((1, 3, 4, 2), 0.001), (7, 5), align=True),
    _resize(NN, "float_half_pixel", f32((1, 5, 3, 2)), (8, 4), half=True),
    _resize(BL, "int8_up2", R8, (8, 10)),
    _resize(BL, "int8_align", i8((1, 3, 4, 2), 0.1, -7), (7, 5), align=True),
    _resize(BL, "int8_half_pixel_odd", R8, (6, 9), half=True),
    _resize(BL, "int8_down_half_pixel", i8((1, 6, 7, 2), 0.1, 0), (4, 3), half=True),
    _resize(BL, "float_up", f32((1, 3, 4, 2)), (5, 7)),
    _resize(BL, "float_align", f32((1, 3, 4, 2)), (5, 7), align=True),
    _resize(BL, "float_half_pixel_down", f32((1, 6, 5, 2)), (4, 3), half=True),
]


def _bmm(name: str, a: Spec, b: Spec, out: Spec, adj_x: bool = False,
         adj_y: bool = False) -> Case:
    return Case("BATCH_MATMUL", name, (a, b), (out,),
                ("BatchMatMulOptions", {"adj_x": adj_x, "adj_y": adj_y}))


def _const_i8(shape: tuple[int, ...], scale: float, seed: int) -> Spec:
    data = np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)
    return const(data, DType.INT8, QuantParams.per_tensor(scale, 0))


_BMM = [
    _bmm("int8_rank3", i8((1, 4, 9), 0.05, 3), i8((1, 9, 5), 0.04, -2), i8((1, 4, 5), 0.7, 1)),
    _bmm("int8_adj_x_adj_y", i8((1, 9, 4), 0.05, -1), i8((1, 5, 9), 0.04, 4),
         i8((1, 4, 5), 0.7, -6), adj_x=True, adj_y=True),
    _bmm("int8_broadcast_rank4_by_rank3", i8((1, 2, 3, 6), 0.05, 0), i8((1, 6, 4), 0.05, 2),
         i8((1, 2, 3, 4), 0.5, 0)),
    _bmm("int8_const_rhs_rank2", i8((1, 3, 8), 0.05, 5), _const_i8((8, 6), 0.02, 1),
         i8((1, 3, 6), 0.25, -3)),
    _bmm("int8_saturates", i8((1, 2, 16), 0.1, 0), i8((1, 16, 3), 0.1, 0),
         i8((1, 2, 3), 0.05, 0)),
    _bmm("int16_rank3", i16((1, 3, 7), 0.001), i16((1, 7, 4), 0.002), i16((1, 3, 4), 0.2)),
    _bmm("int16_adj_y", i16((1, 2, 5), 0.001), i16((1, 3, 5), 0.001), i16((1, 2, 3), 0.1),
         adj_y=True),
    _bmm("float_rank3", f32((1, 4, 6)), f32((1, 6, 3)), f32((1, 4, 3))),
    _bmm("float_adj_x_broadcast", f32((1, 2, 5, 3)), f32((1, 5, 4)), f32((1, 2, 3, 4)),
         adj_x=True),
    # a spectrogram's mel filter bank: one frame of bins times a constant [bins, mels] matrix
    _bmm("float_rank4_by_const_rank2", f32((1, 1, 2, 20), (0.0, 4.0)),
         const(np.random.default_rng(3).uniform(0, 1, (20, 7)).astype(np.float32)),
         f32((1, 1, 2, 7))),
]

CASES: list[Case] = [*_REDUCE, *_ARG, *_CUMSUM, *_L2, *_RESIZE, *_BMM]
