"""conv_gemm_s8 (generated int8 general Conv2D, 4x2 SMLAD) against the reference runtime.

Host part: the per-layer C the plug-in generates (plain-C twins of the asm, edgenn_acle.h's
shims) is compiled with the host gcc, several layers in one library, and called through
ctypes; every output must equal the numpy reference runtime's (bit-exact with TFLite Micro).
Emulator part: one-layer graphs compiled for cortex-m4 (the Thumb-2 build with the
hand-scheduled asm) with only this kernel and the portable one registered for Conv2D, so
shapes that other kernels would claim (one input channel) still exercise this one.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from edgenn.backends.cortexm import kernel as kernel_registry
from edgenn.backends.cortexm import selection
from edgenn.backends.cortexm.codegen.emit import array_decl
from edgenn.backends.cortexm.codesize import compact_code
from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.kernels.conv_gemm import (
    COMPACT_UNROLL,
    ConvGemm,
    _loop_shape,
    arena_room,
    layer_plan_of,
    scratch_bytes,
)
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
M4 = get_core("cortex-m4")
KERNEL = ConvGemm()


class Case(NamedTuple):
    hw: tuple[int, int]
    cin: int
    cout: int
    k: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dil: tuple[int, int] = (1, 1)
    act: Activation = Activation.RELU
    out_zp: int | None = None
    signed: bool = False  # a weight pair that packed-pair weights cannot hold (w1 = -128)
    wmax: int = 127  # weights in [-wmax, wmax]: small keeps long K within packed_ok's bound


CASES = [
    Case((10, 9), 16, 16, (3, 3), pads=(1, 1, 1, 1), out_zp=-128),  # 2x4 packed, row loop
    Case((13, 12), 3, 8, (3, 3), (2, 2), (0, 0, 1, 1)),  # first-layer like, Cin 3
    Case((13, 10), 1, 8, (10, 4), (2, 2), (4, 1, 5, 2)),  # Cin 1, tall kernel
    Case((11, 9), 5, 7, (2, 3), (1, 2), (0, 1, 1, 0), (2, 1)),  # odd, dilated, asymmetric
    Case((7, 8), 32, 15, (3, 3), pads=(1, 1, 1, 1), out_zp=5),  # mode 1, Cout % 4, K loop
    Case((6, 6), 24, 14, (3, 3), (2, 1), (1, 1, 1, 1), act=Activation.RELU_N1_TO_1),  # exact
    Case((3, 2), 4, 6, (2, 2)),  # 2 output pixels (< one block)
    Case((9, 9), 3, 5, (7, 7), (1, 1), (3, 3, 3, 3), act=Activation.NONE),
    Case((8, 5), 2, 12, (1, 3), (1, 1), (0, 1, 0, 1)),  # tiny K
    Case((6, 7), 6, 4, (5, 1), (1, 1), (2, 0, 2, 0), (1, 1), Activation.NONE),
    Case((5, 5), 64, 12, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-128),  # K 576, long loop
    Case((4, 4), 7, 3, (2, 2), (2, 2)),
    Case((6, 7), 8, 6, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-128, signed=True),
    Case((5, 6), 4, 5, (2, 2), out_zp=3, signed=True),  # signed, mode 1, odd Cout
    Case((9, 8), 8, 10, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), out_zp=-100),  # dilated rows
    Case((6, 5), 5, 6, (3, 2), (2, 1), (1, 0, 1, 1), out_zp=-90, signed=True),
    Case((4, 5), 128, 8, (3, 3), pads=(1, 1, 1, 1), out_zp=-128, wmax=40),  # 2x4 packed
    Case((4, 3), 120, 8, (3, 3), pads=(0, 1, 1, 0), out_zp=4, wmax=40),  # 2x4, mode 1
]


def conv_graph(rng: np.random.Generator, c: Case) -> Graph:
    """One int8 Conv2D node with random weights, per-channel scales, bias and zero points."""
    in_zp = int(rng.integers(-128, 128))
    out_zp = int(rng.integers(-20, 20)) if c.out_zp is None else c.out_zp
    w = rng.integers(-c.wmax, c.wmax + 1, size=(c.cout, *c.k, c.cin)).astype(np.int8)
    if c.signed:
        w[0, 0, 0, 0], w[1, 0, 0, 0] = -5, -128
    wq = QuantParams(rng.uniform(0.002, 0.02, c.cout).astype(np.float32),
                     np.zeros(c.cout, np.int64), 0)
    x = Tensor("x", (1, *c.hw, c.cin), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    wt = Tensor("w", w.shape, DType.INT8, wq, w)
    bt = Tensor.const("b", rng.integers(-20000, 20000, size=c.cout).astype(np.int32))
    node = Node("conv", "Conv2D", ("x", "w", "b"), ("y",),
                {"strides": c.strides, "pads": c.pads, "dilations": c.dil, "activation": c.act})
    tensors = [x, wt, bt]
    ((shape, dtype),) = infer(node, tensors)
    out_scale = float(np.float32(0.05 * 0.01 * np.sqrt(c.k[0] * c.k[1] * c.cin) * 4))
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(out_scale, out_zp))
    return Graph("g", {t.name: t for t in (*tensors, y)}, (node,), ("x",), ("y",))


def test_matches_refuses_1x1_and_grouped() -> None:
    rng = np.random.default_rng(0)
    assert KERNEL.matches(conv_graph(rng, CASES[0]).nodes[0], conv_graph(rng, CASES[0]), M4)
    g = conv_graph(rng, Case((5, 5), 8, 8, (1, 1)))
    assert not KERNEL.matches(g.nodes[0], g, M4)
    assert not KERNEL.matches(g.nodes[0], g, get_core("cortex-m0plus"))


def test_arena_room_zero_on_the_largest_layer() -> None:
    """A one-layer model has no room: large 4-pixel patches stay off (arena <= CMSIS-NN's)."""
    g = conv_graph(np.random.default_rng(5), CASES[4])
    assert arena_room(g.nodes[0], g) == 0


def test_cases_cover_every_variant() -> None:
    rng = np.random.default_rng(1)
    seen = set()
    for c in CASES:
        g = conv_graph(rng, c)
        plan = layer_plan_of(conv_params(g.nodes[0], g))
        seen.add((plan.mode, plan.packed, plan.pixels))
    want = {(0, False, 4), (1, False, 4), (2, False, 4), (1, True, 2), (2, True, 2),
            (2, True, 4), (1, True, 4)}
    assert want <= seen, want - seen


@pytest.fixture(scope="module", params=[False, True], ids=["fast", "compact"])
def host_lib(tmp_path_factory: pytest.TempPathFactory,
             request: pytest.FixtureRequest) -> tuple[ctypes.CDLL, list[Graph]]:
    """Every case's generated C in one host library: layer i is ``L<i>_run``; fast and compact
    code (``codesize.compact_code``)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    rng = np.random.default_rng(2)
    graphs = [conv_graph(rng, c) for c in CASES]
    parts = ['#include "edgenn_conv_s8_gemm_dsp.h"\n']
    for i, g in enumerate(graphs):
        with compact_code(request.param):
            call = KERNEL.prepare(g.nodes[0], g, M4)
        prefix = f"L{i}"
        parts += [array_decl(f"{prefix}_{a.name}", a) for a in call.arrays]
        parts.append(call.code.replace("@P@", prefix))
        parts.append(f"void {prefix}_run(const int8_t *in, int8_t *out, void *scratch)\n"
                     f"{{ {prefix}_conv(in, out, scratch); }}\n")
    tmp = tmp_path_factory.mktemp(f"conv_gemm_{int(request.param)}")
    src = tmp / "layers.c"
    src.write_text("\n".join(parts))
    so = tmp / "layers.so"
    subprocess.run([cc, "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", "-shared",
                    "-fPIC", f"-I{C_DIR}", str(src), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so)), graphs


@pytest.mark.parametrize("case", range(len(CASES)))
def test_host_matches_reference(host_lib: tuple[ctypes.CDLL, list[Graph]], case: int) -> None:
    lib, graphs = host_lib
    g = graphs[case]
    p = conv_params(g.nodes[0], g)
    rng = np.random.default_rng(30 + case)
    for x_fill in (None, -128, 127):
        shape = (1, p.in_h, p.in_w, p.in_c)
        x = (rng.integers(-128, 128, size=shape) if x_fill is None
             else np.full(shape, x_fill)).astype(np.int8)
        out = np.zeros((1, p.out_h, p.out_w, p.out_c), np.int8)
        scratch = np.zeros(scratch_bytes(p) // 4 + 1, np.uint32)
        getattr(lib, f"L{case}_run")(ctypes.c_void_p(x.ctypes.data),
                                     ctypes.c_void_p(out.ctypes.data),
                                     ctypes.c_void_p(scratch.ctypes.data))
        np.testing.assert_array_equal(out, compile_ref(g).run(x)[0])


needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


@needs_arm
def test_emulator_matches_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """All cases in one firmware each, this kernel forced (the portable one as fallback)."""
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm

    portable = [k for k in selection.kernels_for("Conv2D") if k.priority == 0]
    monkeypatch.setitem(kernel_registry._KERNELS, "Conv2D", [KERNEL, *portable])
    rng = np.random.default_rng(3)
    for c in CASES:
        g = conv_graph(rng, c)
        exe = compile_cortexm(g, "cortex-m4")
        assert [str(m["kernel"]) for m in exe.manifest["layers"]] == [KERNEL.name]
        x = rng.integers(-128, 128, size=(2, *c.hw, c.cin)).astype(np.int8)
        x[1] = -128  # the extreme input (every padding tap differs from it but in_zp -128)
        np.testing.assert_array_equal(exe.run(x)[0], compile_ref(g).run(x)[0], err_msg=str(c))


def test_k_loop_shapes() -> None:
    """Default code keeps the U-step loop count with fewer straight steps than loops; compact
    code loops over COMPACT_UNROLL steps whose partial iteration is entered by a branch."""
    for s in range(2, 400):
        kl = _loop_shape(s)
        assert kl.straight + kl.loops * kl.u == s - 1
        assert kl.loops == 0 or kl.straight < kl.loops
        with compact_code():
            kc = _loop_shape(s)
        assert kc.straight + kc.loops * kc.u - kc.skip == s - 1
        assert kc.u == COMPACT_UNROLL and kc.straight <= COMPACT_UNROLL


@needs_arm
def test_emulator_compact_matches_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compact code (K loops with a branch into the partial iteration, one shared row copy)
    in the emulator, on the cases with long K or dense rows."""
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm import executable

    portable = [k for k in selection.kernels_for("Conv2D") if k.priority == 0]
    monkeypatch.setitem(kernel_registry._KERNELS, "Conv2D", [KERNEL, *portable])
    rng = np.random.default_rng(4)
    for i in (0, 2, 4, 5, 7, 10, 14):
        c = CASES[i]
        g = conv_graph(rng, c)
        exe = executable.compile_cortexm(g, "cortex-m4", compact=True)
        assert exe.manifest["compact_layers"] == [0]
        x = rng.integers(-128, 128, size=(2, *c.hw, c.cin)).astype(np.int8)
        x[1] = -128
        np.testing.assert_array_equal(exe.run(x)[0], compile_ref(g).run(x)[0], err_msg=str(c))
