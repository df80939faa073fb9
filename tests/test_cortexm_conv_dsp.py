"""The Cortex-M DSP conv kernel (c/edgenn_conv_s8_dsp.c) against the reference runtime, bit for bit.

The C is built for the host (plain-C fallbacks of SMLAD/SXTB16 in edgenn_acle.h) and called
through ctypes with the weights packed by kernels/conv_dsp.py; a few shapes also run the real
Thumb-2 build (hand-written SMLAD assembly) in the emulator.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgenn.arith.fixed_point import quantize_multiplier  # noqa: F401
from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.kernels.conv_dsp import (
    DspConv,
    call_args,
    fast_mode,
    fast_requant_ok,
    pack_weights,
    quant_records,
    scratch_bytes,
)
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"


def conv_graph(
    rng: np.random.Generator,
    hw: tuple[int, int],
    cin: int,
    cout: int,
    k: tuple[int, int],
    strides: tuple[int, int] = (1, 1),
    pads: tuple[int, int, int, int] = (0, 0, 0, 0),
    act: Activation = Activation.RELU,
    in_zp: int | None = None,
) -> Graph:
    """A one-Conv2D int8 graph with random weights, per-channel scales and bias."""
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    w = rng.integers(-127, 128, size=(cout, *k, cin)).astype(np.int8)
    b = rng.integers(-20000, 20000, size=cout).astype(np.int32)
    w_scales = rng.uniform(0.002, 0.02, size=cout).astype(np.float32)
    wq = QuantParams(w_scales, np.zeros(cout, np.int64), 0)
    x = Tensor("x", (1, *hw, cin), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    wt = Tensor("w", w.shape, DType.INT8, wq, w)
    bt = Tensor.const("b", b)
    node = Node("conv", "Conv2D", ("x", "w", "b"), ("y",),
                {"strides": strides, "pads": pads, "activation": act})
    ((shape, dtype),) = infer(node, [x, wt, bt])
    out_scale = float(np.float32(0.05 * 0.01 * np.sqrt(k[0] * k[1] * cin) * 4))
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(out_scale, int(rng.integers(-20, 20))))
    return Graph("g", {t.name: t for t in (x, wt, bt, y)}, (node,), ("x",), ("y",))


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    so = tmp_path_factory.mktemp("conv_dsp") / "conv_dsp.so"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    str(C_DIR / "edgenn_conv_s8_dsp.c"), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def run_host(lib: ctypes.CDLL, graph: Graph, x: np.ndarray, fast: int | None = None) -> np.ndarray:
    p = conv_params(graph.nodes[0], graph)
    fast = fast_mode(p) if fast is None else fast
    w = pack_weights(p.w, 2 if fast else 1)
    quant = quant_records(p, fast)
    out = np.zeros((p.out_h, p.out_w, p.out_c), np.int8)
    scratch = np.zeros(scratch_bytes(p.k_h, p.k_w, p.in_c) // 4 + 1, np.uint32)
    xc = np.ascontiguousarray(x.reshape(p.in_h, p.in_w, p.in_c))

    def ptr(a: np.ndarray) -> ctypes.c_void_p:
        return ctypes.c_void_p(a.ctypes.data)

    lib.edgenn_conv_s8_dsp(ptr(xc), ptr(out), ptr(scratch), ptr(w), ptr(quant),
                           *(ctypes.c_int(v) for v in call_args(p, fast)))
    return out[None]


SHAPES = [
    # hw, cin, cout, k, strides, pads
    ((28, 28), 1, 16, (3, 3), (1, 1), (0, 0, 0, 0)),  # model A conv1
    ((12, 11), 16, 32, (3, 3), (1, 1), (0, 0, 0, 0)),  # A conv2-like
    ((10, 10), 8, 16, (3, 3), (1, 1), (1, 1, 1, 1)),  # C conv2-like, same
    ((9, 9), 1, 8, (3, 3), (1, 1), (1, 1, 1, 1)),  # C conv1-like
    ((7, 9), 3, 5, (3, 3), (2, 2), (1, 1, 1, 1)),  # odd channels, stride 2
    ((8, 8), 6, 7, (5, 5), (1, 1), (2, 2, 2, 2)),  # 5x5 same, odd K
    ((6, 7), 5, 9, (1, 1), (1, 1), (0, 0, 0, 0)),  # pointwise, odd everything
    ((6, 6), 32, 12, (1, 1), (2, 1), (0, 0, 0, 0)),  # pointwise, strided
    ((9, 7), 2, 3, (3, 2), (1, 2), (0, 1, 2, 0)),  # asymmetric kernel, stride, pads
    ((5, 5), 4, 4, (5, 5), (1, 1), (0, 0, 0, 0)),  # one output pixel (odd pixel count)
    ((11, 11), 12, 4, (3, 3), (3, 3), (1, 0, 1, 0)),  # K=108, stride 3
    ((4, 4), 64, 8, (3, 3), (1, 1), (1, 1, 1, 1)),  # long K (576) with padding
]


@pytest.mark.parametrize("case", range(len(SHAPES)))
@pytest.mark.parametrize("act", [Activation.RELU, Activation.NONE])
def test_host_build_matches_reference(host_lib: ctypes.CDLL, case: int, act: Activation) -> None:
    hw, cin, cout, k, strides, pads = SHAPES[case]
    rng = np.random.default_rng(100 + case)
    g = conv_graph(rng, hw, cin, cout, k, strides, pads, act)
    assert fast_requant_ok(conv_params(g.nodes[0], g))
    for _ in range(2):
        x = rng.integers(-128, 128, size=(1, *hw, cin)).astype(np.int8)
        want = compile_ref(g).run(x)[0]
        np.testing.assert_array_equal(run_host(host_lib, g, x), want)
        np.testing.assert_array_equal(run_host(host_lib, g, x, fast=0), want)


@pytest.mark.parametrize("in_zp", [-128, 127, 0])
def test_extreme_zero_points_and_inputs(host_lib: ctypes.CDLL, in_zp: int) -> None:
    rng = np.random.default_rng(7)
    g = conv_graph(rng, (6, 6), 4, 6, (3, 3), (1, 1), (1, 1, 1, 1), in_zp=in_zp)
    for x_val in (-128, 127):
        x = np.full((1, 6, 6, 4), x_val, np.int8)
        np.testing.assert_array_equal(run_host(host_lib, g, x), compile_ref(g).run(x)[0])


def test_plugin_matches_only_dsp_cores() -> None:
    g = conv_graph(np.random.default_rng(0), (8, 8), 4, 8, (3, 3))
    node = g.nodes[0]
    kern = DspConv()
    assert kern.matches(node, g, get_core("cortex-m4"))
    assert not kern.matches(node, g, get_core("cortex-m0plus"))
    call = kern.prepare(node, g, get_core("cortex-m4"))
    assert call.scratch_bytes == 8 * 18
    assert call.arrays[0].values.dtype == np.uint32 and call.arrays[0].values.size == 2 * 18 * 4
    assert call.arrays[1].values.size == 8 * 4 and call.call.endswith(", 1);")


def test_pack_weights_pair_order() -> None:
    # 1 channel, one row of 4 bytes: patch order 0, 2, 1, 3 -> pairs (w0, w2), (w1, w3)
    w = np.array([1, 2, 3, -4], np.int8).reshape(1, 1, 1, 4)
    words = pack_weights(w).reshape(1, 2, 4)[0, :, 0]
    assert words[0] == (1 | (3 << 16)) and words[1] == (2 | ((-4 & 0xFFFF) << 16))


def _bench_module():  # type: ignore[no-untyped-def]
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "cortexm_conv_kernels.py"
    spec = importlib.util.spec_from_file_location("cortexm_conv_kernels", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # why: @dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_thumb2_build_in_emulator_matches_reference(tmp_path: Path) -> None:
    pytest.importorskip("unicorn")
    bench_mod = _bench_module()
    bench = bench_mod.Bench(bench_mod.build_firmware(tmp_path))
    cases = [SHAPES[2], SHAPES[4], SHAPES[5], SHAPES[11], ((10, 10), 16, 8, (3, 3), (1, 1),
                                                          (0, 0, 0, 0))]  # K=144: x8 loop
    for i, (hw, cin, cout, k, strides, pads) in enumerate(cases):
        rng = np.random.default_rng(200 + i)
        for act in (Activation.RELU, Activation.NONE, Activation.RELU6):
            g = conv_graph(rng, hw, cin, cout, k, strides, pads, act)
            x = rng.integers(-128, 128, size=(1, *hw, cin)).astype(np.int8)
            want = compile_ref(g).run(x)[0]
            got, cycles, _ = bench.run(g, x)
            np.testing.assert_array_equal(got, want)
            assert cycles > 0
