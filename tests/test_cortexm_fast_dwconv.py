"""edgenn_dwconv_s8_dsp (DSP depthwise conv) against the reference runtime, bit for bit.

Host part: c/edgenn_dwconv_s8_dsp.c built with the host gcc (plain-C SXTB16/SMLABB/SMMULR shims) and
called through ctypes with exactly the arrays the plug-in generates, on many shapes (odd
channel counts, stride 2, 5x5, asymmetric pads, windows wholly in the padding) and extreme
zero points, in every requantization mode the generator may pick. Emulator part: the real
Thumb-2 build (cortex-m4) of dwsep_int8.tflite and of a MobileNet-like block must equal the
reference runtime, with this kernel chosen for the depthwise layers.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.kernels.fast_dwconv import (
    FastDepthwiseConv,
    dw_args,
    dw_mode,
    dw_records,
    dw_scratch,
    pack_dw_weights,
)
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"
M4 = get_core("cortex-m4")


def _wq(rng: np.random.Generator, c: int) -> QuantParams:
    return QuantParams(rng.uniform(0.002, 0.02, c).astype(np.float32), np.zeros(c, np.int64), 0)


def dw_node(rng: np.random.Generator, name: str, x: str, y: str, c: int, k: tuple[int, int],
            strides: tuple[int, int], pads: tuple[int, int, int, int], act: Activation,
            mult: int = 1) -> tuple[Node, list[Tensor]]:
    """A depthwise Conv2D node (weights [C*mult, KH, KW, 1]) with its constant tensors."""
    w = rng.integers(-127, 128, size=(c * mult, *k, 1)).astype(np.int8)
    wt = Tensor(f"{name}_w", w.shape, DType.INT8, _wq(rng, c * mult), w)
    bt = Tensor.const(f"{name}_b", rng.integers(-20000, 20000, size=c * mult).astype(np.int32))
    node = Node(name, "Conv2D", (x, wt.name, bt.name), (y,),
                {"strides": strides, "pads": pads, "activation": act, "groups": c})
    return node, [wt, bt]


def dw_graph(rng: np.random.Generator, hw: tuple[int, int], c: int, k: tuple[int, int],
             strides: tuple[int, int] = (1, 1), pads: tuple[int, int, int, int] = (0,) * 4,
             act: Activation = Activation.RELU, in_zp: int | None = None,
             out_zp: int | None = None, mult: int = 1, out_scale: float | None = None
             ) -> Graph:
    """One int8 depthwise Conv2D node with random weights, scales, bias and zero points."""
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    out_zp = int(rng.integers(-20, 20)) if out_zp is None else out_zp
    x = Tensor("x", (1, *hw, c), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    node, consts = dw_node(rng, "dw", "x", "y", c, k, strides, pads, act, mult)
    tensors = [x, *consts]
    ((shape, dtype),) = infer(node, tensors)
    if out_scale is None:
        out_scale = 0.05 * 0.01 * np.sqrt(k[0] * k[1]) * 4
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(float(np.float32(out_scale)), out_zp))
    return Graph("g", {t.name: t for t in (*tensors, y)}, (node,), ("x",), ("y",))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    so = tmp_path_factory.mktemp("fast_dwconv") / "dw.so"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    str(C_DIR / "edgenn_dwconv_s8_dsp.c"), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def run_host(lib: ctypes.CDLL, g: Graph, x: np.ndarray, fast: int | None = None) -> np.ndarray:
    """edgenn_dwconv_s8_dsp per batch item with the plug-in's arrays (its mode, or ``fast``)."""
    p = conv_params(g.nodes[0], g)
    fast = dw_mode(p) if fast is None else fast
    w = pack_dw_weights(p.w, 2 if fast else 1)
    quant = dw_records(p, fast)
    outs = []
    for item in x:
        # why exact-size buffers: a read past the tensor would go unnoticed in a larger one
        xc = np.ascontiguousarray(item, dtype=np.int8)
        out = np.zeros((p.out_h, p.out_w, p.out_c), np.int8)
        scratch = np.zeros(dw_scratch(p), np.int8)
        lib.edgenn_dwconv_s8_dsp(_ptr(xc), _ptr(out), _ptr(scratch), _ptr(w), _ptr(quant),
                           *(ctypes.c_int(v) for v in dw_args(p, fast)))
        outs.append(out)
    return np.stack(outs)


