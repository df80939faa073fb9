"""depthwise_s8 (int8 depthwise Conv2D on an int16 plane, SMLAD tap pairs) vs the reference.

Host part: the C the generator emits for a layer, built with the host gcc (plain-C twins of
the DSP instructions) and called through ctypes, on many shapes: odd and single channel
counts, depth multipliers, non-square kernels, strides, dilations, asymmetric and oversized
padding, and every requantization mode (3 uniform shift, 1/2 fast, 0 exact). Emulator part:
the real Thumb-2 build (cortex-m4) of single layers and a whole model, with this kernel chosen.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.emit import array_decl
from edgenn.backends.cortexm.kernels.conv import conv_params
from edgenn.backends.cortexm.kernels.depthwise import (
    UNIFORM,
    DepthwiseConv,
    plan_layer,
    row_code,
)
from edgenn.backends.cortexm.kernels.read_channels import read_channels
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"
M4 = get_core("cortex-m4")


def dw_graph(rng: np.random.Generator, hw: tuple[int, int], c: int, k: tuple[int, int],
             strides: tuple[int, int] = (1, 1), pads: tuple[int, int, int, int] = (0,) * 4,
             act: Activation = Activation.RELU, in_zp: int | None = None,
             out_zp: int | None = None, mult: int = 1, dil: tuple[int, int] = (1, 1),
             wide_shift: bool = False, out_scale: float | None = None) -> Graph:
    """One int8 depthwise Conv2D (weights [C*mult, KH, KW, 1]) with random constants."""
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    out_zp = int(rng.integers(-20, 20)) if out_zp is None else out_zp
    cout = c * mult
    w = rng.integers(-127, 128, size=(cout, *k, 1)).astype(np.int8)
    scales = rng.uniform(0.002, 0.02, cout)
    if wide_shift:  # per-channel shifts far apart: the uniform-shift mode cannot apply
        scales[0] *= 1e-4
    wt = Tensor("w", w.shape, DType.INT8,
                QuantParams(scales.astype(np.float32), np.zeros(cout, np.int64), 0), w)
    bt = Tensor.const("b", rng.integers(-20000, 20000, size=cout).astype(np.int32))
    x = Tensor("x", (1, *hw, c), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    node = Node("dw", "Conv2D", ("x", "w", "b"), ("y",),
                {"strides": strides, "pads": pads, "activation": act, "groups": c,
                 "dilations": dil})
    ((shape, dtype),) = infer(node, [x, wt, bt])
    if out_scale is None:
        out_scale = 0.05 * 0.01 * np.sqrt(k[0] * k[1]) * 4
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(float(np.float32(out_scale)), out_zp))
    return Graph("g", {t.name: t for t in (x, wt, bt, y)}, (node,), ("x",), ("y",))


# hw, channels, kernel, strides, pads, depth multiplier, dilation
SHAPES = [
    ((12, 12), 16, (3, 3), (1, 1), (1, 1, 1, 1), 1, (1, 1)),
    ((16, 16), 32, (3, 3), (2, 2), (0, 0, 1, 1), 1, (1, 1)),  # TF 'same' stride 2
    ((25, 5), 9, (3, 3), (1, 1), (1, 1, 1, 1), 1, (1, 1)),  # width 5, odd channels
    ((9, 7), 5, (3, 3), (1, 1), (1, 1, 1, 1), 1, (1, 1)),
    ((7, 9), 6, (3, 3), (2, 2), (1, 1, 1, 1), 1, (1, 1)),
    ((8, 8), 7, (5, 5), (1, 1), (2, 2, 2, 2), 1, (1, 1)),
    ((6, 7), 3, (3, 3), (1, 1), (0, 0, 0, 0), 1, (1, 1)),
    ((9, 7), 12, (3, 2), (1, 2), (0, 1, 2, 0), 1, (1, 1)),  # asymmetric kernel, strides, pads
    ((3, 3), 4, (3, 3), (1, 1), (0, 0, 0, 0), 1, (1, 1)),  # one output pixel
    ((5, 6), 2, (2, 2), (1, 1), (0, 0, 1, 1), 1, (1, 1)),  # even taps
    ((4, 4), 9, (3, 3), (1, 1), (3, 3, 3, 3), 1, (1, 1)),  # windows wholly in the padding
    ((11, 10), 17, (1, 1), (3, 1), (1, 0, 1, 2), 1, (1, 1)),  # 1x1, odd pads
    ((2, 13), 16, (1, 7), (1, 3), (0, 3, 0, 3), 1, (1, 1)),  # 1x7 row kernel, stride 3
    ((10, 6), 1, (4, 3), (2, 1), (1, 1, 2, 1), 8, (1, 1)),  # one input channel, multiplier 8
    ((7, 8), 3, (3, 3), (1, 1), (1, 1, 1, 1), 3, (1, 1)),  # depth multiplier 3
    ((11, 12), 5, (3, 3), (1, 1), (2, 2, 2, 2), 1, (2, 2)),  # dilation 2
    ((9, 13), 4, (2, 3), (1, 2), (0, 1, 1, 3), 2, (2, 3)),  # dilation, stride, multiplier
    ((3, 3), 256, (3, 3), (1, 1), (1, 1, 1, 1), 1, (1, 1)),  # tiny plane, many channels
    ((5, 11), 1, (10, 4), (2, 2), (4, 1, 5, 2), 4, (1, 1)),  # a KWS-like first layer
    ((6, 5), 3, (3, 7), (1, 1), (1, 6, 2, 5), 1, (1, 1)),  # border strips wider than 4
    ((7, 26), 4, (3, 3), (1, 1), (1, 1, 1, 1), 1, (1, 1)),  # 6-output steps + remainder 2
    # tall narrow maps: planned with H and W swapped (plan_layer), see TRANSPOSED below
    ((31, 6), 5, (3, 3), (2, 2), (0, 0, 1, 1), 1, (1, 1)),  # stride 2, TF 'same' padding
    ((20, 4), 3, (3, 3), (1, 1), (1, 1, 1, 1), 2, (1, 1)),  # depth multiplier, odd channels
    ((23, 5), 4, (3, 2), (1, 1), (1, 0, 1, 1), 1, (1, 1)),  # asymmetric kernel and padding
    ((30, 3), 7, (5, 3), (1, 1), (2, 1, 2, 1), 1, (1, 1)),  # 5x3, odd width
]
TRANSPOSED = range(len(SHAPES) - 4, len(SHAPES))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def host_run(tmp: Path, g: Graph, x: np.ndarray) -> np.ndarray:
    """The generated layer C built with the host gcc, run on each batch item."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    call = DepthwiseConv().prepare(g.nodes[0], g, M4)
    src = ['#include "edgenn_dwconv_s8_gen_dsp.h"']
    src += [array_decl(f"L_{a.name}", a) for a in call.arrays]
    src.append(call.code.replace("@P@", "L"))
    src.append("void run(const int8_t *in, int8_t *out, int16_t *s) { L_dw(in, out, s); }")
    # why a fresh name per build: dlopen returns the already loaded library for a known path
    n = len(list(tmp.glob("layer*.c")))
    c_file = tmp / f"layer{n}.c"
    c_file.write_text("\n".join(src) + "\n")
    so = tmp / f"layer{n}.so"
    subprocess.run([cc, "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function",
                    "-shared", "-fPIC", f"-I{C_DIR}", str(c_file), "-o", str(so)], check=True)
    lib = ctypes.CDLL(str(so))
    p = conv_params(g.nodes[0], g)
    outs = []
    for item in x:
        # why exact-size buffers: a write past the tensor would go unnoticed in a larger one
        xc = np.ascontiguousarray(item, dtype=np.int8)
        out = np.zeros((p.out_h, p.out_w, p.out_c), np.int8)
        scratch = np.zeros(call.scratch_bytes // 2, np.int16)
        lib.run(_ptr(xc), _ptr(out), _ptr(scratch))
        outs.append(out)
    return np.stack(outs)


@pytest.mark.parametrize("case", range(len(SHAPES)))
@pytest.mark.parametrize("act", [Activation.RELU, Activation.NONE, Activation.RELU6])
def test_host_matches_reference(tmp_path: Path, case: int, act: Activation) -> None:
    hw, c, k, strides, pads, mult, dil = SHAPES[case]
    rng = np.random.default_rng(300 + case)
    # out_zp -128 with ReLU makes the uniform-shift mode possible; others take 0/1/2
    out_zp = -128 if act is Activation.RELU else None
    g = dw_graph(rng, hw, c, k, strides, pads, act, out_zp=out_zp, mult=mult, dil=dil)
    x = rng.integers(-128, 128, size=(2, *hw, c)).astype(np.int8)
    np.testing.assert_array_equal(host_run(tmp_path, g, x), compile_ref(g).run(x)[0])


@pytest.mark.parametrize("in_zp,out_zp", [(-128, -128), (127, 127), (0, -128), (-128, 100)])
def test_host_extreme_zero_points(tmp_path: Path, in_zp: int, out_zp: int) -> None:
    rng = np.random.default_rng(7)
    for act in (Activation.RELU, Activation.NONE):
        g = dw_graph(rng, (7, 6), 5, (3, 3), (1, 1), (1, 1, 1, 1), act, in_zp, out_zp)
        for x in (np.full((1, 7, 6, 5), -128, np.int8), np.full((1, 7, 6, 5), 127, np.int8),
                  rng.integers(-128, 128, size=(1, 7, 6, 5)).astype(np.int8)):
            np.testing.assert_array_equal(host_run(tmp_path, g, x), compile_ref(g).run(x)[0])


def test_requant_modes_are_exercised(tmp_path: Path) -> None:
    """Uniform shift (3), fast (2 and 1) and exact (0) all occur and all are exact."""
    rng = np.random.default_rng(11)
    cases = {
        UNIFORM: dw_graph(rng, (6, 6), 4, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-128),
        2: dw_graph(rng, (6, 6), 4, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-128,
                    wide_shift=True),
        1: dw_graph(rng, (6, 6), 4, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-100,
                    wide_shift=True),
        # ReLU6 clamping below 127: SSAT alone cannot clamp, the exact path runs
        0: dw_graph(rng, (6, 6), 4, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=0,
                    act=Activation.RELU6, out_scale=0.1),
    }
    for mode, g in cases.items():
        plan = plan_layer(conv_params(g.nodes[0], g))
        assert plan.mode == mode
        x = rng.integers(-128, 128, size=(2, 6, 6, 4)).astype(np.int8)
        np.testing.assert_array_equal(host_run(tmp_path, g, x), compile_ref(g).run(x)[0])


def test_identical_layers_share_their_functions(tmp_path: Path) -> None:
    """Two layers of one shape and constants (other weights): one copy of the functions
    (the ``#ifndef`` guard), each layer's ``@P@_dw`` passes its own arrays; both exact."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    rng = np.random.default_rng(21)
    graphs = [dw_graph(rng, (6, 6), 8, (3, 3), (1, 1), (1, 1, 1, 1), in_zp=3, out_zp=-128,
                       out_scale=0.02) for _ in range(2)]
    calls = [DepthwiseConv().prepare(g.nodes[0], g, M4) for g in graphs]
    # the code is the same up to the prefix when the shapes and the layer constants agree
    assert calls[0].code == calls[1].code
    src = ['#include "edgenn_dwconv_s8_gen_dsp.h"']
    for name, call in zip(("A", "B"), calls, strict=True):
        src += [array_decl(f"{name}_{a.name}", a) for a in call.arrays]
        src.append(call.code.replace("@P@", name))
    src.append("void run(int k, const int8_t *in, int8_t *out, int16_t *s)\n"
               "{ if (k) B_dw(in, out, s); else A_dw(in, out, s); }")
    text = "\n".join(src) + "\n"
    c_file = tmp_path / "two.c"
    c_file.write_text(text)
    # the text holds the guarded functions twice; the preprocessor keeps one copy
    pre = subprocess.run([cc, "-E", f"-I{C_DIR}", str(c_file)], check=True,
                         capture_output=True, text=True).stdout
    assert text.count("_chan(int c") == 2 and pre.count("_chan(int c") == 1
    so = tmp_path / "two.so"
    subprocess.run([cc, "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function",
                    "-shared", "-fPIC", f"-I{C_DIR}", str(c_file), "-o", str(so)], check=True)
    lib = ctypes.CDLL(str(so))
    for k, (g, call) in enumerate(zip(graphs, calls, strict=True)):
        x = rng.integers(-128, 128, size=(1, 6, 6, 8)).astype(np.int8)
        out = np.zeros((6, 6, 8), np.int8)
        scratch = np.zeros(call.scratch_bytes // 2, np.int16)
        lib.run(k, _ptr(np.ascontiguousarray(x[0])), _ptr(out), _ptr(scratch))
        np.testing.assert_array_equal(out[None], compile_ref(g).run(x)[0])


def test_row_code_pairs_taps() -> None:
    """3x3 stride 1, 4 outputs: 3 words, registers (w0, w1) and (w1, w2), 8 multiplies."""
    rc = row_code(3, 1, 1, 4)
    assert rc.regs == ((0, 1), (1, 2))
    assert rc.words == [0, 1, 2]
    assert len(rc.ops) == 8 and sum(op[1] == "d" for op in rc.ops) == 4
    # stride 2: every output starts on an even column, the third tap is single
    rc2 = row_code(3, 2, 1, 4)
    assert sum(op[1] == "d" for op in rc2.ops) == 4 and len(rc2.regs) == 2
    # dilation 2: no two taps share a word, all single
    assert all(op[1] != "d" for op in row_code(3, 1, 2, 2).ops)


def test_tall_narrow_layers_are_planned_transposed() -> None:
    """Rows of one or two steps on a much taller map run down the columns (H and W swapped,
    weights transposed); square maps, and the row-called members of fused chains (they are
    called per output row), keep their rows."""
    rng = np.random.default_rng(9)
    for case in (2, *TRANSPOSED):
        hw, c, k, strides, pads, mult, dil = SHAPES[case]
        g = dw_graph(rng, hw, c, k, strides, pads, mult=mult, dil=dil, out_zp=-128)
        p = conv_params(g.nodes[0], g)
        plan = plan_layer(p)
        assert plan.transposed and (plan.p.out_h, plan.p.out_w) == (p.out_w, p.out_h)
        assert np.array_equal(plan.p.w, p.w.transpose(0, 2, 1, 3))
        assert not plan_layer(p, allow_transpose=False).transposed
        assert "down the columns" in DepthwiseConv().prepare(g.nodes[0], g, M4).comment
        assert "down the columns" not in DepthwiseConv().prepare_rows(g.nodes[0], g, M4).comment
    g = dw_graph(rng, (12, 12), 8, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-128)
    assert not plan_layer(conv_params(g.nodes[0], g)).transposed
    # a many-channel row member keeps its int8 weights (no flash table) and its rows too
    g = dw_graph(rng, (30, 3), 120, (5, 5), (1, 1), (2, 2, 2, 2), out_zp=-128)
    rows = DepthwiseConv().prepare_rows(g.nodes[0], g, M4)
    assert rows.arrays[0].ctype == "int8_t" and "down the columns" not in rows.comment
    assert "down the columns" in DepthwiseConv().prepare(g.nodes[0], g, M4).comment


def test_plugin_chosen_on_dsp_cores_only() -> None:
    rng = np.random.default_rng(3)
    g = dw_graph(rng, (8, 8), 8, (3, 3), (1, 1), (1, 1, 1, 1))
    assert select_kernel(g.nodes[0], g, M4).name == "edgenn_dwconv_s8_gen_dsp"
    m0 = get_core("cortex-m0plus")
    assert select_kernel(g.nodes[0], g, m0).name != "edgenn_dwconv_s8_gen_dsp"


# ---- emulator: the real Thumb-2 build -------------------------------------------------------

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


def _emulated(g: Graph, x: np.ndarray) -> np.ndarray:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    exe = compile_model(g, target="cortex-m4")
    assert [str(m["kernel"]) for m in exe.manifest["layers"]] == ["edgenn_dwconv_s8_gen_dsp"]
    return np.asarray(exe.run(x)[0])


@needs_arm
@pytest.mark.parametrize("case", [0, 1, 2, 5, 7, 13, 15, 17])
def test_emulator_single_layers_match_reference(case: int) -> None:
    hw, c, k, strides, pads, mult, dil = SHAPES[case]
    rng = np.random.default_rng(500 + case)
    act = (Activation.RELU, Activation.RELU6, Activation.NONE)[case % 3]
    out_zp = -128 if case % 2 == 0 else None
    g = dw_graph(rng, hw, c, k, strides, pads, act, out_zp=out_zp, mult=mult, dil=dil)
    x = rng.integers(-128, 128, size=(2, *hw, c)).astype(np.int8)
    np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])


@needs_arm
@pytest.mark.parametrize("case", TRANSPOSED)
def test_emulator_transposed_layers_match_reference(case: int) -> None:
    """The transposed plans on the M4: asm steps (mode 3 or 2 with ReLU, out_zp -128), the
    gathers reading NHWC columns, the outputs stored down the columns."""
    hw, c, k, strides, pads, mult, dil = SHAPES[case]
    rng = np.random.default_rng(900 + case)
    g = dw_graph(rng, hw, c, k, strides, pads, Activation.RELU, out_zp=-128, mult=mult,
                 dil=dil, wide_shift=case % 2 == 1)
    assert plan_layer(conv_params(g.nodes[0], g)).transposed
    x = rng.integers(-128, 128, size=(2, *hw, c)).astype(np.int8)
    np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])


@needs_arm
def test_emulator_dwsep_model_matches_reference() -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model, load_model

    g = load_model(FIXTURES / "dwsep_int8.tflite")
    rng = np.random.default_rng(5)
    name = g.inputs[0]
    x = rng.integers(-128, 128, size=(3, *g.tensor(name).shape[1:])).astype(np.int8)
    perm = g.external_perm.get(name) if g.external_perm else None
    if perm is not None:
        x = np.ascontiguousarray(x.transpose(perm))
    exe = compile_model(g, target="cortex-m4")
    assert "edgenn_dwconv_s8_gen_dsp" in {str(m["kernel"]) for m in exe.manifest["layers"]}
    for a, b in zip(exe.run(x), compile_ref(g).run(x), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)


# shapes whose hand-scheduled paths differ: paired steps with an odd step and a remainder
# (width 11), whole narrow rows in one step (widths 5, 6), stride 2, odd channel counts (the
# single-channel gather), rows wider than one 16-pixel gather trip, 5x5, dilation
ASM_SHAPES = [
    ((9, 11), 7, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((7, 5), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((6, 6), 3, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((13, 13), 6, (3, 3), (2, 2), (0, 0, 1, 1), (1, 1)),
    ((5, 37), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((9, 10), 5, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    ((10, 9), 2, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    # 6-output steps (rows of >= 12 outputs): paired with a remainder, stride 2, wide pads
    ((8, 14), 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((11, 25), 4, (3, 3), (2, 2), (0, 0, 1, 1), (1, 1)),
    ((6, 12), 3, (3, 3), (1, 1), (2, 5, 1, 6), (1, 1)),
]


@needs_arm
@pytest.mark.parametrize("wide_shift", [False, True])
def test_emulator_asm_paths(wide_shift: bool) -> None:
    """Modes 3 and 2 with ReLU, out_zp -128 take the inline-asm steps and gathers on the M4."""
    rng = np.random.default_rng(77)
    for hw, c, k, strides, pads, dil in ASM_SHAPES:
        g = dw_graph(rng, hw, c, k, strides, pads, Activation.RELU, out_zp=-128, dil=dil,
                     wide_shift=wide_shift)
        mode = plan_layer(conv_params(g.nodes[0], g)).mode
        assert mode == (2 if wide_shift else UNIFORM)
        x = rng.integers(-128, 128, size=(2, *hw, c)).astype(np.int8)
        np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])


def test_host_compact_code_matches_reference(tmp_path: Path) -> None:
    """Compact code (the flash policy's smaller form: one step a trip, 16-pixel gather
    trips) is exact too; wide rows so both differences apply."""
    from edgenn.backends.cortexm.codesize import compact_code

    rng = np.random.default_rng(41)
    g = dw_graph(rng, (5, 37), 4, (3, 3), (1, 1), (1, 1, 1, 1), out_zp=-128)
    x = rng.integers(-128, 128, size=(1, 5, 37, 4)).astype(np.int8)
    with compact_code():
        compact = DepthwiseConv().prepare(g.nodes[0], g, M4).code
        np.testing.assert_array_equal(host_run(tmp_path, g, x), compile_ref(g).run(x)[0])
    assert compact != DepthwiseConv().prepare(g.nodes[0], g, M4).code


@needs_arm
def test_emulator_compact_code() -> None:
    """The M4 build in compact form (``compile_cortexm(compact=True)``) is exact."""
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm

    rng = np.random.default_rng(43)
    for hw, c, k, strides, pads, dil in (ASM_SHAPES[4], ASM_SHAPES[8]):
        g = dw_graph(rng, hw, c, k, strides, pads, Activation.RELU, out_zp=-128, dil=dil)
        x = rng.integers(-128, 128, size=(2, *hw, c)).astype(np.int8)
        exe = compile_cortexm(g, "cortex-m4", compact=True)
        assert [str(m["kernel"]) for m in exe.manifest["layers"]] == ["edgenn_dwconv_s8_gen_dsp"]
        np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])


# ---- channels no reader weighs (kernels/read_channels.py) are not computed -----------------

def dw_pw_graph(rng: np.random.Generator, hw: tuple[int, int], c: int,
                strides: tuple[int, int], pads: tuple[int, int, int, int], unread: int,
                cout: int = 6) -> Graph:
    """depthwise 3x3 -> 1x1 conv whose weights leave ``unread`` channels (scattered) at 0."""
    g = dw_graph(rng, hw, c, (3, 3), strides, pads, Activation.RELU, out_zp=-128)
    y = g.tensor("y")
    w = rng.integers(-127, 128, size=(cout, 1, 1, c)).astype(np.int8)
    w[..., rng.choice(c, size=unread, replace=False)] = 0
    wt = Tensor("w2", w.shape, DType.INT8,
                QuantParams(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                            np.zeros(cout, np.int64), 0), w)
    bt = Tensor.const("b2", rng.integers(-20000, 20000, size=cout).astype(np.int32))
    node = Node("pw", "Conv2D", ("y", "w2", "b2"), ("z",),
                {"strides": (1, 1), "pads": (0, 0, 0, 0), "activation": Activation.NONE})
    ((shape, dtype),) = infer(node, [y, wt, bt])
    z = Tensor("z", shape, dtype, QuantParams.per_tensor(0.3, 3))
    return Graph("g", {**g.tensors, "w2": wt, "b2": bt, "z": z}, (*g.nodes, node), ("x",),
                 ("z",))


def test_read_channels_only_through_one_conv_reader() -> None:
    rng = np.random.default_rng(70)
    g = dw_pw_graph(rng, (6, 6), 8, (1, 1), (1, 1, 1, 1), unread=3)
    live = read_channels(g.nodes[0], g)
    w2 = g.tensor("w2").data
    assert live is not None and len(live) == 5
    assert all(np.any(w2[..., k] != 0) for k in live)
    out = Graph("g", g.tensors, g.nodes, ("x",), ("y", "z"))  # y observed: every channel
    assert read_channels(out.nodes[0], out) is None
    assert read_channels(g.nodes[1], g) is None  # z is the graph output
    g0 = dw_pw_graph(rng, (6, 6), 8, (1, 1), (1, 1, 1, 1), unread=0)
    assert read_channels(g0.nodes[0], g0) is None  # every channel read
    # a second reader of y: it may read any channel
    two = Node("pw2", "Conv2D", ("y", "w2", "b2"), ("z2",), g.nodes[1].attrs)
    g2 = Graph("g", {**g.tensors, "z2": Tensor("z2", g.tensor("z").shape, DType.INT8,
                                                g.tensor("z").quant)},
               (*g.nodes, two), ("x",), ("z", "z2"))
    assert read_channels(g2.nodes[0], g2) is None


DW_UNREAD = [
    # hw, channels, strides, pads, unread channels
    ((9, 9), 16, (1, 1), (1, 1, 1, 1), 11),  # broken pairs: pairs and single channels
    ((8, 8), 7, (2, 2), (0, 0, 1, 1), 2),  # odd channel count, stride 2
    ((25, 5), 12, (1, 1), (1, 1, 1, 1), 5),  # tall narrow: planned transposed
    ((6, 6), 5, (1, 1), (1, 1, 1, 1), 5),  # no channel read at all
]


@needs_arm
@pytest.mark.parametrize("case", range(len(DW_UNREAD)))
def test_emulator_unread_channels_are_skipped(case: int) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    hw, c, strides, pads, unread = DW_UNREAD[case]
    rng = np.random.default_rng(950 + case)
    g = dw_pw_graph(rng, hw, c, strides, pads, unread)
    call = select_kernel(g.nodes[0], g, M4).prepare(g.nodes[0], g, M4)
    assert f", {c - unread} of {c} channels read downstream" in (call.comment or "")
    exe = compile_model(g, target="cortex-m4")
    layers = exe.manifest["layers"]
    assert layers[0]["kernel"] == "edgenn_dwconv_s8_gen_dsp"
    x = rng.integers(-128, 128, size=(3, *hw, c)).astype(np.int8)
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])
