"""float32 cases with +-inf and NaN constants: legal data that TFLite Micro computes with.

A converter writes ``MINIMUM(x, +inf)`` for a clip without an upper bound (pyopen_wakeword's
melspectrogram model); ``-inf`` is the usual mask value. What TFLite Micro gives:

* MAXIMUM / MINIMUM are ``a > b ? a : b`` / ``a < b ? a : b``: an infinite bound passes x
  (or gives the bound), and a NaN operand selects the *second* operand;
* ADD / SUB / MUL clamp to the fused activation's range, which is +-FLT_MAX without one
  (``CalculateActivationRange``): ``x + inf`` is FLT_MAX, not inf; NaN passes the clamp;
* FULLY_CONNECTED and CONV_2D add an infinite product into a sum (then the same clamp).
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType
from tests.conformance.spec import Case, Spec, const, f32

INF, NAN = np.inf, np.nan
NONE, RELU = 0, 1
SAME = 0


def _c(values: list[float], shape: tuple[int, ...] | None = None) -> Spec:
    arr = np.asarray(values, np.float32)
    return const(arr.reshape(shape) if shape else arr, DType.FLOAT32)


def _conv(name: str, shape: tuple[int, ...], co: int, special: dict[tuple[int, ...], float],
          depthwise: bool = False) -> Case:
    """A 3x3 SAME convolution over ``shape`` whose weights hold ``special`` values."""
    ci = shape[3]
    w_shape = (1, 3, 3, co) if depthwise else (co, 3, 3, ci)
    w = np.linspace(-0.5, 0.5, int(np.prod(w_shape))).reshape(w_shape).astype(np.float32)
    for index, value in special.items():
        w[index] = value
    op, table = ("DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions") if depthwise else \
        ("CONV_2D", "Conv2DOptions")
    options = {"padding": SAME, "stride_w": 1, "stride_h": 1, "dilation_w_factor": 1,
               "dilation_h_factor": 1, "fused_activation_function": NONE}
    if depthwise:
        options["depth_multiplier"] = co // ci
    return Case(op, name, (f32(shape), const(w, DType.FLOAT32), _c([0.25] * co)),
                (f32((*shape[:3], co)),), (table, options))


X = f32((1, 2, 3, 4))
ROW = (1, 1, 1, 4)  # a constant broadcast along the last axis: each bound once
BOUNDS = [INF, -INF, NAN, 0.5]

CASES = [
    Case("MINIMUM", "float32_const_plus_inf", (X, _c([INF])), (f32(X.shape),)),
    Case("MINIMUM", "float32_const_inf_nan_row", (X, _c(BOUNDS, ROW)), (f32(X.shape),)),
    Case("MINIMUM", "float32_const_first_inf_nan_row", (_c(BOUNDS, ROW), X), (f32(X.shape),)),
    Case("MAXIMUM", "float32_const_minus_inf", (X, _c([-INF])), (f32(X.shape),)),
    Case("MAXIMUM", "float32_const_inf_nan_row", (X, _c(BOUNDS, ROW)), (f32(X.shape),)),
    Case("MAXIMUM", "float32_const_first_inf_nan_row", (_c(BOUNDS, ROW), X), (f32(X.shape),)),
    Case("ADD", "float32_const_plus_inf", (X, _c([INF])), (f32(X.shape),),
         ("AddOptions", {"fused_activation_function": NONE})),
    Case("ADD", "float32_const_inf_nan_row_relu", (X, _c(BOUNDS, ROW)), (f32(X.shape),),
         ("AddOptions", {"fused_activation_function": RELU})),
    Case("ADD", "float32_const_inf_nan_row", (X, _c(BOUNDS, ROW)), (f32(X.shape),),
         ("AddOptions", {"fused_activation_function": NONE})),
    Case("SUB", "float32_const_inf_nan_row", (X, _c(BOUNDS, ROW)), (f32(X.shape),),
         ("SubOptions", {"fused_activation_function": NONE})),
    Case("MUL", "float32_const_inf_nan_row", (X, _c(BOUNDS, ROW)), (f32(X.shape),),
         ("MulOptions", {"fused_activation_function": NONE})),
    Case("FULLY_CONNECTED", "float32_inf_weight",
         (f32((1, 6)), _c([INF, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 0, -INF, 1, 0, 0, 0], (3, 6)),
          _c([0.0, INF, NAN])), (f32((1, 3)),),
         ("FullyConnectedOptions", {"fused_activation_function": NONE})),
    Case("BATCH_MATMUL", "float32_const_rhs_inf_nan",
         (f32((1, 3, 4)), _c([1, 0, INF, 0, 2, 0, 0, -INF, 0, 0, NAN, 1], (4, 3))),
         (f32((1, 3, 3)),), ("BatchMatMulOptions", {"adj_x": False, "adj_y": False})),
    # 3x3 filters with non-finite corner taps: TFLite Micro leaves a tap that falls on the
    # padding out of the sum, so the border outputs stay finite (0 * inf would be NaN), and
    # a direct sum adds an infinite product in where a Winograd transform would mix it
    _conv("float32_3x3_same_inf_nan_corners", (1, 6, 6, 2), 2, {(0, 0, 0, 0): INF,
                                                                 (1, 2, 2, 1): NAN}),
    # 16 input channels: the host's default for this shape is a Winograd kernel
    _conv("float32_3x3_same_16ch_inf_corners", (1, 5, 5, 16), 4, {(0, 0, 0, 3): INF,
                                                                   (2, 2, 2, 7): -INF}),
    _conv("float32_3x3_same_depthwise_inf_corner", (1, 5, 5, 3), 3, {(0, 0, 2, 1): INF},
          depthwise=True),
]
