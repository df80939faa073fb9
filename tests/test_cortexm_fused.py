"""FusedConvChain on Cortex-M (kernels/fused_chain.py + c/edgenn_fused_chain_s8_dsp.c) vs the
unfused reference.

Host part: edgenn_fused_chain_s8_dsp.c compiled with the host gcc (plain-C SMLAD shims of
edgenn_acle.h) and called through ctypes with exactly the arrays the plug-in generates, for many
chain shapes and all three variants; the oracle is the reference runtime on the UNFUSED graph
(itself bit-exact with TFLite Micro). Emulator part: models A, B, C and the conv2 fixture, fused
with each variant, built for cortex-m4 (the real Thumb-2 assembly) on 20 MNIST digits.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.kernels.fused_chain import VARIANT_CODES, plan_chain
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer
from edgenn.passes.fusion.chains import find_chains
from edgenn.passes.fusion.rewrite import apply_fusion

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"
VARIANTS = tuple(VARIANT_CODES)


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    so = tmp_path_factory.mktemp("fused") / "fused.so"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    str(C_DIR / "edgenn_fused_chain_s8_dsp.c"), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


# member: (cout, (kh, kw), (sh, sw), pads, activation, depthwise)
Member = tuple[int, tuple[int, int], tuple[int, int], tuple[int, int, int, int], Activation,
               bool]


def chain_graph(rng: np.random.Generator, hw: tuple[int, int], cin: int,
                members: list[Member]) -> Graph:
    """A graph of consecutive int8 Conv2D nodes with random weights and quantization."""
    x = Tensor("x", (1, *hw, cin), DType.INT8,
               QuantParams.per_tensor(0.05, int(rng.integers(-128, 128))))
    tensors = {"x": x}
    nodes = []
    cur = x
    for i, (cout, k, s, pads, act, dw) in enumerate(members):
        c = cur.shape[3]
        wshape = (cout, *k, 1 if dw else c)
        w = rng.integers(-127, 128, size=wshape).astype(np.int8)
        wq = QuantParams(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                         np.zeros(cout, np.int64), 0)
        wt = Tensor(f"w{i}", wshape, DType.INT8, wq, w)
        bt = Tensor.const(f"b{i}", rng.integers(-20000, 20000, size=cout).astype(np.int32))
        attrs = {"strides": s, "pads": pads, "activation": act}
        if dw:
            attrs["groups"] = c
        node = Node(f"conv{i}", "Conv2D", (cur.name, wt.name, bt.name), (f"t{i}",), attrs)
        ((shape, dtype),) = infer(node, [cur, wt, bt])
        taps = k[0] * k[1] * (1 if dw else c)
        scale = float(np.float32(cur.quant.scale[0] * 0.01 * np.sqrt(taps) * 3))
        out = Tensor(f"t{i}", shape, dtype,
                     QuantParams.per_tensor(scale, int(rng.integers(-30, 30))))
        tensors.update({wt.name: wt, bt.name: bt, out.name: out})
        nodes.append(node)
        cur = out
    return Graph("chain", tensors, tuple(nodes), ("x",), (cur.name,)).validate()


def fused(g: Graph, variant: str) -> Graph:
    chains = find_chains(g)
    assert chains, "no fusable chain"
    return apply_fusion(g, chains, variant)


def run_host(lib: ctypes.CDLL, fg: Graph, x: np.ndarray) -> np.ndarray:
    """One FusedConvChain node on the host with the plug-in's arrays, image by image."""
    (node,) = fg.nodes
    plan = plan_chain(node, fg)
    y = fg.tensor(node.outputs[0])
    outs = []
    for img in x:
        out = np.zeros(y.shape[1:], np.int8)
        scratch = np.full(plan.scratch_bytes // 4 + 1, 0x5A5A5A5A, np.uint32)  # not zeroed
        xc = np.ascontiguousarray(img)
        lib.edgenn_fused_chain_s8_dsp(_ptr(xc), _ptr(out), _ptr(scratch), _ptr(plan.meta),
                                      _ptr(plan.w), _ptr(plan.quant))
        outs.append(out)
    return np.stack(outs)


R, N6, NO = Activation.RELU, Activation.RELU6, Activation.NONE
P0, P1 = (0, 0, 0, 0), (1, 1, 1, 1)
CHAINS: list[tuple[tuple[int, int], int, list[Member]]] = [
    ((28, 28), 1, [(16, (3, 3), (1, 1), P0, R, False), (32, (3, 3), (1, 1), P0, R, False)]),  # A
    ((12, 12), 1, [(8, (3, 3), (1, 1), P1, R, False), (16, (3, 3), (1, 1), P1, R, False)]),  # C
    ((11, 9), 3, [(5, (3, 3), (1, 1), P1, NO, False), (7, (3, 3), (2, 2), P1, N6, False)]),
    ((10, 13), 5, [(6, (5, 3), (1, 2), (2, 1, 2, 1), R, False),
                   (3, (1, 1), (1, 1), P0, NO, False)]),
    ((9, 9), 2, [(4, (2, 2), (2, 2), (0, 0, 1, 1), R, False),
                 (9, (3, 1), (1, 1), (1, 0, 1, 0), R, False),
                 (6, (3, 3), (1, 1), P1, N6, False)]),  # three members, odd channels
    ((14, 14), 1, [(8, (3, 3), (2, 2), (0, 0, 1, 1), R, False),
                   (8, (3, 3), (1, 1), P1, R, True),
                   (16, (1, 1), (1, 1), P0, R, False)]),  # conv -> depthwise -> pointwise
    ((8, 10), 4, [(4, (3, 3), (1, 1), (2, 0, 1, 2), NO, False),
                  (8, (3, 3), (1, 1), P0, NO, True)]),  # depthwise multiplier 2, odd pads
    ((7, 7), 6, [(10, (1, 1), (1, 1), P0, R, False), (5, (7, 7), (1, 1), (3, 3, 3, 3), R,
                                                           False)]),
    ((6, 6), 33, [(17, (3, 3), (1, 1), P1, R, False), (3, (3, 3), (1, 1), P0, NO, False)]),
]


@pytest.mark.parametrize("case", range(len(CHAINS)))
@pytest.mark.parametrize("variant", VARIANTS)
def test_host_fused_chain_matches_unfused_reference(host_lib: ctypes.CDLL, case: int,
                                                    variant: str) -> None:
    hw, cin, members = CHAINS[case]
    rng = np.random.default_rng(100 + case)
    g = chain_graph(rng, hw, cin, members)
    x = rng.integers(-128, 128, size=(3, *hw, cin)).astype(np.int8)
    x[0] = -128  # extremes: ring values reach +-255
    x[1] = 127
    want = compile_ref(g).run(x)[0]
    got = run_host(host_lib, fused(g, variant), x)
    np.testing.assert_array_equal(got, want)


def test_plan_scratch_is_rings_not_maps() -> None:
    rng = np.random.default_rng(0)
    hw, cin, members = CHAINS[0]
    g = chain_graph(rng, hw, cin, members)
    plan = plan_chain(fused(g, "ring_hoisted_pair").nodes[0], g)
    inter = g.tensor("t0").nbytes  # 26*26*16 int8
    assert plan.ring_bytes < inter // 3, (plan.ring_bytes, inter)
    assert plan.kinds == (1, 0)  # the 1-channel first member takes its own path in (d)


# ---- emulator: real Thumb-2 builds ---------------------------------------------------------

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def _digits(g: Graph, n: int = 20) -> np.ndarray:
    from edgenn.datasets import dataset_split
    from edgenn.evaluate import images_to_input

    images, _ = dataset_split("mnist", "test")
    return np.asarray(images_to_input(g, images[:n]))


@needs_arm
@pytest.mark.slow
@pytest.mark.parametrize("model", ["model_a_int8", "model_b_int8", "model_c_int8", "conv2_int8"])
def test_emulator_fused_models_match_reference(model: str) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model, load_model

    g = load_model(FIXTURES / f"{model}.tflite")
    x = _digits(g)
    want = compile_ref(g).run(x)
    for variant in VARIANTS:
        fg = fused(g, variant)
        assert any(n.op == "FusedConvChain" for n in fg.nodes)
        exe = compile_model(fg, target="cortex-m4")
        kernels = [str(m["kernel"]) for m in exe.manifest["layers"]]
        # ring_modulo and ring_hoisted run one C function (its meta words pick the
        # variant); ring_hoisted_pair is generated for the chain (fused_rows)
        name = ("edgenn_fused_chain_s8_dsp[ring_hoisted_pair]" if variant == "ring_hoisted_pair"
                else "edgenn_fused_chain_s8_dsp")
        assert name in kernels, kernels
        for a, b in zip(exe.run(x), want, strict=True):
            np.testing.assert_array_equal(np.asarray(a), b, err_msg=f"{model} {variant}")


@needs_arm
def test_emulator_random_chains_match_reference() -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    for case in (2, 4, 5):
        hw, cin, members = CHAINS[case]
        rng = np.random.default_rng(300 + case)
        g = chain_graph(rng, hw, cin, members)
        x = rng.integers(-128, 128, size=(2, *hw, cin)).astype(np.int8)
        want = compile_ref(g).run(x)[0]
        for variant in VARIANTS:
            got = compile_model(fused(g, variant), target="cortex-m4").run(x)[0]
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{case} {variant}")


# chains whose rows are word multiples: ring_hoisted_pair runs the per-layer kernels over row
# windows (kernels/fused_rows.py): top/bottom padding rows, strides, a depthwise member
ROW_CHAINS: list[tuple[tuple[int, int], int, list[Member]]] = [
    ((12, 12), 4, [(8, (3, 3), (1, 1), P1, R, False), (8, (3, 3), (2, 2), P1, N6, False),
                   (16, (1, 1), (1, 1), P0, NO, False)]),
    ((14, 14), 2, [(8, (3, 3), (2, 2), (0, 0, 1, 1), R, False),
                   (8, (3, 3), (1, 1), P1, R, True), (16, (1, 1), (1, 1), P0, R, False)]),
    ((10, 8), 1, [(4, (5, 3), (1, 2), (2, 1, 2, 1), R, False),
                  (8, (3, 3), (1, 1), (2, 0, 1, 2), NO, False)]),
]


@needs_arm
@pytest.mark.parametrize("case", range(len(ROW_CHAINS)))
def test_emulator_row_window_chains_match_reference(case: int) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model
    from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
    from edgenn.backends.cortexm.targets import get_core

    hw, cin, members = ROW_CHAINS[case]
    rng = np.random.default_rng(500 + case)
    g = chain_graph(rng, hw, cin, members)
    x = rng.integers(-128, 128, size=(3, *hw, cin)).astype(np.int8)
    x[0] = -128
    want = compile_ref(g).run(x)[0]
    fg = fused(g, "ring_hoisted_pair")
    (node,) = fg.nodes
    assert plan_rows(node, fg, get_core("cortex-m4")) is not None
    got = compile_model(fg, target="cortex-m4").run(x)[0]
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("case", [1, 2])
def test_row_members_take_depthwise_setup_from_flash(case: int) -> None:
    """A depthwise-style member called for a few rows at a time reads its channels' set-up
    words (weight pairs, requantization constants) from a flash table; the layer-by-layer
    kernel keeps building them (int8 weights in flash)."""
    from edgenn.backends.cortexm.kernels.conv import conv_params
    from edgenn.backends.cortexm.kernels.depthwise import DepthwiseConv, plan_layer, setup_table
    from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
    from edgenn.backends.cortexm.targets import get_core

    hw, cin, members = ROW_CHAINS[case]
    g = chain_graph(np.random.default_rng(500 + case), hw, cin, members)
    core = get_core("cortex-m4")
    fg = fused(g, "ring_hoisted_pair")
    (node,) = fg.nodes
    plan = plan_rows(node, fg, core)
    assert plan is not None
    dw = [c for c in plan.calls if c.kernel_name == DepthwiseConv.name]
    assert dw
    for call in dw:
        assert call.arrays[0].ctype == "uint32_t"
        assert "const uint32_t *wb = wts +" in (call.code or "")
    plain = [n for n in g.nodes if DepthwiseConv().matches(n, g, core)]
    assert plain
    for n in plain:
        call = DepthwiseConv().prepare(n, g, core)
        assert call.arrays[0].ctype == "int8_t" and "dwk_wpair(" in (call.code or "")
        table = setup_table(plan_layer(conv_params(n, g)))
        assert table.shape[0] == g.tensor(n.outputs[0]).shape[3] and table.dtype == np.uint32


def test_many_channel_depthwise_rows_keep_int8_weights() -> None:
    """The flash table is bounded (MAX_SETUP_TABLE_BYTES): a 256-channel 3x3 depthwise layer
    called by rows keeps its int8 weights and per-call set-up."""
    from edgenn.backends.cortexm.kernels.depthwise import DepthwiseConv
    from edgenn.backends.cortexm.targets import get_core

    g = chain_graph(np.random.default_rng(7), (4, 4), 256,
                    [(256, (3, 3), (1, 1), P1, R, True)])
    (node,) = g.nodes
    call = DepthwiseConv().prepare_rows(node, g, get_core("cortex-m4"))
    assert call.arrays[0].ctype == "int8_t" and "dwk_wpair(" in (call.code or "")


# int16 row windows (kernels/window_conv.py): (shape, cin, members, which members read an
# int16 window). Sliding 3-pixel blocks (stride 1), 4-pixel blocks (stride 2), a K longer
# than the straight unroll (a loop over the kernel rows), an odd channel count (the tail
# block), a widened chain input (member 0), and members that keep the int8 path.
WIDE_CHAINS: list[tuple[tuple[int, int], int, list[Member], tuple[bool, ...]]] = [
    ((10, 11), 4, [(8, (3, 3), (1, 1), P0, R, False), (8, (3, 3), (1, 1), P0, R, False)],
     (True, True)),  # valid
    ((9, 12), 1, [(8, (3, 3), (1, 1), P1, R, False), (7, (3, 3), (1, 1), P1, N6, False)],
     (False, True)),  # same padding, odd Cout
    ((12, 14), 2, [(8, (3, 3), (1, 1), P1, R, False), (4, (3, 3), (2, 2), P1, NO, False)],
     (False, True)),  # stride-2 consumer
    ((8, 8), 4, [(24, (3, 3), (1, 1), P1, R, False), (8, (3, 3), (1, 1), P0, NO, False)],
     (True, True)),  # K = 108 pairs: row loop
    ((14, 14), 2, [(8, (3, 3), (2, 2), (0, 0, 1, 1), R, False),
                   (8, (3, 3), (1, 1), P1, R, True), (16, (1, 1), (1, 1), P0, R, False),
                   (8, (3, 3), (1, 1), P1, R, False)],
     (False, False, False, True)),  # conv -> depthwise -> pointwise -> conv
    ((10, 12), 1, [(6, (3, 3), (1, 1), P1, R, False), (8, (3, 3), (1, 1), P1, R, False)],
     (False, False)),  # Cin 6: the int8 path
]


def _wide_flags(g: Graph) -> tuple[bool, ...]:
    from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
    from edgenn.backends.cortexm.targets import get_core

    fg = fused(g, "ring_hoisted_pair")
    (node,) = fg.nodes
    plan = plan_rows(node, fg, get_core("cortex-m4"))
    assert plan is not None
    return tuple(r.wide for r in plan.members)


@pytest.mark.parametrize("case", range(len(WIDE_CHAINS)))
def test_int16_window_members_are_chosen_from_properties(case: int) -> None:
    hw, cin, members, wide = WIDE_CHAINS[case]
    g = chain_graph(np.random.default_rng(700 + case), hw, cin, members)
    assert _wide_flags(g) == wide


def test_window_pair_order_is_the_patch_order() -> None:
    """The window's (c0, c2, c1, c3) order is the per-layer patch's pair order, so
    conv_gemm's weight words serve the window kernel."""
    from edgenn.backends.cortexm.kernels.conv import conv_params
    from edgenn.backends.cortexm.kernels.conv_gemm import patch_positions
    from edgenn.backends.cortexm.kernels.window_conv import reordered_positions

    for cin, k in ((4, (3, 3)), (16, (3, 3)), (8, (5, 3)), (12, (1, 3))):
        g = chain_graph(np.random.default_rng(cin), (8, 8), cin,
                        [(4, k, (1, 1), P0, R, False)])
        p = conv_params(g.nodes[0], g)
        np.testing.assert_array_equal(patch_positions(p), reordered_positions(p))


@needs_arm
@pytest.mark.parametrize("case", range(len(WIDE_CHAINS)))
def test_emulator_int16_window_chains_match_reference(case: int) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    hw, cin, members, wide = WIDE_CHAINS[case]
    rng = np.random.default_rng(700 + case)
    g = chain_graph(rng, hw, cin, members)
    assert _wide_flags(g) == wide
    x = rng.integers(-128, 128, size=(3, *hw, cin)).astype(np.int8)
    x[0] = -128  # extremes: the int16 window holds +-128 and the padding zero point
    x[1] = 127
    want = compile_ref(g).run(x)[0]
    got = compile_model(fused(g, "ring_hoisted_pair"), target="cortex-m4").run(x)[0]
    np.testing.assert_array_equal(np.asarray(got), want)


def test_int16_windows_against_a_scratch_limit() -> None:
    """Exact byte counts decide under a scratch limit: a 3x3 consumer's int16 ring of KH rows
    is no larger than its int8 window at two rows a call plus patch, so the limit is met only
    by one row a call on the int8 path (KH int8 rows + patch); a first member that would read
    the chain input in place on the int8 path but needs a widened window on the int16 path
    goes back to the int8 path (one row a call: next to an int16 window anyway)."""
    from edgenn.backends.cortexm.kernels.fused_rows import _plan_rows, plan_rows
    from edgenn.backends.cortexm.targets import get_core

    core = get_core("cortex-m4")
    chains = [(1, [(32, (3, 3), (1, 1), P0, R, False), (8, (3, 3), (1, 1), P0, R, False)],
               [False, False], True),
              (4, WIDE_CHAINS[0][2], [False, True], False)]
    for cin, members, limited, single in chains:
        g = chain_graph(np.random.default_rng(9), (6, 28), cin, members)
        fg = fused(g, "ring_hoisted_pair")
        (node,) = fg.nodes
        free = plan_rows(node, fg, core)
        assert free is not None
        narrow = _plan_rows(node, fg, core, [False] * len(members))
        assert narrow is not None
        tight = plan_rows(node, fg, core, max_scratch=free.scratch_bytes - 1)
        assert tight is not None and [r.wide for r in tight.members] == limited
        assert tight.scratch_bytes < free.scratch_bytes
        assert max(r.g for r in tight.members) == 1
        if single:  # at two rows a call nothing smaller exists
            assert narrow.scratch_bytes >= free.scratch_bytes
            assert max(r.g for r in narrow.members) == 2


@needs_arm
@pytest.mark.slow
def test_emulator_int16_window_sweep_matches_reference() -> None:
    """Random two-member chains whose consumer reads an int16 window: kernel sizes, strides,
    paddings, channel counts (odd Cout: the tail block), K past the straight unroll."""
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    rng = np.random.default_rng(900)
    ran = 0
    for _ in range(40):
        cin = int(rng.choice([4, 8, 12, 16, 24]))
        k = tuple(int(v) for v in rng.choice([(3, 3), (5, 5), (1, 3), (3, 1), (2, 2), (5, 3)]))
        s = int(rng.choice([1, 2]))
        pads = P1 if rng.random() < 0.5 else P0
        cout = int(rng.choice([3, 4, 7, 8, 16]))
        w = int(rng.integers(8, 20)) * 2
        members = [(cin, (3, 3), (1, 1), P1, R, False), (cout, k, (s, s), pads, N6, False)]
        try:
            g = chain_graph(rng, (int(rng.integers(6, 12)), w), 4, members)
            flags = _wide_flags(g)
        except (AssertionError, ValueError):
            continue  # rows not word multiples, or a shape the chain does not take
        if not flags[1]:
            continue
        x = rng.integers(-128, 128, size=(2, *g.tensor("x").shape[1:])).astype(np.int8)
        x[0] = -128
        want = compile_ref(g).run(x)[0]
        got = compile_model(fused(g, "ring_hoisted_pair"), target="cortex-m4").run(x)[0]
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(members))
        ran += 1
        if ran == 12:
            break
    assert ran >= 8


