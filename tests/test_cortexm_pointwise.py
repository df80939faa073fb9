"""The generated pointwise (1x1) Conv2D kernel (kernels/pointwise.py) against the reference.

Host part: a numpy model of exactly what the generated block computes from the packed stream
(the +128 / SXTB16 weight split, the doubled inputs, the per-pixel correction, the fast or
exact requantization) must equal the reference runtime on many shapes, odd sizes included.
Emulator part: chains of 1x1 convolutions (odd Cin/Cout, strides, one pixel, dead channels,
every requantization mode, looped and unrolled channel groups) compiled for cortex-m4 run the
real generated assembly and must match the reference bit for bit.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier
from edgenn.backends.cortexm.ccall import statements
from edgenn.backends.cortexm.kernels import pointwise as pw
from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

M4 = get_core("cortex-m4")


def chain_graph(rng: np.random.Generator, hw: tuple[int, int], cin: int,
                layers: list[tuple[int, tuple[int, int], Activation]],
                per_channel: bool = True, dead: int = 0,
                out_zps: list[int] | None = None, dead_in: int = 0,
                dead_layers: int = 1, dead_bias: int = 2**30) -> Graph:
    """x -> 1x1 conv -> ... : one layer per (cout, strides, activation).

    ``dead``: that many output channels of the first ``dead_layers`` layers (scattered) get
    all-zero weights and a bias of +-``dead_bias`` at most (huge by default, as in the VWW
    model); ``dead_in``: that many input channels (scattered) of those layers are weighed by
    no channel; ``out_zps`` the output zero points (default random).
    """
    in_zp = int(rng.integers(-128, 128))
    tensors = [Tensor("x", (1, *hw, cin), DType.INT8, QuantParams.per_tensor(0.05, in_zp))]
    nodes = []
    prev, prev_t, c, scale = "x", tensors[0], cin, 0.05
    for i, (cout, strides, act) in enumerate(layers):
        w = rng.integers(-127, 128, size=(cout, 1, 1, c)).astype(np.int8)
        b = rng.integers(-20000, 20000, size=cout).astype(np.int64)
        if per_channel:
            wq = QuantParams(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                             np.zeros(cout, np.int64), 0)
        else:
            wq = QuantParams.per_tensor(float(np.float32(rng.uniform(0.002, 0.02))), 0)
        if i < dead_layers and dead:
            rows = rng.choice(cout, size=min(dead, cout), replace=False)
            w[rows] = 0
            b[rows] = (rng.choice([-dead_bias, dead_bias], size=len(rows)) if dead_bias >= 2**20
                       else rng.integers(-dead_bias, dead_bias + 1, size=len(rows)))
        if i < dead_layers and dead_in:
            w[..., rng.choice(c, size=min(dead_in, c), replace=False)] = 0
        wt = Tensor(f"w{i}", w.shape, DType.INT8, wq, w)
        bt = Tensor.const(f"b{i}", b.astype(np.int32))
        node = Node(f"conv{i}", "Conv2D", (prev, wt.name, bt.name), (f"y{i}",),
                    {"strides": strides, "pads": (0, 0, 0, 0), "activation": act})
        ((shape, dtype),) = infer(node, [prev_t, wt, bt])
        scale = float(np.float32(scale * 0.01 * np.sqrt(c) * 4))
        zp = int(rng.integers(-20, 20)) if out_zps is None else out_zps[i]
        y = Tensor(f"y{i}", shape, dtype, QuantParams.per_tensor(scale, zp))
        tensors += [wt, bt, y]
        nodes.append(node)
        prev, prev_t, c = y.name, y, cout
    return Graph("g", {t.name: t for t in tensors}, tuple(nodes), ("x",), (prev,))


# ---- host: numpy model of the generated block ------------------------------------------------

def model_block(plan: pw.Plan, x: np.ndarray) -> np.ndarray:
    """What the generated code computes, from the packed stream (int32 wrap-around)."""
    p = plan.p
    stream = pw.pack_stream(plan).astype(np.uint32)
    pairs = plan.pairs
    kp = len(pairs)
    xs = x[0, ::p.stride_h, ::p.stride_w][: p.out_h, : p.out_w].reshape(-1, p.in_c)
    xs = xs.astype(np.int64)
    x2 = np.zeros((xs.shape[0], kp, 2), np.int64)  # doubled pairs
    for j, (k0, k1) in enumerate(pairs):
        x2[:, j, 0] = 2 * xs[:, k0]
        if k1 >= 0:
            x2[:, j, 1] = 2 * xs[:, k1]
    c = 128 * x2.sum(axis=(1, 2))
    out = np.zeros((xs.shape[0], p.out_c), np.int64)
    if plan.kout is not None:  # the sparse form: constants from the template words
        tpl = pw.pack_template(plan).view(np.int8)[: p.out_c]
        out[:] = tpl
    chans = plan.chans
    pos = 0

    def s16(v: np.ndarray) -> np.ndarray:
        return ((v.astype(np.int64) + 2**15) % 2**16) - 2**15

    def s8(v: np.ndarray) -> np.ndarray:
        return ((v.astype(np.int64) + 2**7) % 2**8) - 2**7

    def wrap(v: np.ndarray) -> np.ndarray:
        return ((v + 2**31) % 2**32) - 2**31

    for g in range(plan.groups):
        ka0, kb1, ka2, kb3 = (wrap(np.int64(v)) for v in stream[pos:pos + 4])
        pos += 4
        acc = [ka0 - c, np.full_like(c, kb1), ka2 - c, np.full_like(c, kb3)]
        for j in range(kp):
            for half_ in range(2):
                word = np.int64(stream[pos])
                pos += 1
                lo, hi = s16(word & 0xFFFF), s16(word >> 16)
                b_lo, b_hi = s8(word >> 8), s8(word >> 24)
                acc[2 * half_] = acc[2 * half_] + x2[:, j, 0] * lo + x2[:, j, 1] * hi
                acc[2 * half_ + 1] = acc[2 * half_ + 1] + x2[:, j, 0] * b_lo + x2[:, j, 1] * b_hi
        acc = [wrap(a) for a in acc]
        acc[0] = wrap(acc[0] - acc[1] * 256)
        acc[2] = wrap(acc[2] - acc[3] * 256)
        for i in range(pw.GROUP):
            j = 4 * g + i
            ch = chans[j] if j < plan.nout else p.out_c  # >= out_c: a padding position
            a2 = acc[i]
            if plan.compact:  # 4 records per group: {mult, h}, r - 1 = lowest set bit of h;
                m, h = (wrap(np.int64(v)) for v in stream[pos:pos + 2])  # narrow: + r
                pos += 2
                r = (int(stream[pos - 1]) & -int(stream[pos - 1])).bit_length()
                if pw._straight(plan):
                    r = int(stream[pos])
                    pos += 1
                t = h + (a2 >> 31) if plan.sign else h
                y = np.clip((((a2 * m + 2**31) >> 32) + t) >> r, -128, 127)
                if ch < p.out_c:
                    out[:, ch] = np.maximum(y, p.act_min) if plan.mode == 1 else y
                continue
            if ch >= p.out_c:
                continue
            if plan.mode:
                m, h = (wrap(np.int64(v)) for v in stream[pos:pos + 2])
                pos += 2
                if not plan.unroll and j < pw.GROUP * (plan.nout // pw.GROUP):
                    pos += 1
                r = int(plan.shift[ch])
                t = h + (a2 >> 31) if plan.sign else h
                z = ((a2 * m + 2**31) >> 32) + t
                y = np.clip(z >> r, -128, 127)
                out[:, ch] = np.maximum(y, p.act_min) if plan.mode == 1 else y
            else:
                v = multiply_by_quantized_multiplier(a2 >> 1, int(plan.mult[ch]),
                                                     int(plan.shift[ch]))
                out[:, ch] = np.clip(np.asarray(v) + p.out_zp, p.act_min, p.act_max)
    assert pos == stream.size
    return out.reshape(1, p.out_h, p.out_w, p.out_c).astype(np.int8)


HOST_CASES = [
    # hw, cin, cout, strides, act
    ((5, 4), 8, 16, (1, 1), Activation.RELU),
    ((3, 3), 64, 64, (1, 1), Activation.RELU),
    ((4, 5), 1, 3, (1, 1), Activation.NONE),
    ((7, 7), 3, 5, (2, 2), Activation.NONE),
    ((6, 5), 5, 7, (2, 1), Activation.RELU6),
    ((2, 3), 6, 9, (1, 3), Activation.RELU),
    ((3, 2), 7, 2, (1, 1), Activation.NONE),
    ((1, 1), 13, 6, (1, 1), Activation.RELU),
    ((4, 4), 33, 70, (1, 1), Activation.NONE),
    ((2, 2), 255, 4, (1, 1), Activation.RELU),
]


@pytest.mark.parametrize("case", range(len(HOST_CASES)))
def test_host_model_of_the_block_matches_reference(case: int) -> None:
    hw, cin, cout, strides, act = HOST_CASES[case]
    rng = np.random.default_rng(100 + case)
    for per_channel, dead in ((True, 0), (False, 0), (True, min(2, cout))):
        g = chain_graph(rng, hw, cin, [(cout, strides, act)], per_channel, dead)
        p = conv_params(g.nodes[0], g)
        for force in (None, 0):
            for unroll, compact in ((None, False), (False, False), (True, False), (None, True)):
                plan = pw.make_plan(p, force_mode=force, unroll=unroll, compact=compact)
                assert plan is not None
                assert not plan.compact or (compact and plan.mode)
                if plan.mode and not plan.unroll and cout < pw.GROUP:
                    continue
                for _ in range(2):
                    x = rng.integers(-128, 128, size=(1, *hw, cin)).astype(np.int8)
                    want = compile_ref(g).run(x)[0]
                    np.testing.assert_array_equal(model_block(plan, x), want)


def test_pair_plan_covers_every_input_once() -> None:
    for cin in range(1, 40):
        ks = [k for pair in pw.pair_plan(cin) for k in pair if k >= 0]
        assert sorted(ks) == list(range(cin))


def test_claims_1x1_only_and_refuses_padding() -> None:
    rng = np.random.default_rng(0)
    g = chain_graph(rng, (4, 4), 8, [(8, (1, 1), Activation.RELU)])
    assert select_kernel(g.nodes[0], g, M4).name == pw.PointwiseConv.name
    assert not pw.PointwiseConv().matches(g.nodes[0], g, get_core("cortex-m0plus"))
    padded = Node("conv0", "Conv2D", g.nodes[0].inputs, g.nodes[0].outputs,
                  {**g.nodes[0].attrs, "pads": (1, 1, 1, 1)})
    ((shape, dtype),) = infer(padded, [g.tensor(n) for n in padded.inputs])
    y = Tensor("y0", shape, dtype, g.tensor("y0").quant)
    gp = Graph("g", {**g.tensors, "y0": y}, (padded,), ("x",), ("y0",))
    assert not pw.PointwiseConv().matches(gp.nodes[0], gp, M4)


# ---- emulator: the real generated Thumb-2 code -------------------------------------------

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


def _run_m4(g: Graph, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    exe = compile_model(g, target="cortex-m4")
    kernels = [str(m["kernel"]) for m in exe.manifest["layers"]]
    return np.asarray(exe.run(x)[0]), kernels


EMU_CHAINS = [
    # hw, cin, layers, per_channel, dead, out_zps
    ((5, 7), 3, [(5, (1, 1), Activation.RELU), (8, (2, 2), Activation.NONE),
                 (7, (1, 1), Activation.RELU), (1, (1, 1), Activation.NONE)],
     True, 2, [-128, 5, 10, -3]),
    ((4, 3), 13, [(64, (1, 1), Activation.RELU), (33, (1, 2), Activation.RELU6),
                  (6, (1, 1), Activation.NONE), (2, (1, 1), Activation.RELU)],
     False, 0, [-128, -128, 0, -128]),
    ((1, 1), 9, [(10, (1, 1), Activation.RELU), (70, (1, 1), Activation.NONE),
                 (17, (1, 1), Activation.RELU)], True, 3, None),
    ((6, 6), 255, [(6, (2, 2), Activation.NONE), (130, (1, 1), Activation.RELU),
                   (21, (1, 1), Activation.NONE)], True, 0, [7, -128, 3]),
    ((3, 5), 200, [(3, (1, 1), Activation.RELU), (40, (1, 2), Activation.NONE)],
     True, 1, [-5, 9]),
    # an odd pixel count (7): the last pixel runs alone in 1 x 4 blocks,
    # with Cin % 4 != 0, k-pair loops entered mid-chunk (kp 76, 23), odd Cout and a clamp
    ((1, 7), 150, [(7, (1, 1), Activation.RELU), (45, (1, 1), Activation.NONE),
                   (130, (1, 1), Activation.RELU6), (9, (1, 1), Activation.RELU)],
     True, 0, [10, 3, -128, -7]),
]


@needs_arm
@pytest.mark.parametrize("case", range(len(EMU_CHAINS)))
@pytest.mark.parametrize("variant", ["default", "looped", "exact", "compact"])
def test_emulator_chains_match_reference(case: int, variant: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    hw, cin, layers, per_channel, dead, zps = EMU_CHAINS[case]
    if variant == "looped":
        monkeypatch.setattr(pw, "UNROLL_BUDGET", 0)
    elif variant == "exact":
        monkeypatch.setattr(pw, "FORCE_MODE", 0)
    elif variant == "compact":  # codesize.compact_code() as the flash policy sets it
        monkeypatch.setattr(pw, "is_compact", lambda: True)
    rng = np.random.default_rng(200 + case)
    g = chain_graph(rng, hw, cin, layers, per_channel, dead, zps)
    x = rng.integers(-128, 128, size=(3, *hw, cin)).astype(np.int8)
    got, kernels = _run_m4(g, x)
    assert kernels == [pw.PointwiseConv.name] * len(layers)
    np.testing.assert_array_equal(got, compile_ref(g).run(x)[0])


def test_refuses_what_it_cannot_run() -> None:
    rng = np.random.default_rng(4)
    kernel = pw.PointwiseConv()
    # too many input channels for the 12-bit scratch offsets
    g = chain_graph(rng, (2, 2), pw.MAX_CIN + 4, [(4, (1, 1), Activation.RELU)])
    assert not kernel.matches(g.nodes[0], g, M4)
    # a doubled accumulator that could overflow int32: no plan
    g = chain_graph(rng, (2, 2), 8, [(4, (1, 1), Activation.RELU)])
    big = Tensor.const("b0", np.full(4, 2**30 - 1, np.int32))
    g = Graph("g", {**g.tensors, "b0": big}, g.nodes, g.inputs, g.outputs)
    assert pw.make_plan(conv_params(g.nodes[0], g)) is None
    assert not kernel.matches(g.nodes[0], g, M4)


def test_compact_code_is_shared_between_layers() -> None:
    """Compact mode: layers of one variant call the same functions (defined once), the
    records drop the shift word, and narrow layers get a Cin-specialised variant."""
    rng = np.random.default_rng(7)
    g = chain_graph(rng, (4, 4), 40, [(40, (1, 1), Activation.RELU),
                                      (40, (1, 1), Activation.RELU),
                                      (12, (1, 1), Activation.RELU)], out_zps=[-128] * 3)
    calls = []
    for node in g.nodes:
        plan = pw.make_plan(conv_params(node, g), compact=True)
        assert plan is not None and plan.compact and not plan.unroll
        calls.append(pw.prepare_plan(plan))
        assert pw.pack_stream(plan).size == plan.groups * (4 + 2 * plan.kp + 2 * pw.GROUP)
        assert not pw._straight(plan)
    names = [statements(c.call)[0].symbol for c in calls]  # the shared function of the variant
    assert names[0] == names[1] == names[2]  # Cin 40 (general) ... and
    assert calls[0].code == calls[1].code  # identical text: guarded, defined once in model.c
    g2 = chain_graph(rng, (4, 4), 8, [(40, (1, 1), Activation.RELU),
                                      (4, (1, 1), Activation.RELU)], out_zps=[-128, -128])
    plan = pw.make_plan(conv_params(g2.nodes[0], g2), compact=True)
    assert plan is not None and pw.compact_variant(plan).endswith("_c8x40")
    plan = pw.make_plan(conv_params(g2.nodes[1], g2), compact=True)  # tiny: stays unrolled
    assert plan is not None and plan.unroll and not plan.compact


# ---- the sparse form: constant (all-zero-weight) channels and inputs no channel weighs -------

SPARSE_CASES = [
    # hw, cin, cout, strides, act, dead outputs, dead inputs, dead bias
    ((3, 3), 64, 40, (1, 1), Activation.RELU, 29, 40, 2**30),  # odd pixels, odd kin
    ((4, 3), 33, 17, (1, 1), Activation.NONE, 9, 0, 3000),  # constants inside the range
    ((2, 5), 40, 9, (2, 1), Activation.RELU6, 0, 31, 0),  # inputs only: direct stores
    ((1, 1), 20, 12, (1, 1), Activation.RELU, 7, 11, 500),  # one pixel
    ((5, 2), 17, 6, (1, 1), Activation.NONE, 6, 0, 2**30),  # every channel a constant
    ((3, 4), 130, 70, (1, 1), Activation.RELU, 50, 77, 800),
]


@pytest.mark.parametrize("case", range(len(SPARSE_CASES)))
def test_host_model_of_the_sparse_form(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    hw, cin, cout, strides, act, dead, dead_in, dbias = SPARSE_CASES[case]
    monkeypatch.setattr(pw, "SPARSE_GAIN", 100.0)  # any dead channel: the sparse form
    rng = np.random.default_rng(300 + case)
    for zp in (-128, 5):
        g = chain_graph(rng, hw, cin, [(cout, strides, act)], True, dead, [zp],
                        dead_in=dead_in, dead_bias=dbias)
        p = conv_params(g.nodes[0], g)
        for unroll in (None, False, True):
            plan = pw.make_plan(p, unroll=unroll)
            assert plan is not None and plan.mode
            assert (plan.kout is not None) == (dead > 0)
            assert (plan.kin is not None) == (dead_in > 0 or dead == cout)
            assert plan.nout == cout - dead and not plan.compact
            for _ in range(2):
                x = rng.integers(-128, 128, size=(1, *hw, cin)).astype(np.int8)
                np.testing.assert_array_equal(model_block(plan, x), compile_ref(g).run(x)[0])


def test_sparse_form_only_where_it_pays() -> None:
    """Few dead channels: the dense form (the copy and scatter would cost more than the
    skipped blocks save); most dead: sparse, with a far smaller stream."""
    rng = np.random.default_rng(9)
    g = chain_graph(rng, (6, 6), 64, [(64, (1, 1), Activation.RELU)], dead=1, out_zps=[-128])
    plan = pw.make_plan(conv_params(g.nodes[0], g))
    assert plan is not None and plan.kout is None and plan.kin is None
    g = chain_graph(rng, (6, 6), 128, [(128, (1, 1), Activation.RELU)], dead=100, dead_in=90,
                    out_zps=[-128])
    p = conv_params(g.nodes[0], g)
    plan = pw.make_plan(p)
    assert plan is not None and plan.nout == 28 and plan.kin is not None
    assert len(plan.kin) <= 38
    dense = pw.make_plan(p, force_mode=2)  # the same layer's words if it were dense
    assert dense is not None
    assert pw.pack_stream(plan).size * 5 < 128 * 128 // 4


SPARSE_CHAINS = [
    # hw, cin, layers, dead, dead_in, dead_layers, out_zps
    ((3, 3), 128, [(128, (1, 1), Activation.RELU), (128, (1, 1), Activation.RELU),
                   (64, (1, 1), Activation.NONE)], 100, 90, 2, [-128, -128, 3]),
    ((4, 5), 40, [(36, (1, 1), Activation.RELU6), (21, (2, 1), Activation.RELU),
                  (7, (1, 1), Activation.NONE)], 20, 17, 3, [-128, 4, -9]),
    ((1, 1), 24, [(30, (1, 1), Activation.RELU), (5, (1, 1), Activation.NONE)],
     30, 10, 1, [-128, 0]),  # the first layer all constants, then inputs no one weighs
]


@needs_arm
@pytest.mark.parametrize("case", range(len(SPARSE_CHAINS)))
@pytest.mark.parametrize("variant", ["default", "looped", "always", "fused"])
def test_emulator_sparse_chains_match_reference(case: int, variant: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The sparse form per layer and as the row members of a fused chain (few rows a call)."""
    hw, cin, layers, dead, dead_in, dead_layers, zps = SPARSE_CHAINS[case]
    if variant == "looped":
        monkeypatch.setattr(pw, "UNROLL_BUDGET", 0)
    monkeypatch.setattr(pw, "SPARSE_GAIN", 100.0 if variant == "always" else pw.SPARSE_GAIN)
    rng = np.random.default_rng(400 + case)
    g = chain_graph(rng, hw, cin, layers, True, dead, zps, dead_in=dead_in,
                    dead_layers=dead_layers, dead_bias=3000)
    plans = [pw.make_plan(conv_params(n, g)) for n in g.nodes]
    assert any(pl is not None and pl.kout is not None for pl in plans)
    x = rng.integers(-128, 128, size=(3, *hw, cin)).astype(np.int8)
    want = compile_ref(g).run(x)[0]
    if variant == "fused":
        from edgenn.passes.fusion.chains import find_chains
        from edgenn.passes.fusion.rewrite import apply_fusion

        g = apply_fusion(g, find_chains(g), "ring_hoisted_pair")
    got, kernels = _run_m4(g, x)
    if variant == "fused":
        assert kernels == ["edgenn_fused_chain_s8_dsp[ring_hoisted_pair]"]
    else:
        assert kernels == [pw.PointwiseConv.name] * len(layers)
    np.testing.assert_array_equal(got, want)