SHAPES = [
    # hw, channels, kernel, strides, pads
    ((14, 14), 8, (3, 3), (1, 1), (1, 1, 1, 1)),  # dwsep's layer
    ((16, 16), 32, (3, 3), (2, 2), (0, 0, 1, 1)),  # TF 'same' stride 2
    ((9, 7), 5, (3, 3), (1, 1), (1, 1, 1, 1)),  # one full group + a 1-channel tail
    ((7, 9), 6, (3, 3), (2, 2), (1, 1, 1, 1)),  # 2-channel tail, stride 2
    ((8, 8), 7, (5, 5), (1, 1), (2, 2, 2, 2)),  # 5x5 same, 3-channel tail
    ((6, 7), 3, (3, 3), (1, 1), (0, 0, 0, 0)),  # only a tail group
    ((9, 7), 12, (3, 2), (1, 2), (0, 1, 2, 0)),  # asymmetric kernel, strides, pads
    ((3, 3), 4, (3, 3), (1, 1), (0, 0, 0, 0)),  # one output pixel
    ((5, 6), 2, (2, 2), (1, 1), (0, 0, 1, 1)),  # even taps, 2 channels
    ((4, 4), 9, (3, 3), (1, 1), (3, 3, 3, 3)),  # windows wholly inside the padding
    ((11, 10), 17, (1, 1), (3, 1), (1, 0, 1, 2)),  # 1x1, odd pads
    ((2, 13), 16, (1, 7), (1, 3), (0, 3, 0, 3)),  # 1x7 row kernel, stride 3
]


@pytest.mark.parametrize("case", range(len(SHAPES)))
@pytest.mark.parametrize("act", [Activation.RELU, Activation.NONE, Activation.RELU6])
def test_host_matches_reference(host_lib: ctypes.CDLL, case: int, act: Activation) -> None:
    hw, c, k, strides, pads = SHAPES[case]
    rng = np.random.default_rng(100 + case)
    g = dw_graph(rng, hw, c, k, strides, pads, act)
    modes = {dw_mode(conv_params(g.nodes[0], g)), 0}
    x = rng.integers(-128, 128, size=(2, *hw, c)).astype(np.int8)
    want = compile_ref(g).run(x)[0]
    for fast in modes:
        np.testing.assert_array_equal(run_host(host_lib, g, x, fast), want)


def test_fast_modes_are_exercised() -> None:
    """Mode 2 (ReLU, out_zp -128), 1 (ReLU6 clamping at 127), 0 (ReLU6 below 127) occur."""
    rng = np.random.default_rng(4)
    seen = {dw_mode(conv_params(g.nodes[0], g)) for g in (
        dw_graph(rng, (6, 6), 8, (3, 3), out_zp=-128),
        dw_graph(rng, (6, 6), 8, (3, 3), act=Activation.RELU6),
        dw_graph(rng, (6, 6), 8, (3, 3), act=Activation.RELU6, out_zp=-128, out_scale=0.05))}
    assert seen == {0, 1, 2}


@pytest.mark.parametrize("in_zp", [-128, 127, 0])
@pytest.mark.parametrize("out_zp", [-128, 127])
def test_host_extreme_zero_points(host_lib: ctypes.CDLL, in_zp: int, out_zp: int) -> None:
    rng = np.random.default_rng(1000 + in_zp + out_zp)
    g = dw_graph(rng, (6, 7), 7, (3, 3), (1, 1), (1, 1, 1, 1), Activation.NONE, in_zp, out_zp)
    xs = [np.full((1, 6, 7, 7), v, np.int8) for v in (-128, 127)]
    xs.append(rng.integers(-128, 128, size=(1, 6, 7, 7)).astype(np.int8))
    for x in xs:
        want = compile_ref(g).run(x)[0]
        for fast in {dw_mode(conv_params(g.nodes[0], g)), 0}:
            np.testing.assert_array_equal(run_host(host_lib, g, x, fast), want)


def test_plugin_chosen_on_dsp_cores_only() -> None:
    rng = np.random.default_rng(0)
    g = dw_graph(rng, (8, 8), 8, (3, 3), pads=(1, 1, 1, 1))
    assert select_kernel(g.nodes[0], g, M4, widened=True).name == FastDepthwiseConv.name
    assert select_kernel(g.nodes[0], g, M4).name != FastDepthwiseConv.name  # int8 by default
    m0 = get_core("cortex-m0plus")
    assert select_kernel(g.nodes[0], g, m0, widened=True).name == "edgenn_dwconv_s8"
    g2 = dw_graph(rng, (8, 8), 4, (3, 3), mult=2)  # depth multiplier 2: not this kernel
    assert select_kernel(g2.nodes[0], g2, M4, widened=True).name != FastDepthwiseConv.name


# ---- emulator: the real Thumb-2 build -------------------------------------------------------

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