# depthwise -> pointwise chains on the row-window path (kernels/fused_rows.py), including rows
# that are not word multiples (DS-CNN's 49x10x1 input: 10-byte rows; odd channel counts),
# which used to fall back to the ring kernel: (shape, cin, members)
DWPW_CHAINS: list[tuple[tuple[int, int], int, list[Member]]] = [
    ((12, 12), 8, [(8, (3, 3), (1, 1), P1, R, True), (16, (1, 1), (1, 1), P0, R, False)]),
    ((13, 12), 8, [(8, (3, 3), (2, 2), (0, 0, 1, 1), N6, True),
                   (12, (1, 1), (1, 1), P0, NO, False)]),  # stride-2 depthwise
    ((9, 7), 5, [(5, (3, 3), (1, 1), P1, R, True), (3, (1, 1), (1, 1), P0, R, False)]),
    ((13, 10), 1, [(8, (5, 3), (2, 2), (2, 1, 2, 1), R, False),
                   (8, (3, 3), (1, 1), P1, R, True), (12, (1, 1), (1, 1), P0, R, False)]),
]


@pytest.mark.parametrize("case", range(len(DWPW_CHAINS)))
def test_rows_that_are_not_word_multiples_take_the_row_path(case: int) -> None:
    from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
    from edgenn.backends.cortexm.targets import get_core

    hw, cin, members = DWPW_CHAINS[case]
    g = chain_graph(np.random.default_rng(800 + case), hw, cin, members)
    fg = fused(g, "ring_hoisted_pair")
    (node,) = fg.nodes
    assert plan_rows(node, fg, get_core("cortex-m4")) is not None


