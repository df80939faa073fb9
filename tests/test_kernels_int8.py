"""int8 reference kernels vs straightforward plain-integer loops written here (TFLM semantics)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgenn.arith.fixed_point import quantize_multiplier
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]


# -- plain-integer arithmetic of TFLM ------------------------------------------------------------
def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def srdhm(a: int, b: int) -> int:
    if a == b == I32_MIN:
        return I32_MAX
    ab = a * b
    return c_div(ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30)), 1 << 31)


def rdbpot(x: int, e: int) -> int:
    q = Fraction(x, 1 << e)
    n = math.floor(abs(q) + Fraction(1, 2))
    return n if q >= 0 else -n


def mbqm(x: int, m: int, shift: int) -> int:
    return rdbpot(srdhm(x * (1 << max(shift, 0)), m), max(-shift, 0))


def c_round(v: float) -> int:
    q = Fraction(v)
    n = math.floor(abs(q) + Fraction(1, 2))
    return n if q >= 0 else -n


def quant(v: float, s: float, zp: int) -> int:
    return zp + c_round(float(np.float32(v) / np.float32(s)))


def act_range(act: Activation, s: float, zp: int) -> tuple[int, int]:
    lo, hi = {
        Activation.NONE: (None, None),
        Activation.RELU: (0.0, None),
        Activation.RELU6: (0.0, 6.0),
        Activation.RELU_N1_TO_1: (-1.0, 1.0),
    }[act]
    return (
        -128 if lo is None else max(-128, quant(lo, s, zp)),
        127 if hi is None else min(127, quant(hi, s, zp)),
    )


def clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


# -- graph building -----------------------------------------------------------------------------
def qtensor(name: str, shape: tuple[int, ...], scale: float, zp: int) -> Tensor:
    return Tensor(name, shape, DType.INT8, QuantParams.per_tensor(scale, zp))


def run_node(
    op: str,
    inputs: list[Tensor],
    out_quant: QuantParams | None,
    arrays: list[np.ndarray],
    **attrs: object,
) -> np.ndarray:
    """Build a one-node graph (output shape by the IR's inference) and run it."""
    node = Node("n0", op, tuple(t.name for t in inputs), ("y",), dict(attrs))
    ((shape, dtype),) = infer(node, inputs)
    out = Tensor("y", shape, dtype, out_quant)
    tensors = {t.name: t for t in [*inputs, out]}
    graph_inputs = tuple(t.name for t in inputs if not t.is_const)
    g = Graph("g", tensors, (node,), graph_inputs, ("y",))
    return compile_ref(g).run(*arrays)[0]


def rand_i8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int64).astype(np.int8)


scales = st.floats(1e-3, 0.2, allow_nan=False).map(lambda v: float(np.float32(v)))
zps = st.integers(-128, 127)


# -- Conv2D -------------------------------------------------------------------------------------
@st.composite
def conv_cases(draw: st.DrawFn) -> dict:
    groups = draw(st.sampled_from([1, 1, 2, "dw"]))
    cig = draw(st.integers(1, 3))
    if groups == "dw":
        ci = draw(st.integers(1, 4))
        mult = draw(st.integers(1, 2))
        g, co, cig = ci, ci * mult, 1
    else:
        g = int(groups)
        ci = cig * g
        co = g * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    h = draw(st.integers((kh - 1) * dil[0] + 1, 7))
    w = draw(st.integers((kw - 1) * dil[1] + 1, 7))
    return dict(
        groups=g,
        ci=ci,
        co=co,
        cig=cig,
        k=(kh, kw),
        dil=dil,
        strides=strides,
        pads=pads,
        hw=(h, w),
        in_q=(draw(scales), draw(zps)),
        out_q=(draw(scales), draw(zps)),
        w_scales=[draw(st.floats(1e-3, 0.05)) for _ in range(co)],
        per_channel=draw(st.booleans()),
        bias=draw(st.booleans()),
        act=draw(st.sampled_from(ACTS)),
        seed=draw(st.integers(0, 2**31)),
    )


