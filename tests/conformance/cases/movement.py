"""Data movement: slices, splits, (un)packing, gather, space <-> depth, concatenation, pad.

The types are those TFLite Micro runs for each operator: int8, int16 (zero point 0), int32
and float32 for the slices, splits, PACK / UNPACK, CONCATENATION and PAD; float32 and int8
only for GATHER, SPACE_TO_DEPTH and DEPTH_TO_SPACE; no int32 EXPAND_DIMS or TRANSPOSE.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.ir import DType
from tests.conformance.spec import Case, Spec, const, f32, i8, i16, like


def i32(shape: Sequence[int], values: tuple[float, float] = (-100000, 100000)) -> Spec:
    return Spec(tuple(shape), DType.INT32, values=values)


def ints(values: Sequence[int] | Sequence[Sequence[int]], dtype: DType = DType.INT32) -> Spec:
    return const(values, dtype)


def _strided(name: str, x: Spec, out: Spec, begin: Sequence[int], end: Sequence[int],
             strides: Sequence[int], **masks: int) -> Case:
    return Case("STRIDED_SLICE", name, (x, ints(begin), ints(end), ints(strides)), (out,),
                ("StridedSliceOptions", dict(masks)))


X8 = i8((1, 4, 6, 3), 0.05, -3)
X16 = i16((1, 4, 6, 3), 0.002)
XF = f32((1, 4, 6, 3))
XI = i32((1, 4, 6, 3))

STRIDED_SLICE = [
    _strided("float32_steps", XF, f32((1, 2, 3, 3)), [0, 1, 0, 0], [1, 3, 6, 3], [1, 1, 2, 1]),
    _strided("int8_reverse_width_masks", X8, like(X8, shape=(1, 4, 3, 3)), [0, 0, -1, 2],
             [0, 0, 0, 0], [1, 1, -2, -1], begin_mask=0b0011, end_mask=0b1011),
    _strided("int16_shrink_height", X16, like(X16, shape=(1, 6, 2)), [0, 2, 0, 1],
             [1, 3, 6, 3], [1, 1, 1, 1], shrink_axis_mask=0b0010),
    _strided("int32_negative_and_clamped", XI, i32((1, 2, 5, 3)), [0, -3, -5, -100],
             [1, -1, 100, 100], [1, 1, 1, 1]),
    _strided("float32_rank2_reverse_all", f32((1, 10)), f32((1, 5)), [0, 9], [1, 0],
             [1, -2]),
    _strided("int8_odd_shape_stride_past_end", i8((1, 7, 5), 0.1, 4),
             i8((1, 2, 1), 0.1, 4), [0, 1, 3], [1, 7, 4], [1, 3, 7]),
    _strided("int16_shrink_two_axes_negative_index", X16, like(X16, shape=(1, 6)),
             [0, -1, 0, -2], [1, 0, 6, 0], [1, 1, 1, 1], shrink_axis_mask=0b1010),
    _strided("int8_reverse_everything", X8, like(X8, shape=(1, 4, 6, 3)), [0, 0, 0, 0],
             [0, 0, 0, 0], [1, -1, -1, -1], begin_mask=0b1111, end_mask=0b1111),
]

SLICE = [
    Case("SLICE", "float32_rest", (XF, ints([0, 1, 2, 0]), ints([1, 2, -1, 3])),
         (f32((1, 2, 4, 3)),)),
    Case("SLICE", "int8_int64_operands",
         (X8, ints([0, 3, 1, 1], DType.INT64), ints([1, 1, 4, 2], DType.INT64)),
         (like(X8, shape=(1, 1, 4, 2)),)),
    Case("SLICE", "int16_rank2", (i16((1, 9), 0.01), ints([0, 4]), ints([-1, 5])),
         (i16((1, 5), 0.01),)),
    Case("SLICE", "int32_rank5", (i32((1, 2, 3, 2, 4)), ints([0, 1, 1, 0, 1]),
                                  ints([1, 1, 2, 2, 2])), (i32((1, 1, 2, 2, 2)),)),
]


def _split(name: str, x: Spec, axis: int, outs: Sequence[Spec]) -> Case:
    return Case("SPLIT", name, (ints([axis]), x), tuple(outs),
                ("SplitOptions", {"num_splits": len(outs)}))


def _split_v(name: str, x: Spec, sizes: Sequence[int], axis: int,
             outs: Sequence[Spec]) -> Case:
    return Case("SPLIT_V", name, (x, ints(sizes), ints([axis])), tuple(outs),
                ("SplitVOptions", {"num_splits": len(outs)}))


SPLIT = [
    _split("float32_channels", XF, 3, [f32((1, 4, 6, 1))] * 3),
    _split("int8_negative_axis", X8, -2, [like(X8, shape=(1, 4, 3, 3))] * 2),
    _split("int16_height", X16, 1, [like(X16, shape=(1, 1, 6, 3))] * 4),
    _split("int32_width", XI, 2, [i32((1, 4, 2, 3))] * 3),
]

SPLIT_V = [
    _split_v("float32_inferred_size", f32((1, 6, 5)), [1, -1, 2], 1,
             [f32((1, 1, 5)), f32((1, 3, 5)), f32((1, 2, 5))]),
    _split_v("int8_width", X8, [3, 1, 2], 2,
             [like(X8, shape=(1, 4, w, 3)) for w in (3, 1, 2)]),
    _split_v("int16_channels", X16, [2, 1], -1,
             [like(X16, shape=(1, 4, 6, 2)), like(X16, shape=(1, 4, 6, 1))]),
    _split_v("int32_height", XI, [1, 3], 1, [i32((1, 1, 6, 3)), i32((1, 3, 6, 3))]),
]

UNPACK = [
    Case("UNPACK", "float32_axis1", (f32((1, 3, 5)),), (f32((1, 5)),) * 3,
         ("UnpackOptions", {"num": 3, "axis": 1})),
    Case("UNPACK", "int8_last_axis", (i8((1, 4, 2), 0.1, 7),), (i8((1, 4), 0.1, 7),) * 2,
         ("UnpackOptions", {"num": 2, "axis": -1})),
    Case("UNPACK", "int16_middle", (i16((1, 2, 3, 2), 0.01),), (i16((1, 2, 2), 0.01),) * 3,
         ("UnpackOptions", {"num": 3, "axis": 2})),
    Case("UNPACK", "int32_axis1", (i32((1, 2, 3)),), (i32((1, 3)),) * 2,
         ("UnpackOptions", {"num": 2, "axis": 1})),
]

PACK = [
    Case("PACK", "float32_axis1", (f32((1, 5)), f32((1, 5))), (f32((1, 2, 5)),),
         ("PackOptions", {"values_count": 2, "axis": 1})),
    Case("PACK", "int8_last_axis_three", (i8((1, 3), 0.1, 1),) * 3, (i8((1, 3, 3), 0.1, 1),),
         ("PackOptions", {"values_count": 3, "axis": 2})),
    Case("PACK", "int8_other_quantization_copies_bytes",
         (i8((1, 2, 3), 0.1, 1), i8((1, 2, 3), 0.3, -5)), (i8((1, 2, 2, 3), 0.2, 0),),
         ("PackOptions", {"values_count": 2, "axis": 2})),
    Case("PACK", "int8_with_constant",
         (i8((1, 4), 0.1, 1), const([[1, -2, 3, 127]], DType.INT8, X8.quant)),
         (i8((1, 2, 4), 0.1, 1),), ("PackOptions", {"values_count": 2, "axis": 1})),
    Case("PACK", "int16_negative_axis", (i16((1, 2, 3), 0.01),) * 2, (i16((1, 2, 3, 2), 0.01),),
         ("PackOptions", {"values_count": 2, "axis": -1})),
    Case("PACK", "int32_axis1", (i32((1, 4)),) * 2, (i32((1, 2, 4)),),
         ("PackOptions", {"values_count": 2, "axis": 1})),
]

EXPAND_DIMS = [
    Case("EXPAND_DIMS", "float32_axis1", (XF, ints([1])), (f32((1, 1, 4, 6, 3)),)),
    Case("EXPAND_DIMS", "int8_negative_axis", (X8, ints([-1])), (like(X8, shape=(1, 4, 6, 3, 1)),)),
    Case("EXPAND_DIMS", "int16_axis2", (i16((1, 5), 0.01), ints([2])), (i16((1, 5, 1), 0.01),)),
]


def _gather(name: str, x: Spec, idx: Spec, out: Spec, axis: int, batch_dims: int = 0) -> Case:
    return Case("GATHER", name, (x, idx), (out,),
                ("GatherOptions", {"axis": axis, "batch_dims": batch_dims}))


GATHER = [
    _gather("float32_constant_indices", XF, ints([0, 2, 1]), f32((1, 4, 3, 3)), 2),
    _gather("int8_channels_repeated", X8, ints([[2, 2], [0, 1]]), like(X8, shape=(1, 4, 6, 2, 2)),
            3),
    _gather("int8_negative_axis", X8, ints([3, 0]),
            like(X8, shape=(1, 2, 6, 3)), -3),
    _gather("float32_embedding_table", const([[float(r * 4 + c) for c in range(4)]
                                              for r in range(10)], DType.FLOAT32),
            i32((1, 6), (0, 9)), f32((1, 6, 4)), 0),
    _gather("int8_embedding_table", const([[r * 10 - c for c in range(3)] for r in range(8)],
                                          DType.INT8, X8.quant),
            i32((1, 2, 3), (0, 7)), like(X8, shape=(1, 2, 3, 3)), 0),
    _gather("int8_variable_batch_dims", i8((1, 5, 4), 0.1, 2), i32((1, 3), (0, 4)),
            i8((1, 3, 4), 0.1, 2), 1, 1),
    _gather("float32_variable_both", f32((1, 5, 4)), i32((1, 3), (0, 4)), f32((1, 1, 3, 4)), 1),
]

SPACE_TO_DEPTH = [
    Case("SPACE_TO_DEPTH", "float32_block2", (XF,), (f32((1, 2, 3, 12)),),
         ("SpaceToDepthOptions", {"block_size": 2})),
    Case("SPACE_TO_DEPTH", "int8_block3", (i8((1, 6, 3, 2), 0.1, -1),),
         (i8((1, 2, 1, 18), 0.1, -1),), ("SpaceToDepthOptions", {"block_size": 3})),
]

DEPTH_TO_SPACE = [
    Case("DEPTH_TO_SPACE", "float32_block2", (f32((1, 2, 3, 8)),), (f32((1, 4, 6, 2)),),
         ("DepthToSpaceOptions", {"block_size": 2})),
    Case("DEPTH_TO_SPACE", "int8_block2_odd", (i8((1, 3, 1, 12), 0.1, 3),),
         (i8((1, 6, 2, 3), 0.1, 3),), ("DepthToSpaceOptions", {"block_size": 2})),
]


def _concat(name: str, xs: Sequence[Spec], out: Spec, axis: int) -> Case:
    return Case("CONCATENATION", name, tuple(xs), (out,),
                ("ConcatenationOptions", {"axis": axis, "fused_activation_function": 0}))


CONCATENATION = [
    _concat("int16_height", [X16, like(X16, shape=(1, 2, 6, 3))], like(X16, shape=(1, 6, 6, 3)),
            1),
    _concat("int16_channels_three", [X16, like(X16, shape=(1, 4, 6, 1)), X16],
            like(X16, shape=(1, 4, 6, 7)), -1),
    _concat("int16_other_scales_copy_bytes", [i16((1, 3, 2), 0.01), i16((1, 3, 2), 0.05)],
            i16((1, 3, 4), 0.02), 2),
    _concat("int32_width", [XI, i32((1, 4, 1, 3))], i32((1, 4, 7, 3)), 2),
    _concat("int8_odd_width", [i8((1, 3, 5, 2), 0.1, 1), i8((1, 3, 2, 2), 0.1, 1)],
            i8((1, 3, 7, 2), 0.1, 1), 2),
    _concat("int8_with_constant", [X8, const(np.arange(-36, 36).reshape(1, 4, 6, 3), DType.INT8,
                                             X8.quant)], like(X8, shape=(1, 8, 6, 3)), 1),
    _concat("float32_rank2", [f32((1, 3)), f32((1, 5))], f32((1, 8)), 1),
]

PAD = [
    Case("PAD", "int16", (X16, ints([[0, 0], [1, 2], [0, 1], [2, 0]])),
         (like(X16, shape=(1, 7, 7, 5)),)),
    Case("PAD", "int32", (XI, ints([[0, 0], [1, 0], [0, 0], [1, 1]])), (i32((1, 5, 6, 5)),)),
    Case("PADV2", "int16_value", (X16, ints([[0, 0], [0, 1], [2, 0], [0, 0]]),
                                  const([-1234], DType.INT16, X16.quant)),
         (like(X16, shape=(1, 5, 8, 3)),)),
]

TRANSPOSE = [
    Case("TRANSPOSE", "int16_nchw", (X16, ints([0, 3, 1, 2])), (like(X16, shape=(1, 3, 4, 6)),)),
    Case("TRANSPOSE", "float32_rank5", (f32((1, 2, 3, 4, 5)), ints([0, 4, 2, 1, 3])),
         (f32((1, 5, 3, 2, 4)),)),
]

RESHAPE = [
    Case("RESHAPE", "int16", (X16, ints([1, 24, 3])), (like(X16, shape=(1, 24, 3)),)),
]

CASES: list[Case] = [*STRIDED_SLICE, *SLICE, *SPLIT, *SPLIT_V, *UNPACK, *PACK, *EXPAND_DIMS,
                     *GATHER, *SPACE_TO_DEPTH, *DEPTH_TO_SPACE, *CONCATENATION, *PAD,
                     *TRANSPOSE, *RESHAPE]