@needs_arm
@pytest.mark.parametrize("case", range(len(DWPW_CHAINS)))
def test_emulator_dw_pw_chains_match_reference(case: int) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    hw, cin, members = DWPW_CHAINS[case]
    rng = np.random.default_rng(800 + case)
    g = chain_graph(rng, hw, cin, members)
    x = rng.integers(-128, 128, size=(3, *hw, cin)).astype(np.int8)
    x[0] = -128
    x[1] = 127
    want = compile_ref(g).run(x)[0]
    exe = compile_model(fused(g, "ring_hoisted_pair"), target="cortex-m4")
    kernels = [str(m["kernel"]) for m in exe.manifest["layers"]]
    assert kernels == ["edgenn_fused_chain_s8_dsp[ring_hoisted_pair]"], kernels
    got = exe.run(x)[0]
    np.testing.assert_array_equal(np.asarray(got), want)


def test_rows_per_call_with_an_odd_row_count_and_under_a_limit() -> None:
    """Two rows a call also when the map's rows are odd (9 here): the last call computes one
    row past the map, which the last member stages; under a scratch limit the plan falls back
    to one row a call (windows of KH rows)."""
    from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
    from edgenn.backends.cortexm.targets import get_core

    hw, cin, members = DWPW_CHAINS[2]
    g = chain_graph(np.random.default_rng(802), hw, cin, members)
    fg = fused(g, "ring_hoisted_pair")
    (node,) = fg.nodes
    core = get_core("cortex-m4")
    free = plan_rows(node, fg, core)
    assert free is not None
    assert [r.g for r in free.members] == [2, 2] and free.stage_off >= 0
    tight = plan_rows(node, fg, core, max_scratch=free.scratch_bytes - 1)
    assert tight is not None and [r.g for r in tight.members] == [1, 1]
    assert tight.stage_off < 0 and tight.scratch_bytes < free.scratch_bytes