def conv_reference(x, w, b, c, mults, shifts, lo, hi):
    n, h, wd, _ = x.shape
    co, kh, kw, cig = w.shape
    sh, sw = c["strides"]
    dh, dw = c["dil"]
    pt, pl, pb, pr = c["pads"]
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    cog = co // c["groups"]
    in_zp, out_zp = c["in_q"][1], c["out_q"][1]
    out = np.zeros((n, oh, ow, co), np.int8)
    for bi in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for oc in range(co):
                    g = oc // cog
                    acc = 0
                    for ky in range(kh):
                        for kx in range(kw):
                            iy, ix = oy * sh - pt + ky * dh, ox * sw - pl + kx * dw
                            if not (0 <= iy < h and 0 <= ix < wd):
                                continue
                            for k in range(cig):
                                xv = int(x[bi, iy, ix, g * cig + k]) - in_zp
                                acc += xv * int(w[oc, ky, kx, k])
                    if b is not None:
                        acc += int(b[oc])
                    v = mbqm(acc, mults[oc], shifts[oc]) + out_zp
                    out[bi, oy, ox, oc] = clamp(v, lo, hi)
    return out


@given(conv_cases())
@settings(max_examples=40, deadline=None)
def test_conv2d_int8(c: dict) -> None:
    rng = np.random.default_rng(c["seed"])
    kh, kw = c["k"]
    x = rand_i8(rng, (2, *c["hw"], c["ci"]))
    w = rng.integers(-127, 128, size=(c["co"], kh, kw, c["cig"])).astype(np.int8)
    b = rng.integers(-5000, 5000, size=c["co"]).astype(np.int32) if c["bias"] else None
    in_s, in_zp = c["in_q"]
    out_s, out_zp = c["out_q"]
    w_scales = np.array(c["w_scales"] if c["per_channel"] else c["w_scales"][:1], np.float32)
    wq = QuantParams(w_scales, np.zeros_like(w_scales, np.int64), 0 if c["per_channel"] else None)
    ws = np.broadcast_to(w_scales, (c["co"],))
    pairs = [quantize_multiplier(float(np.float64(in_s) * float(s) / float(out_s))) for s in ws]
    lo, hi = act_range(c["act"], out_s, out_zp)
    inputs = [qtensor("x", x.shape, in_s, in_zp), Tensor("w", w.shape, DType.INT8, wq, w)]
    if b is not None:
        inputs.append(Tensor.const("b", b))
    got = run_node(
        "Conv2D",
        inputs,
        QuantParams.per_tensor(out_s, out_zp),
        [x],
        strides=c["strides"],
        dilations=c["dil"],
        pads=c["pads"],
        groups=c["groups"],
        activation=c["act"],
    )
    want = conv_reference(x, w, b, c, [p[0] for p in pairs], [p[1] for p in pairs], lo, hi)
    np.testing.assert_array_equal(got, want)


