"""Cases that tell a multiplier taken from float32 scale arithmetic from one taken in double.

The installed TFLite Micro widens the float32 scales to double before it multiplies and
divides them (``GetQuantizedConvolutionMultipler``, ``PopulateConvolutionQuantizationParams``,
``PrepareSvdf``, ``HardSwishPrepare``), although parts of its source write the products on
floats. A float32 product is off by up to half a float32 ulp, which moves the 31-bit
multiplier by tens of units: invisible on random data (a value must sit within about 1e-7 of
a rounding boundary), so each case here builds the boundary in.

Dense-type cases (``_boundary``): one input value, weights all one, and 256 output channels
whose biases make channel ``c`` see the accumulator ``acc`` exactly when the input is the
``c``-th value of its range; every sample then has one output on the boundary. The scales and
``acc`` were found by ``python -m tests.conformance.cases.multipliers`` (a seeded random
search, below), which also shows the two outputs; the import re-checks cheaply that the
float32 and double multipliers differ, so a case cannot silently stop discriminating.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier
from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, i8, i16

LANES = 256  # output channels: one per input value of an int8 range


def float32_multiplier(sx: float, sw: float, so: float) -> tuple[int, int]:
    """The multiplier of ``sx * sw / so`` with the product in float32 (the quotient in
    double), as edgenn took it for per-tensor FullyConnected weights before."""
    return quantize_multiplier(float(np.float32(sx) * np.float32(sw)) / float(np.float32(so)))


def double_multiplier(sx: float, sw: float, so: float) -> tuple[int, int]:
    """The multiplier as the installed TFLite Micro takes it: every scale widened first."""
    return quantize_multiplier(float(np.float32(sx)) * float(np.float32(sw))
                               / float(np.float32(so)))


def _discriminating(sx: float, sw: float, so: float, acc: int) -> None:
    m32, m64 = float32_multiplier(sx, sw, so), double_multiplier(sx, sw, so)
    y32 = int(multiply_by_quantized_multiplier(acc, *m32))
    y64 = int(multiply_by_quantized_multiplier(acc, *m64))
    if y32 == y64:
        raise ValueError(f"scales {sx}, {sw}, {so} with accumulator {acc} do not tell the "
                         f"float32 multiplier {m32} from the double one {m64}")


def _boundary(op: str, name: str, x: Spec, sw: float, out: Spec, acc: int,
              bias: DType = DType.INT32, per_channel: bool = False) -> Case:
    """``op`` over one input value with ``LANES`` outputs; channel ``c``'s accumulator is
    ``acc`` when the input is ``lo + c`` (``lo`` the low end of ``x``'s value range)."""
    assert x.quant is not None and out.quant is not None and x.values is not None
    _discriminating(x.quant.s, sw, out.quant.s, acc)
    lo = int(x.values[0])
    b = acc - (lo + np.arange(LANES, dtype=np.int64) - x.quant.zp)
    ones = np.ones(LANES, np.int8)
    if per_channel:
        wq = QuantParams(np.full(LANES, sw, np.float32), np.zeros(LANES, np.int64),
                         3 if op == "DEPTHWISE_CONV_2D" else 0)
    else:
        wq = QuantParams.per_tensor(sw)
    bq = QuantParams.per_tensor(float(np.float32(x.quant.s) * np.float32(sw)))
    biases = const(b, bias, bq)
    if op == "FULLY_CONNECTED":
        w = const(ones.reshape(LANES, 1), DType.INT8, wq)
        opts: tuple[str, dict[str, object]] = (
            "FullyConnectedOptions", {"fused_activation_function": 0})
    elif op == "CONV_2D":
        w = const(ones.reshape(LANES, 1, 1, 1), DType.INT8, wq)
        opts = ("Conv2DOptions", {"padding": 1, "stride_w": 1, "stride_h": 1,
                                  "dilation_w_factor": 1, "dilation_h_factor": 1,
                                  "fused_activation_function": 0})
    else:
        w = const(ones.reshape(1, 1, 1, LANES), DType.INT8, wq)
        opts = ("DepthwiseConv2DOptions", {"padding": 1, "stride_w": 1, "stride_h": 1,
                                           "depth_multiplier": LANES, "dilation_w_factor": 1,
                                           "dilation_h_factor": 1,
                                           "fused_activation_function": 0})
    return Case(op, name, (x, w, biases), (out,), opts)


# found by _search_dense below (seeds 1 and 2)
S8 = (0.012480320408940315, 0.015563235618174076, 0.29216450452804565, 134624)
S16 = (0.0003354509244672954, 0.007372840773314238, 0.0008328031399287283, 5137955)
X8 = i8((1, 1), S8[0], 0, (-128, 127))
X16 = i16((1, 1), S16[0], 0, (-128, 127))
X8_4D = i8((1, 1, 1, 1), S8[0], 0, (-128, 127))

CASES: list[Case] = [
    _boundary("FULLY_CONNECTED", "int8_per_tensor_multiplier_boundary", X8, S8[1],
              i8((1, LANES), S8[2], 0), S8[3]),
    _boundary("FULLY_CONNECTED", "int8_per_channel_multiplier_boundary", X8, S8[1],
              i8((1, LANES), S8[2], 0), S8[3], per_channel=True),
    _boundary("FULLY_CONNECTED", "int16_per_tensor_multiplier_boundary", X16, S16[1],
              i16((1, LANES), S16[2]), S16[3]),
    _boundary("CONV_2D", "int8_per_tensor_multiplier_boundary", X8_4D, S8[1],
              i8((1, 1, 1, LANES), S8[2], 0), S8[3]),
    _boundary("DEPTHWISE_CONV_2D", "int8_per_channel_multiplier_boundary", X8_4D, S8[1],
              i8((1, 1, 1, LANES), S8[2], 0), S8[3], per_channel=True),
]


# -- SVDF: the output stage's multiplier state_scale * time_scale / out_scale ------------------
# One input, feature weights all one and a state scale of in_scale / 128 (the feature
# multiplier is exactly 1: the state is x - zp), one memory slot with time weights all one:
# unit u's accumulator is (x - zp) + bias[u], the dense construction above.
SV = (0.017708424478769302, 3.1312945793615654e-05, 0.04105735197663307, 478617345)


def _svdf_boundary() -> Case:
    sx, wt_s, so, acc = SV
    state_s = float(np.float32(sx) / np.float32(128.0))  # exact: a power-of-two quotient
    if float32_multiplier(state_s, wt_s, so) == double_multiplier(state_s, wt_s, so):
        raise ValueError("the SVDF case's scales do not discriminate")
    x = i8((1, 1), sx, 0, (-128, 127))
    wf = const(np.ones((LANES, 1), np.int8), DType.INT8, QuantParams.per_tensor(1 / 128))
    wt = const(np.ones((LANES, 1), np.int16), DType.INT16, QuantParams.per_tensor(wt_s))
    b = acc - (-128 + np.arange(LANES, dtype=np.int64))
    bias = const(b, DType.INT32,
                 QuantParams.per_tensor(float(np.float32(state_s) * np.float32(wt_s))))
    state = Spec((1, LANES), DType.INT16, QuantParams.per_tensor(state_s, 0), variable=True)
    return Case("SVDF", "int8_output_multiplier_boundary", (x, wf, wt, bias, state),
                (i8((1, LANES), so, 0),),
                ("SVDFOptions", {"rank": 1, "fused_activation_function": 0,
                                 "asymmetric_quantize_inputs": False}))


# -- HARD_SWISH int8: the output multiplier (hires_scale / out_scale, downscaled to Q0.15) ---
# TFLM divides the float32 hires scale in double; the float32 quotient gives 30909 instead of
# 30908 here, and the input 62 (drawn from a narrow range around it) comes out one step off.
HS = (0.03716616705060005, 0.019701069220900536, 11, -125)

CASES += [
    _svdf_boundary(),
    Case("HARD_SWISH", "int8_output_multiplier_boundary",
         (i8((1, 64), HS[0], HS[2], (58, 66)),), (i8((1, 64), HS[1], HS[3]),)),
]


def _search_dense(limit: int, seed: int, sx_range: tuple[float, float],
                  so_range: tuple[float, float]) -> tuple[float, float, float, int]:
    """Random float32 scales whose float32 and double multipliers differ, and the first
    accumulator in ``[amax / 2, amax)`` (outputs up to ``limit``) where the outputs do."""
    rng = np.random.default_rng(seed)
    while True:
        sx, sw, so = (float(np.float32(rng.uniform(*r)))
                      for r in (sx_range, (0.002, 0.02), so_range))
        (ma, sa), (mb, sb) = float32_multiplier(sx, sw, so), double_multiplier(sx, sw, so)
        if (ma, sa) == (mb, sb) or sa != sb:
            continue
        amax = int(limit / (sx * sw / so))
        accs = np.arange(amax // 2, amax, dtype=np.int64)
        hit = np.nonzero(multiply_by_quantized_multiplier(accs, ma, sa)
                         != multiply_by_quantized_multiplier(accs, mb, sb))[0]
        if hit.size:
            return sx, sw, so, int(accs[hit[0]])


if __name__ == "__main__":
    print("int8 ", _search_dense(100, 1, (0.01, 0.1), (0.05, 0.5)))
    print("int16", _search_dense(30000, 2, (1e-4, 1e-3), (1e-4, 1e-3)))