@needs_arm
@pytest.mark.slow
def test_emulator_row_path_sweep_odd_rows_matches_reference() -> None:
    """Random depthwise / pointwise / 3x3 chains with odd map heights (two rows a call, the
    last call past the map) and row lengths that are not word multiples."""
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model
    from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
    from edgenn.backends.cortexm.targets import get_core

    rng = np.random.default_rng(1100)
    core = get_core("cortex-m4")
    ran = ragged = 0
    for _ in range(30):
        cin = int(rng.integers(1, 9))
        members: list[Member] = []
        c = cin
        for _ in range(int(rng.integers(2, 4))):
            kind = int(rng.integers(0, 3))
            s = int(rng.choice([1, 1, 2]))
            act = R if rng.random() < 0.5 else N6
            if kind == 0:  # depthwise 3x3, multiplier 1
                members.append((c, (3, 3), (s, s), P1, act, True))
            elif kind == 1:  # pointwise
                c = int(rng.integers(2, 17))
                members.append((c, (1, 1), (1, 1), P0, act, False))
            else:
                c = int(rng.integers(2, 13))
                members.append((c, (3, 3), (s, s), P1, act, False))
        hw = (int(rng.integers(7, 14)) | 1, int(rng.integers(3, 10)))
        g = chain_graph(rng, hw, cin, members)
        fg = fused(g, "ring_hoisted_pair")
        (node,) = fg.nodes
        plan = plan_rows(node, fg, core)
        if plan is None:
            continue
        ragged += any(r.out_h % r.g for r in plan.members)
        x = rng.integers(-128, 128, size=(2, *hw, cin)).astype(np.int8)
        x[0] = -128
        want = compile_ref(g).run(x)[0]
        got = compile_model(fg, target="cortex-m4").run(x)[0]
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str((hw, cin, members)))
        ran += 1
        if ran == 10:
            break
    assert ran >= 8 and ragged >= 3, (ran, ragged)