# -- FullyConnected -----------------------------------------------------------------------------
@given(
    st.integers(1, 40),
    st.integers(1, 6),
    scales,
    zps,
    scales,
    zps,
    st.booleans(),
    st.booleans(),
    st.sampled_from(ACTS),
    st.integers(0, 2**31),
)
@settings(max_examples=40, deadline=None)
def test_fully_connected_int8(k, co, in_s, in_zp, out_s, out_zp, per_channel, bias, act, seed):
    rng = np.random.default_rng(seed)
    x = rand_i8(rng, (3, k))
    w = rng.integers(-127, 128, size=(co, k)).astype(np.int8)
    b = rng.integers(-3000, 3000, size=co).astype(np.int32) if bias else None
    w_scales = rng.uniform(1e-3, 0.05, size=co if per_channel else 1).astype(np.float32)
    if per_channel and co > 1:
        wq = QuantParams(w_scales, np.zeros(co, np.int64), 0)
        pairs = [quantize_multiplier(float(in_s) * float(s) / float(out_s)) for s in w_scales]
    else:
        wq = QuantParams.per_tensor(float(w_scales[0]), 0)
        # TFLM's per-tensor path multiplies the two scales in float32 first.
        prod = float(np.float32(in_s) * np.float32(w_scales[0]))
        pairs = [quantize_multiplier(prod / float(out_s))] * co
    lo, hi = act_range(act, out_s, out_zp)
    inputs = [qtensor("x", x.shape, in_s, in_zp), Tensor("w", w.shape, DType.INT8, wq, w)]
    inputs += [Tensor.const("b", b)] if b is not None else []
    got = run_node(
        "FullyConnected", inputs, QuantParams.per_tensor(out_s, out_zp), [x], activation=act
    )
    want = np.zeros((3, co), np.int8)
    for n in range(3):
        for o in range(co):
            acc = sum((int(x[n, i]) - in_zp) * int(w[o, i]) for i in range(k))
            acc += int(b[o]) if b is not None else 0
            want[n, o] = clamp(mbqm(acc, *pairs[o]) + out_zp, lo, hi)
    np.testing.assert_array_equal(got, want)