def mobilenet_block(rng: np.random.Generator, hw: int = 12, c: int = 11) -> Graph:
    """conv 3x3 (3 -> c, ReLU6) -> depthwise 3x3 stride 2 (ReLU6) -> pointwise 1x1 (c -> 16)."""
    def q(scale: float, zp: int) -> QuantParams:
        return QuantParams.per_tensor(float(np.float32(scale)), zp)

    x = Tensor("x", (1, hw, hw, 3), DType.INT8, q(0.02, -3))
    w1 = rng.integers(-127, 128, size=(c, 3, 3, 3)).astype(np.int8)
    w1t = Tensor("w1", w1.shape, DType.INT8, _wq(rng, c), w1)
    b1 = Tensor.const("b1", rng.integers(-2000, 2000, size=c).astype(np.int32))
    conv = Node("conv", "Conv2D", ("x", "w1", "b1"), ("a",),
                {"strides": (1, 1), "pads": (1, 1, 1, 1), "activation": Activation.RELU6})
    a = Tensor("a", (1, hw, hw, c), DType.INT8, q(6 / 255, -128))
    dw, dconsts = dw_node(rng, "dw", "a", "b", c, (3, 3), (2, 2), (0, 0, 1, 1),
                          Activation.RELU6)
    oh = -(-hw // 2)
    b = Tensor("b", (1, oh, oh, c), DType.INT8, q(6 / 255, -128))
    w3 = rng.integers(-127, 128, size=(16, 1, 1, c)).astype(np.int8)
    w3t = Tensor("w3", w3.shape, DType.INT8, _wq(rng, 16), w3)
    b3 = Tensor.const("b3", rng.integers(-2000, 2000, size=16).astype(np.int32))
    pw = Node("pw", "Conv2D", ("b", "w3", "b3"), ("y",),
              {"strides": (1, 1), "pads": (0, 0, 0, 0), "activation": Activation.NONE})
    y = Tensor("y", (1, oh, oh, 16), DType.INT8, q(0.1, 4))
    tensors = [x, w1t, b1, a, *dconsts, b, w3t, b3, y]
    return Graph("mnblock", {t.name: t for t in tensors}, (conv, dw, pw), ("x",), ("y",))


def _compile(g: Graph):  # type: ignore[no-untyped-def]
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    return compile_model(g, target="cortex-m4", widen="all")  # the int16-weight kernels under test


@needs_arm
def test_emulator_single_layers_match_reference() -> None:
    rng = np.random.default_rng(21)
    for g in (dw_graph(rng, (9, 7), 5, (3, 3), (1, 1), (1, 1, 1, 1)),
              dw_graph(rng, (10, 10), 8, (3, 3), (2, 2), (0, 0, 1, 1), out_zp=-128),
              dw_graph(rng, (8, 8), 7, (5, 5), (1, 1), (2, 2, 2, 2), Activation.NONE),
              dw_graph(rng, (7, 6), 9, (3, 3), (1, 1), (1, 1, 1, 1), Activation.RELU6,
                       out_zp=-128, out_scale=0.05)):  # exact requantization (mode 0)
        exe = _compile(g)
        assert [m["kernel"] for m in exe.manifest["layers"]] == [FastDepthwiseConv.name]
        x = rng.integers(-128, 128, size=(2, *g.tensor("x").shape[1:])).astype(np.int8)
        np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])


@needs_arm
def test_emulator_mobilenet_block_matches_reference() -> None:
    rng = np.random.default_rng(8)
    g = mobilenet_block(rng)
    exe = _compile(g)
    kernels = {str(m["name"]): str(m["kernel"]) for m in exe.manifest["layers"]}
    assert kernels["dw"] == FastDepthwiseConv.name, kernels
    x = rng.integers(-128, 128, size=(3, 12, 12, 3)).astype(np.int8)
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])


@needs_arm
def test_emulator_dwsep_model_matches_reference() -> None:
    from edgenn.api import load_model

    g = load_model(FIXTURES / "dwsep_int8.tflite")
    exe = _compile(g)
    dw_layers = [m for m in exe.manifest["layers"] if m["kernel"] == FastDepthwiseConv.name]
    assert len(dw_layers) == 1, exe.manifest["layers"]
    name = g.inputs[0]
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, size=(3, *g.tensor(name).shape[1:])).astype(np.int8)
    perm = g.external_perm.get(name) if g.external_perm else None
    if perm is not None:
        x = np.ascontiguousarray(x.transpose(perm))
    for a, b in zip(exe.run(x), compile_ref(g).run(x), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
