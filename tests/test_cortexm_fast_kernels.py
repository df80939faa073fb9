"""The fast_* DSP kernels of the Cortex-M backend against the reference runtime, bit for bit.

Host part: the C files are compiled with the host gcc (plain-C shims of SMLAD/SXTB16/SMMULR
in edgenn_acle.h) and called through ctypes with the arrays the plug-ins generate, on many
shapes including odd sizes; every output must equal the numpy reference runtime's (itself
bit-exact with TFLite Micro). Emulator part: whole graphs compiled for cortex-m4 (the real
Thumb-2 build with the hand-scheduled assembly) must give the reference's outputs too.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.kernels.fast_conv1ch import (
    FastConv1Ch,
    conv1ch_args,
    conv1ch_mode,
    conv1ch_records,
    conv1ch_scratch,
    pack_conv1ch_weights,
)
from edgenn.backends.cortexm.kernels.fast_fc import FastFullyConnected, fc_pairs, fc_plan
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"
M4 = get_core("cortex-m4")


def _graph(node: Node, tensors: list[Tensor], out_scale: float, out_zp: int) -> Graph:
    ((shape, dtype),) = infer(node, tensors)
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(float(np.float32(out_scale)), out_zp))
    return Graph("g", {t.name: t for t in (*tensors, y)}, (node,), ("x",), ("y",))


def fc_graph(rng: np.random.Generator, depth: int, cout: int, batch: int = 1,
             act: Activation = Activation.RELU, per_channel: bool = True,
             in_zp: int | None = None) -> Graph:
    """One int8 FullyConnected node with random weights, scales, bias and zero points."""
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    w = rng.integers(-127, 128, size=(cout, depth)).astype(np.int8)
    if per_channel:
        wq = QuantParams(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                         np.zeros(cout, np.int64), 0)
    else:
        wq = QuantParams.per_tensor(float(np.float32(rng.uniform(0.002, 0.02))), 0)
    x = Tensor("x", (batch, depth), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    wt = Tensor("w", w.shape, DType.INT8, wq, w)
    bt = Tensor.const("b", rng.integers(-20000, 20000, size=cout).astype(np.int32))
    node = Node("fc", "FullyConnected", ("x", "w", "b"), ("y",), {"activation": act})
    out_scale = 0.05 * 0.01 * np.sqrt(depth) * 4
    return _graph(node, [x, wt, bt], out_scale, int(rng.integers(-20, 20)))


def conv1_graph(rng: np.random.Generator, hw: tuple[int, int], cout: int, k: tuple[int, int],
                strides: tuple[int, int] = (1, 1), pads: tuple[int, int, int, int] = (0,) * 4,
                act: Activation = Activation.RELU, in_zp: int | None = None,
                out_zp: int | None = None) -> Graph:
    """One int8 Conv2D node with a single input channel."""
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    out_zp = int(rng.integers(-20, 20)) if out_zp is None else out_zp
    w = rng.integers(-127, 128, size=(cout, *k, 1)).astype(np.int8)
    wq = QuantParams(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                     np.zeros(cout, np.int64), 0)
    x = Tensor("x", (1, *hw, 1), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    wt = Tensor("w", w.shape, DType.INT8, wq, w)
    bt = Tensor.const("b", rng.integers(-20000, 20000, size=cout).astype(np.int32))
    node = Node("conv", "Conv2D", ("x", "w", "b"), ("y",),
                {"strides": strides, "pads": pads, "activation": act})
    return _graph(node, [x, wt, bt], 0.05 * 0.01 * np.sqrt(k[0] * k[1]) * 4, out_zp)


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    so = tmp_path_factory.mktemp("fast_kernels") / "fast.so"
    sources = [str(C_DIR / f) for f in ("edgenn_fc_s8_dsp.c", "edgenn_conv_s8_1ch_dsp.c")]
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", *sources,
                    "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def run_fc_host(lib: ctypes.CDLL, g: Graph, x: np.ndarray) -> np.ndarray:
    """Run edgenn_fc_s8_dsp with exactly the arrays and arguments the plug-in generates."""
    arrays_, argv = fc_plan(g.nodes[0], g)
    arrays = {a.name: a.values for a in arrays_}
    batch, depth = x.shape
    cout = g.tensor("y").shape[1]
    argv[0] = batch
    out = np.zeros((batch, cout), np.int8)
    scratch = np.zeros(fc_pairs(depth), np.uint32)
    xc = np.ascontiguousarray(x)
    lib.edgenn_fc_s8_dsp(_ptr(xc), _ptr(out), _ptr(scratch), _ptr(arrays["w"]),
                         _ptr(arrays["bias"]), _ptr(arrays["mult"]), _ptr(arrays["shift"]),
                         *(ctypes.c_int(v) for v in argv))
    return out


FC_SHAPES = [(1568, 64), (1, 1), (3, 2), (7, 3), (13, 5), (100, 10), (6, 4), (9, 9),
             (200, 17), (64, 10), (257, 33), (48, 8), (96, 4)]


@pytest.mark.parametrize("case", range(len(FC_SHAPES)))
def test_fc_host_matches_reference(host_lib: ctypes.CDLL, case: int) -> None:
    depth, cout = FC_SHAPES[case]
    rng = np.random.default_rng(10 + case)
    for per_channel, act in ((True, Activation.RELU), (False, Activation.NONE),
                             (True, Activation.RELU6)):
        g = fc_graph(rng, depth, cout, batch=3, act=act, per_channel=per_channel)
        x = rng.integers(-128, 128, size=(3, depth)).astype(np.int8)
        np.testing.assert_array_equal(run_fc_host(host_lib, g, x), compile_ref(g).run(x)[0])


@pytest.mark.parametrize("in_zp", [-128, 127, 0])
def test_fc_host_extreme_inputs(host_lib: ctypes.CDLL, in_zp: int) -> None:
    rng = np.random.default_rng(3)
    g = fc_graph(rng, 37, 6, batch=2, in_zp=in_zp, act=Activation.NONE)
    for val in (-128, 127):
        x = np.full((2, 37), val, np.int8)
        np.testing.assert_array_equal(run_fc_host(host_lib, g, x), compile_ref(g).run(x)[0])


def run_conv1_host(lib: ctypes.CDLL, g: Graph, x: np.ndarray, fast: int | None = None
                   ) -> np.ndarray:
    p = conv_params(g.nodes[0], g)
    fast = conv1ch_mode(p) if fast is None else fast
    w = pack_conv1ch_weights(p.w, 2 if fast else 1)
    quant = conv1ch_records(p, fast)
    out = np.zeros((p.out_h, p.out_w, p.out_c), np.int8)
    scratch = np.zeros(conv1ch_scratch(p) // 4 + 1, np.uint32)
    xc = np.ascontiguousarray(x.reshape(p.in_h, p.in_w))
    lib.edgenn_conv_s8_1ch_dsp(_ptr(xc), _ptr(out), _ptr(scratch), _ptr(w), _ptr(quant),
                        *(ctypes.c_int(v) for v in conv1ch_args(p, fast)))
    return out[None]


CONV1_SHAPES = [
    # hw, cout, k, strides, pads
    ((28, 28), 16, (3, 3), (1, 1), (0, 0, 0, 0)),  # model A conv1
    ((28, 28), 8, (3, 3), (1, 1), (1, 1, 1, 1)),  # model C conv1 (same)
    ((9, 7), 5, (3, 3), (1, 1), (1, 1, 1, 1)),  # odd width: the 1-pixel tail
    ((7, 9), 3, (3, 3), (2, 2), (1, 1, 1, 1)),  # stride 2
    ((8, 8), 7, (5, 5), (1, 1), (2, 2, 2, 2)),  # 5x5 same (generic path)
    ((6, 7), 9, (1, 1), (1, 1), (0, 0, 0, 0)),  # 1x1
    ((9, 7), 3, (3, 2), (1, 2), (0, 1, 2, 0)),  # asymmetric kernel, stride, pads
    ((3, 3), 4, (3, 3), (1, 1), (0, 0, 0, 0)),  # one output pixel
    ((5, 6), 1, (2, 2), (1, 1), (0, 0, 1, 1)),  # one channel, even taps
    ((11, 10), 32, (3, 3), (3, 1), (1, 0, 1, 2)),  # B-like channel count, odd pads
]


@pytest.mark.parametrize("case", range(len(CONV1_SHAPES)))
@pytest.mark.parametrize("act", [Activation.RELU, Activation.NONE, Activation.RELU6])
def test_conv1ch_host_matches_reference(host_lib: ctypes.CDLL, case: int,
                                        act: Activation) -> None:
    hw, cout, k, strides, pads = CONV1_SHAPES[case]
    rng = np.random.default_rng(50 + case)
    g = conv1_graph(rng, hw, cout, k, strides, pads, act)
    modes = {conv1ch_mode(conv_params(g.nodes[0], g)), 0}
    for _ in range(2):
        x = rng.integers(-128, 128, size=(1, *hw, 1)).astype(np.int8)
        want = compile_ref(g).run(x)[0]
        for fast in modes:
            np.testing.assert_array_equal(run_conv1_host(host_lib, g, x, fast), want)


def test_conv1ch_fast_mode_2_when_relu_at_minus_128(host_lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(1)
    g = conv1_graph(rng, (10, 10), 8, (3, 3), out_zp=-128)
    assert conv1ch_mode(conv_params(g.nodes[0], g)) == 2
    x = rng.integers(-128, 128, size=(1, 10, 10, 1)).astype(np.int8)
    np.testing.assert_array_equal(run_conv1_host(host_lib, g, x), compile_ref(g).run(x)[0])


@pytest.mark.parametrize("in_zp", [-128, 127])
def test_conv1ch_extreme_zero_points(host_lib: ctypes.CDLL, in_zp: int) -> None:
    rng = np.random.default_rng(9)
    g = conv1_graph(rng, (6, 6), 6, (3, 3), (1, 1), (1, 1, 1, 1), in_zp=in_zp)
    for val in (-128, 127):
        x = np.full((1, 6, 6, 1), val, np.int8)
        np.testing.assert_array_equal(run_conv1_host(host_lib, g, x), compile_ref(g).run(x)[0])


def test_plugins_are_chosen_on_dsp_cores_only() -> None:
    rng = np.random.default_rng(0)
    conv = conv1_graph(rng, (8, 8), 4, (3, 3))
    fc = fc_graph(rng, 20, 4)
    # int16-weight kernels: only where the flash policy grants them (widened=True)
    assert select_kernel(conv.nodes[0], conv, M4, widened=True).name == FastConv1Ch.name
    assert select_kernel(fc.nodes[0], fc, M4, widened=True).name == FastFullyConnected.name
    assert select_kernel(conv.nodes[0], conv, M4).name != FastConv1Ch.name
    assert select_kernel(fc.nodes[0], fc, M4).name != FastFullyConnected.name
    m0 = get_core("cortex-m0plus")
    assert select_kernel(conv.nodes[0], conv, m0, widened=True).name != FastConv1Ch.name
    assert select_kernel(fc.nodes[0], fc, m0, widened=True).name != FastFullyConnected.name


# ---- emulator: the real Thumb-2 build -------------------------------------------------------

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


def _emulated(g: Graph, x: np.ndarray) -> np.ndarray:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    exe = compile_model(g, target="cortex-m4", widen="all")  # the int16-weight kernels under test
    return np.asarray(exe.run(x)[0])


@needs_arm
def test_emulator_fc_and_conv1ch_match_reference() -> None:
    rng = np.random.default_rng(21)
    for g in (fc_graph(rng, 1568, 64, batch=1), fc_graph(rng, 45, 7, act=Activation.NONE),
              conv1_graph(rng, (9, 7), 5, (3, 3), (1, 1), (1, 1, 1, 1)),
              conv1_graph(rng, (12, 12), 8, (3, 3), out_zp=-128),
              conv1_graph(rng, (8, 8), 7, (5, 5), (2, 2), (2, 2, 2, 2), Activation.NONE)):
        shape = (2, *g.tensor("x").shape[1:])
        x = rng.integers(-128, 128, size=shape).astype(np.int8)
        np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])


@needs_arm
@pytest.mark.parametrize("fixture", ["model_c_int8", "dwsep_int8"])
def test_emulator_whole_models_match_reference(fixture: str) -> None:
    from edgenn.api import load_model

    g = load_model(FIXTURES / f"{fixture}.tflite")
    rng = np.random.default_rng(5)
    name = g.inputs[0]
    shape = (3, *g.tensor(name).shape[1:])
    x = rng.integers(-128, 128, size=shape).astype(np.int8)
    perm = g.external_perm.get(name) if g.external_perm else None
    if perm is not None:
        x = np.ascontiguousarray(x.transpose(perm))
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    exe = compile_model(g, target="cortex-m4", widen="all")  # the int16-weight kernels under test
    kernels = {str(m["kernel"]) for m in exe.manifest["layers"]}
    assert kernels & {"edgenn_conv_s8_1ch_dsp", "edgenn_dwconv_s8_dsp", "edgenn_fc_s8_dsp"}, kernels
    want = compile_ref(g).run(x)
    for a, b in zip(exe.run(x), want, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)


# ---- MaxPool2D --------------------------------------------------------------------------------

def pool_graph(rng: np.random.Generator, hw: tuple[int, int], c: int, k: tuple[int, int],
               strides: tuple[int, int], pads: tuple[int, int, int, int],
               act: Activation = Activation.NONE, same_quant: bool = True) -> Graph:
    zp = int(rng.integers(-30, 30))
    x = Tensor("x", (1, *hw, c), DType.INT8, QuantParams.per_tensor(0.05, zp))
    node = Node("pool", "MaxPool2D", ("x",), ("y",),
                {"kernel": k, "strides": strides, "pads": pads, "activation": act})
    if same_quant:
        return _graph(node, [x], 0.05, zp)
    return _graph(node, [x], 0.07, zp + 3)


@pytest.fixture(scope="module")
def pool_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    so = tmp_path_factory.mktemp("fast_pool") / "pool.so"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    str(C_DIR / "edgenn_maxpool_s8_dsp.c"), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


POOL_SHAPES = [
    # hw, c, k, strides, pads
    ((28, 28), 16, (2, 2), (2, 2), (0, 0, 0, 0)),
    ((7, 9), 8, (2, 2), (2, 2), (0, 0, 1, 1)),  # odd sizes, clipped windows
    ((9, 9), 4, (3, 3), (2, 2), (1, 1, 1, 1)),
    ((6, 5), 12, (3, 2), (1, 2), (0, 1, 2, 0)),
    ((4, 4), 32, (4, 4), (1, 1), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("case", range(len(POOL_SHAPES)))
@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU, Activation.RELU_N1_TO_1])
def test_maxpool_host_matches_reference(pool_lib: ctypes.CDLL, case: int,
                                        act: Activation) -> None:
    from edgenn.backends.cortexm.kernels.fast_pool import maxpool_args

    hw, c, k, strides, pads = POOL_SHAPES[case]
    rng = np.random.default_rng(70 + case)
    g = pool_graph(rng, hw, c, k, strides, pads, act)
    x = rng.integers(-128, 128, size=(1, *hw, c)).astype(np.int8)
    want = compile_ref(g).run(x)[0]
    out = np.zeros(want.shape, np.int8)
    pool_lib.edgenn_maxpool_s8_dsp(_ptr(x), _ptr(out),
                             *(ctypes.c_int(v) for v in maxpool_args(g.nodes[0], g)))
    np.testing.assert_array_equal(out, want)


@needs_arm
def test_emulator_maxpool_matches_reference() -> None:
    rng = np.random.default_rng(31)
    for g in (pool_graph(rng, (7, 9), 8, (2, 2), (2, 2), (0, 0, 1, 1), Activation.RELU),
              pool_graph(rng, (9, 9), 4, (3, 3), (2, 2), (1, 1, 1, 1), same_quant=False)):
        assert select_kernel(g.nodes[0], g, M4).name == "edgenn_maxpool_s8_dsp"
        x = rng.integers(-128, 128, size=(2, *g.tensor("x").shape[1:])).astype(np.int8)
        np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])
