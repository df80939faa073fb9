"""The DSP MaxPool2D kernel of the Cortex-M backend against the reference runtime, bit for bit.

Host part: c/edgenn_maxpool_s8_dsp.c is compiled with the host gcc (plain-C shims of the SIMD
instructions in edgenn_acle.h) and called through ctypes with the arguments the plug-in
generates, on many shapes including odd sizes and clipped windows; every output must equal the
numpy reference runtime's (itself bit-exact with TFLite Micro). Emulator part: whole graphs
compiled for cortex-m4 (the real Thumb-2 build) must give the reference's outputs too.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
M4 = get_core("cortex-m4")


def _graph(node: Node, tensors: list[Tensor], out_scale: float, out_zp: int) -> Graph:
    ((shape, dtype),) = infer(node, tensors)
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(float(np.float32(out_scale)), out_zp))
    return Graph("g", {t.name: t for t in (*tensors, y)}, (node,), ("x",), ("y",))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


def _emulated(g: Graph, x: np.ndarray) -> np.ndarray:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    exe = compile_model(g, target="cortex-m4")
    return np.asarray(exe.run(x)[0])


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