# -- Add / Mul ----------------------------------------------------------------------------------
@given(
    st.sampled_from([((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (1, 1, 4)), ((2, 1, 4), (1, 3, 1))]),
    scales,
    zps,
    scales,
    zps,
    scales,
    zps,
    st.sampled_from(ACTS),
    st.integers(0, 2**31),
)
@settings(max_examples=40, deadline=None)
def test_add_mul_int8(shapes, s1, z1, s2, z2, so, zo, act, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes
    a, b = rand_i8(rng, sa), rand_i8(rng, sb)
    lo, hi = act_range(act, so, zo)
    ins = [qtensor("a", (1, *sa[1:]), s1, z1), qtensor("b", (1, *sb[1:]), s2, z2)]
    oq = QuantParams.per_tensor(so, zo)
    got_add = run_node("Add", ins, oq, [a, b], activation=act)
    got_mul = run_node("Mul", ins, oq, [a, b], activation=act)
    twice = 2 * max(s1, s2)
    m1, m2 = quantize_multiplier(s1 / twice), quantize_multiplier(s2 / twice)
    mo = quantize_multiplier(twice / ((1 << 20) * so))
    mm = quantize_multiplier(s1 * s2 / so)
    ab, bb = np.broadcast_arrays(a, b)
    want_add = np.zeros(ab.shape, np.int8)
    want_mul = np.zeros(ab.shape, np.int8)
    for idx in np.ndindex(ab.shape):
        va, vb = int(ab[idx]) - z1, int(bb[idx]) - z2
        total = mbqm(va << 20, *m1) + mbqm(vb << 20, *m2)
        want_add[idx] = clamp(mbqm(total, *mo) + zo, lo, hi)
        want_mul[idx] = clamp(mbqm(va * vb, *mm) + zo, lo, hi)
    np.testing.assert_array_equal(got_add, want_add)
    np.testing.assert_array_equal(got_mul, want_mul)


def test_add_with_constant_operand() -> None:
    rng = np.random.default_rng(0)
    x = rand_i8(rng, (4, 2, 2, 3))
    c = rand_i8(rng, (1, 1, 1, 3))
    ins = [
        qtensor("x", (1, 2, 2, 3), 0.05, 3),
        Tensor("c", c.shape, DType.INT8, QuantParams.per_tensor(0.05, 3), c),
    ]
    got = run_node("Add", ins, QuantParams.per_tensor(0.1, 0), [x])
    ref = run_node(
        "Add", [ins[0], qtensor("c", c.shape, 0.05, 3)], QuantParams.per_tensor(0.1, 0), [x, c]
    )
    np.testing.assert_array_equal(got, ref)
    assert got.shape == (4, 2, 2, 3)


# -- pooling ------------------------------------------------------------------------------------
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(1, 2),
    st.tuples(*[st.integers(0, 1)] * 4),
    st.sampled_from(ACTS),
    scales,
    zps,
    st.integers(0, 2**31),
)
@settings(max_examples=40, deadline=None)
def test_pool_int8(kh, kw, sh, sw, pads, act, s, zp, seed):
    pads = tuple(min(p, k - 1) for p, k in zip(pads, (kh, kw, kh, kw), strict=True))
    rng = np.random.default_rng(seed)
    x = rand_i8(rng, (2, 5, 6, 3))
    q = QuantParams.per_tensor(s, zp)
    ins = [qtensor("x", (1, 5, 6, 3), s, zp)]
    attrs = dict(kernel=(kh, kw), strides=(sh, sw), pads=pads, activation=act)
    got_max = run_node("MaxPool2D", ins, q, [x], **attrs)
    got_avg = run_node("AvgPool2D", ins, q, [x], **attrs)
    lo, hi = act_range(act, s, zp)
    pt, pl = pads[0], pads[1]
    assert got_max.shape == got_avg.shape
    for n, oy, ox, ch in np.ndindex(got_max.shape):
        vals = [
            int(x[n, iy, ix, ch])
            for iy in range(oy * sh - pt, oy * sh - pt + kh)
            for ix in range(ox * sw - pl, ox * sw - pl + kw)
            if 0 <= iy < 5 and 0 <= ix < 6
        ]
        acc, cnt = sum(vals), len(vals)
        avg = c_div(acc + cnt // 2, cnt) if acc > 0 else c_div(acc - cnt // 2, cnt)
        assert got_max[n, oy, ox, ch] == clamp(max(vals), lo, hi)
        assert got_avg[n, oy, ox, ch] == clamp(avg, lo, hi)


# -- Mean ---------------------------------------------------------------------------------------
@given(
    st.sampled_from([(1, 2), (2,), (3,), (1, 2, 3), (-1,)]),
    st.booleans(),
    st.booleans(),
    scales,
    zps,
    scales,
    zps,
    st.integers(0, 2**31),
)
@settings(max_examples=40, deadline=None)
def test_mean_int8(axes, keep, same, s_in, z_in, s_out, z_out, seed):
    rng = np.random.default_rng(seed)
    x = rand_i8(rng, (2, 3, 5, 4))
    if same:  # current TFLM takes the same path as for different parameters
        s_out, z_out = s_in, z_in
    got = run_node(
        "Mean",
        [qtensor("x", (1, 3, 5, 4), s_in, z_in)],
        QuantParams.per_tensor(s_out, z_out),
        [x],
        axes=axes,
        keepdims=keep,
    )
    ax = tuple(sorted(a % 4 for a in axes))
    count = int(np.prod([x.shape[a] for a in ax]))
    sums = x.astype(np.int64).sum(axis=ax, keepdims=keep)
    mult, shift = quantize_multiplier(s_in / s_out)
    sh = min(count.bit_length() - 1, 32, 31 + shift)
    m2, s2 = (mult << sh) // count, shift - sh
    want = np.zeros(sums.shape, np.int8)
    for idx in np.ndindex(sums.shape):
        want[idx] = clamp(mbqm(int(sums[idx]) - z_in * count, m2, s2) + z_out, -128, 127)
    np.testing.assert_array_equal(got, want)


# -- Softmax ------------------------------------------------------------------------------------
@given(scales, zps, st.sampled_from([1.0, 0.5, 2.0]), st.integers(1, 12), st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_softmax_int8_close_to_float_and_sums(s, zp, beta, depth, seed):
    rng = np.random.default_rng(seed)
    x = rand_i8(rng, (5, depth))
    got = run_node(
        "Softmax",
        [qtensor("x", (1, depth), s, zp)],
        QuantParams.per_tensor(1 / 256, -128),
        [x],
        beta=beta,
    )
    real = (x.astype(np.float64) - zp) * s * beta
    e = np.exp(real - real.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    assert np.abs((got.astype(np.float64) + 128) / 256 - want).max() <= 1.5 / 256


def test_softmax_int8_known_values() -> None:
    # Equal inputs give 1/depth each: 1/4 -> q = 64 - 128 = -64 exactly.
    x = np.zeros((1, 4), np.int8)
    got = run_node(
        "Softmax",
        [qtensor("x", (1, 4), 0.1, 0)],
        QuantParams.per_tensor(1 / 256, -128),
        [x],
        beta=1.0,
    )
    assert got.tolist() == [[-64, -64, -64, -64]]
    # One dominant logit saturates at 127 and the rest fall to -128.
    x = np.array([[127, -128, -128]], np.int8)
    got = run_node(
        "Softmax",
        [qtensor("x", (1, 3), 0.5, 0)],
        QuantParams.per_tensor(1 / 256, -128),
        [x],
        beta=1.0,
    )
    assert got.tolist() == [[127, -128, -128]]


# -- Quantize / Dequantize ----------------------------------------------------------------------
@given(st.lists(st.floats(-50, 50, width=32), min_size=1, max_size=30), scales, zps)
def test_quantize_float_to_int8(vals, s, zp):
    x = np.array([vals], np.float32)
    got = run_node(
        "Quantize", [Tensor("x", x.shape, DType.FLOAT32)], QuantParams.per_tensor(s, zp), [x]
    )
    want = [clamp(quant(v, s, zp), -128, 127) for v in x[0]]
    assert got[0].tolist() == want


def test_quantize_rounds_half_away_from_zero() -> None:
    x = np.array([[0.5, -0.5, 1.5, -1.5, 2.5, -2.5]], np.float32)
    got = run_node(
        "Quantize", [Tensor("x", x.shape, DType.FLOAT32)], QuantParams.per_tensor(1.0, 0), [x]
    )
    assert got.tolist() == [[1, -1, 2, -2, 3, -3]]


@given(scales, zps, scales, zps, st.integers(0, 2**31))
def test_requantize_and_dequantize(s1, z1, s2, z2, seed):
    x = rand_i8(np.random.default_rng(seed), (2, 16))
    got = run_node("Quantize", [qtensor("x", (1, 16), s1, z1)], QuantParams.per_tensor(s2, z2), [x])
    m = quantize_multiplier(s1 / s2)
    want = [[clamp(mbqm(int(v) - z1, *m) + z2, -128, 127) for v in row] for row in x]
    assert got.tolist() == want
    deq = run_node("Dequantize", [qtensor("x", (1, 16), s1, z1)], None, [x])
    assert deq.dtype == np.float32
    np.testing.assert_array_equal(
        deq, (np.float64(s1) * (x.astype(np.float64) - z1)).astype(np.float32)
    )


# -- activations and data movement --------------------------------------------------------------
@given(scales, zps, scales, zps, st.integers(0, 2**31))
def test_relu_relu6_clip_int8(s1, z1, s2, z2, seed):
    x = rand_i8(np.random.default_rng(seed), (2, 20))
    ins = [qtensor("x", (1, 20), s1, z1)]
    m = quantize_multiplier(s1 / s2)
    for op, attrs, (lo_f, hi_f) in [
        ("Relu", {}, (0.0, None)),
        ("Relu6", {}, (0.0, 6.0)),
        ("Clip", {"min": -0.5, "max": 0.7}, (-0.5, 0.7)),
    ]:
        got = run_node(op, ins, QuantParams.per_tensor(s2, z2), [x], **attrs)
        lo = max(-128, quant(lo_f, s2, z2))
        hi = 127 if hi_f is None else min(127, quant(hi_f, s2, z2))
        want = [[clamp(mbqm(int(v) - z1, *m) + z2, lo, hi) for v in row] for row in x]
        assert got.tolist() == want, op


def test_relu6_same_quant_is_a_clamp() -> None:
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    got = run_node(
        "Relu6", [qtensor("x", (1, 256), 0.05, -10)], QuantParams.per_tensor(0.05, -10), [x]
    )
    assert got.min() == -10 and got.max() == -10 + 120
    assert (got == np.clip(x, -10, 110)).all()


def test_pad_fills_zero_point_and_shape_ops_keep_batch() -> None:
    x = rand_i8(np.random.default_rng(1), (3, 2, 2, 1))
    ins = [qtensor("x", (1, 2, 2, 1), 0.1, 7)]
    q = QuantParams.per_tensor(0.1, 7)
    got = run_node("Pad", ins, q, [x], pads=((0, 0), (1, 0), (0, 1), (0, 0)), value=0.0)
    assert got.shape == (3, 3, 3, 1)
    assert (got[:, 0] == 7).all() and (got[:, :, 2] == 7).all()
    np.testing.assert_array_equal(got[:, 1:, :2], x)
    flat = run_node("Reshape", ins, q, [x], shape=(1, 4))
    np.testing.assert_array_equal(flat, x.reshape(3, 4))
    cat = run_node("Concat", [ins[0], qtensor("z", (1, 2, 2, 1), 0.1, 7)], q, [x, x], axis=-1)
    np.testing.assert_array_equal(cat, np.concatenate([x, x], axis=-1))
    tr = run_node("Transpose", ins, q, [x], perm=(0, 3, 1, 2))
    np.testing.assert_array_equal(tr, x.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("n", [2000])
def test_conv_net_speed(n: int) -> None:
    """conv2 (Conv16-Conv32-MaxPool-Dense10, 2.8 MMAC) on 2,000 digits in a few seconds."""
    import time

    rng = np.random.default_rng(0)
    t = {
        "x": qtensor("x", (1, 28, 28, 1), 1 / 255, -128),
        "w1": Tensor(
            "w1",
            (16, 3, 3, 1),
            DType.INT8,
            QuantParams(np.full(16, 0.01, np.float32), np.zeros(16), 0),
            rand_i8(rng, (16, 3, 3, 1)),
        ),
        "b1": Tensor.const("b1", rng.integers(-100, 100, 16).astype(np.int32)),
        "h1": qtensor("h1", (1, 26, 26, 16), 0.05, -128),
        "w2": Tensor(
            "w2",
            (32, 3, 3, 16),
            DType.INT8,
            QuantParams(np.full(32, 0.01, np.float32), np.zeros(32), 0),
            rand_i8(rng, (32, 3, 3, 16)),
        ),
        "b2": Tensor.const("b2", rng.integers(-100, 100, 32).astype(np.int32)),
        "h2": qtensor("h2", (1, 24, 24, 32), 0.05, -128),
        "p": qtensor("p", (1, 12, 12, 32), 0.05, -128),
        "f": qtensor("f", (1, 4608), 0.05, -128),
        "w3": Tensor(
            "w3",
            (10, 4608),
            DType.INT8,
            QuantParams(np.full(10, 0.01, np.float32), np.zeros(10), 0),
            rand_i8(rng, (10, 4608)),
        ),
        "y": qtensor("y", (1, 10), 0.1, 0),
    }
    nodes = (
        Node("c1", "Conv2D", ("x", "w1", "b1"), ("h1",), {"activation": Activation.RELU}),
        Node("c2", "Conv2D", ("h1", "w2", "b2"), ("h2",), {"activation": Activation.RELU}),
        Node("mp", "MaxPool2D", ("h2",), ("p",), {"kernel": (2, 2), "strides": (2, 2)}),
        Node("r", "Reshape", ("p",), ("f",), {"shape": (1, 4608)}),
        Node("fc", "FullyConnected", ("f", "w3"), ("y",), {}),
    )
    exe = compile_ref(Graph("conv2", t, nodes, ("x",), ("y",)))
    x = rand_i8(rng, (n, 28, 28, 1))
    start = time.perf_counter()
    y = exe.run(x)[0]
    elapsed = time.perf_counter() - start
    assert y.shape == (n, 10)
    assert elapsed < 15.0, f"{elapsed:.2f} s"  # measured about 3.5 s on the 2-core VM


# -- Sigmoid / Tanh (bit-exactness against TFLM is in test_tflite_export.py) ---------------------
@pytest.mark.parametrize("op", ["Sigmoid", "Tanh"])
@given(st.floats(1e-3, 1.0).map(lambda v: float(np.float32(v))), zps)
@settings(max_examples=30, deadline=None)
def test_sigmoid_tanh_int8_within_one_step_of_the_real_curve(op, s, zp):
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    out_s, out_zp = (1 / 256, -128) if op == "Sigmoid" else (1 / 128, 0)
    got = run_node(op, [qtensor("x", (1, 256), s, zp)], QuantParams.per_tensor(out_s, out_zp), [x])
    real = (x.astype(np.float64) - zp) * s
    curve = 1 / (1 + np.exp(-real)) if op == "Sigmoid" else np.tanh(real)
    want = np.clip(np.round(curve / out_s) + out_zp, -128, 127)
    assert np.abs(got.astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("op, out", [("Sigmoid", (1 / 255, -128)), ("Tanh", (1 / 128, 3))])
def test_sigmoid_tanh_int8_reject_other_output_quantization(op, out):
    from edgenn.errors import UnsupportedOperatorError

    with pytest.raises(UnsupportedOperatorError, match=op):
        run_node(
            op,
            [qtensor("x", (1, 4), 0.05, 0)],
            QuantParams.per_tensor(*out),
            [rand_i8(np.random.default_rng(0), (1, 4))],
        )


# -- requantizing data movement ------------------------------------------------------------------
@pytest.mark.parametrize(
    "op, attrs",
    [
        ("MaxPool2D", {"kernel": (2, 2), "strides": (2, 2), "activation": Activation.RELU}),
        ("AvgPool2D", {"kernel": (3, 3), "pads": (1, 1, 1, 1)}),
        ("Reshape", {"shape": (1, 36)}),
        ("Transpose", {"perm": (0, 3, 1, 2)}),
        ("Pad", {"pads": ((0, 0), (1, 0), (0, 2), (0, 0)), "value": 0.5}),
    ],
)
@given(scales, zps, scales, zps, st.integers(0, 2**31))
@settings(max_examples=15, deadline=None)
def test_data_movement_requantizes_to_a_different_output(op, attrs, s_in, z_in, s_out, z_out, seed):
    """Op in the input's quantization, then TFLM's int8 -> int8 Requantize (plain integers)."""
    rng = np.random.default_rng(seed)
    x = rand_i8(rng, (3, 2, 6, 3))
    ins = [qtensor("x", (1, 2, 6, 3), s_in, z_in)]
    same = run_node(op, ins, QuantParams.per_tensor(s_in, z_in), [x], **attrs)
    got = run_node(op, ins, QuantParams.per_tensor(s_out, z_out), [x], **attrs)
    mult, shift = quantize_multiplier(float(np.float32(s_in)) / float(np.float32(s_out)))
    want = np.array(
        [clamp(mbqm(int(v) - z_in, mult, shift) + z_out, -128, 127) for v in same.ravel()]
    ).reshape(same.shape)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_reshape_not_keeping_axis_0_runs_at_its_declared_shape_only():
    """A (6, 1) -> (1, 6) reshape (ONNX Gemm transA): axis 0 is no batch there."""
    from edgenn.errors import ShapeError

    x = rand_i8(np.random.default_rng(0), (6, 1))
    got = run_node(
        "Reshape", [qtensor("x", (6, 1), 0.1, 0)], QuantParams.per_tensor(0.1, 0), [x], shape=(1, 6)
    )
    np.testing.assert_array_equal(got, x.reshape(1, 6))
    with pytest.raises(ShapeError, match=r"declared \[6, 1\]; got \[12, 1\]"):
        run_node(
            "Reshape",
            [qtensor("x", (6, 1), 0.1, 0)],
            QuantParams.per_tensor(0.1, 0),
            [np.concatenate([x, x])],
            shape=(1, 6),
        )
