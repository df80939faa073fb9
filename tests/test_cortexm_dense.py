"""The int8-weight DSP FullyConnected kernel (kernels/dense.py) against the reference, bit for bit.

Host part: the layer's generated C (arrays, per-layer functions and call, exactly as the
generator renders them) is compiled with the host gcc, where the generated code takes its
plain-C twin of the inline assembly (same wrap-around arithmetic), and called through ctypes
on many shapes including odd depths, odd row counts, batches, per-tensor and per-channel
quantization, the fast and the exact requantization and chunked depths. Emulator part: the
real Thumb-2 build with the generated assembly, in the emulated Cortex-M4.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.emit import render
from edgenn.backends.cortexm.kernels.dense import (
    ROWS,
    DenseFullyConnected,
    bias_in_accumulators,
    dense_chunk,
    dense_pairs,
    pack_dense_weights,
    packable,
    pair_elements,
    row_groups,
)
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
M4 = get_core("cortex-m4")
KERNEL = DenseFullyConnected()


def fc_graph(rng: np.random.Generator, depth: int, cout: int, batch: int = 1,
             act: Activation = Activation.RELU, per_channel: bool = True,
             in_zp: int | None = None, out_zp: int | None = None,
             w: np.ndarray | None = None, out_gain: float = 4.0,
             bias_range: int = 20000) -> Graph:
    """One int8 FullyConnected node with random weights, scales, bias and zero points."""
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    out_zp = int(rng.integers(-20, 20)) if out_zp is None else out_zp
    if w is None:
        w = rng.integers(-127, 128, size=(cout, depth)).astype(np.int8)
    if per_channel:
        wq = QuantParams(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                         np.zeros(cout, np.int64), 0)
    else:
        wq = QuantParams.per_tensor(float(np.float32(rng.uniform(0.002, 0.02))), 0)
    x = Tensor("x", (batch, depth), DType.INT8, QuantParams.per_tensor(0.05, in_zp))
    wt = Tensor("w", w.shape, DType.INT8, wq, w)
    bt = Tensor.const("b", rng.integers(-bias_range, bias_range, size=cout).astype(np.int32))
    node = Node("fc", "FullyConnected", ("x", "w", "b"), ("y",), {"activation": act})
    tensors = [x, wt, bt]
    ((shape, dtype),) = infer(node, tensors)
    out_scale = float(np.float32(0.05 * 0.01 * np.sqrt(depth) * out_gain))
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(out_scale, out_zp))
    return Graph("g", {t.name: t for t in (*tensors, y)}, (node,), ("x",), ("y",))


# ---- generation-time packing ------------------------------------------------------------------

def _sxtb16(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed bytes 0 and 2 of uint32 words."""
    b = np.ascontiguousarray(v, np.uint32).view(np.int8).reshape(-1, 4).astype(np.int64)
    return b[:, 0], b[:, 2]


def test_two_row_words_give_lo_dot_and_256_hi_dot() -> None:
    """raw halves = lo + 256 hi exactly, SXTB16 halves = lo: the identity the loop relies on."""
    rng = np.random.default_rng(1)
    for depth, cout in ((1, 1), (5, 3), (13, 8), (64, 6), (9, 11)):
        w = rng.integers(-127, 128, size=(cout, depth)).astype(np.int8)
        words = pack_dense_weights(w)
        pairs = dense_pairs(depth)
        el = pair_elements(pairs)
        wpad = np.zeros((cout + (cout & 1), 4 * -(-depth // 4)), np.int64)
        wpad[:cout, :depth] = w
        first, at = 0, 0
        for rows in row_groups(cout):
            k = rows // 2
            block = words[at:at + pairs * k].reshape(pairs, k)
            at += pairs * k
            for i in range(k):
                lo, hi = wpad[first + 2 * i], wpad[first + 2 * i + 1]
                col = np.ascontiguousarray(block[:, i])
                halves = col.view(np.int16).reshape(-1, 2).astype(np.int64)
                np.testing.assert_array_equal(halves[:, 0], lo[el[:, 0]] + 256 * hi[el[:, 0]])
                np.testing.assert_array_equal(halves[:, 1], lo[el[:, 1]] + 256 * hi[el[:, 1]])
                e0, e1 = _sxtb16(col)
                np.testing.assert_array_equal(e0, lo[el[:, 0]])
                np.testing.assert_array_equal(e1, lo[el[:, 1]])
            first += rows
        assert at == words.size


def test_initial_accumulators_lead_each_pass() -> None:
    rng = np.random.default_rng(4)
    w = rng.integers(-127, 128, size=(9, 11)).astype(np.int8)
    bias = rng.integers(-30000, 30000, size=9)
    plain, with_init = pack_dense_weights(w), pack_dense_weights(w, bias)
    even = np.append(bias, 0)
    pairs, at, first = dense_pairs(11), 0, 0
    for rows in row_groups(9):
        k = rows // 2
        head = with_init[at:at + 2 * k].view(np.int32).reshape(k, 2).astype(np.int64)
        lo, hi = even[first:first + rows:2], even[first + 1:first + rows:2]
        np.testing.assert_array_equal(head[:, 0], lo)
        np.testing.assert_array_equal(head[:, 1], lo + 256 * hi)
        first += rows
        at += 2 * k + pairs * k
    assert np.array_equal(np.delete(with_init, np.r_[0:6, 6 + 3 * pairs:6 + 3 * pairs + 4]),
                          plain)
    assert bias_in_accumulators(w, bias)
    assert not bias_in_accumulators(w, np.full(9, 1 << 23))


def test_row_groups_and_chunks() -> None:
    assert row_groups(1) == [2]
    assert row_groups(6) == [ROWS]
    assert row_groups(128) == [ROWS] * 21 + [2]
    assert row_groups(640) == [ROWS] * 106 + [4]
    assert dense_chunk(np.full((2, 600), 100, np.int8)) == dense_pairs(600)  # 128*60000 < 2^23
    assert dense_chunk(np.full((2, 700), 127, np.int8)) == 254  # 128*88900 >= 2^23


def test_refuses_minus_128_facing_negative_lo_row() -> None:
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, size=(4, 10)).astype(np.int8)
    w[0, 3], w[1, 3] = -5, -128  # hi row 1 = -128 where lo row 0 < 0
    assert not packable(w)
    g = fc_graph(rng, 10, 4, w=w)
    assert not KERNEL.matches(g.nodes[0], g, M4)
    assert select_kernel(g.nodes[0], g, M4).name != KERNEL.name
    w = w.copy()
    w[0, 3] = 3  # -128 facing a non-negative lo weight is fine
    g = fc_graph(rng, 10, 4, w=w)
    assert KERNEL.matches(g.nodes[0], g, M4)


def test_chosen_on_dsp_cores_only() -> None:
    rng = np.random.default_rng(3)
    g = fc_graph(rng, 20, 4)
    assert select_kernel(g.nodes[0], g, M4).name == KERNEL.name
    assert select_kernel(g.nodes[0], g, get_core("cortex-m0plus")).name != KERNEL.name


# ---- host: the generated C twin ---------------------------------------------------------------

def _host_run(g: Graph, x: np.ndarray, tmp: Path) -> np.ndarray:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    kcall = KERNEL.prepare(g.nodes[0], g, M4)
    decls, call = render(kcall, "l0", {"in0": "in", "out0": "out", "scratch": "scratch"})
    src = tmp / "layer.c"
    src.write_text('#include <stdint.h>\n#include "edgenn_fc_widen_s8_dsp.h"\n\n'
                   + "\n\n".join(decls)
                   + "\n\nvoid run(const int8_t *in, int8_t *out, void *scratch)\n{\n    "
                   + call + "\n}\n")
    lib = tmp / "layer.so"
    subprocess.run([cc, "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", f"-I{C_DIR}",
                    str(src), str(C_DIR / "edgenn_fc_widen_s8_dsp.c"), "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    xc = np.ascontiguousarray(x, np.int8)
    out = np.zeros(g.tensor("y").shape, np.int8)
    scratch = np.zeros(max(1, kcall.scratch_bytes // 4), np.uint32)
    so.run(ctypes.c_void_p(xc.ctypes.data), ctypes.c_void_p(out.ctypes.data),
           ctypes.c_void_p(scratch.ctypes.data))
    return out


HOST_CASES = [
    # depth, cout, batch, act, per_channel, out_gain
    (1, 1, 1, Activation.RELU, True, 4.0),
    (2, 3, 2, Activation.NONE, False, 4.0),
    (3, 5, 1, Activation.RELU, True, 4.0),
    (7, 6, 3, Activation.NONE, True, 4.0),
    (8, 128, 1, Activation.RELU, False, 4.0),
    (13, 7, 1, Activation.RELU6, True, 100.0),  # act_max < 127: exact requantization
    (37, 11, 2, Activation.NONE, True, 4.0),
    (64, 12, 1, Activation.NONE, False, 4.0),
    (127, 13, 1, Activation.RELU, True, 4.0),
    (130, 4, 1, Activation.NONE, True, 1e-4),  # multiplier > 1: exact requantization
    (257, 2, 1, Activation.NONE, False, 4.0),
]
BIG_BIAS = 40_000_000  # |bias_hi| + |dot| >= 2^23: the bias is added after the loop


@pytest.mark.parametrize("case", range(len(HOST_CASES)))
def test_host_matches_reference(case: int, tmp_path: Path) -> None:
    depth, cout, batch, act, per_channel, gain = HOST_CASES[case]
    rng = np.random.default_rng(100 + case)
    g = fc_graph(rng, depth, cout, batch=batch, act=act, per_channel=per_channel,
                 out_gain=gain)
    x = rng.integers(-128, 128, size=(batch, depth)).astype(np.int8)
    x[0, : min(depth, 3)] = -128  # extremes of the input range
    want = compile_ref(g).run(x)[0]
    np.testing.assert_array_equal(_host_run(g, x, tmp_path), want)


@pytest.mark.parametrize("act", [Activation.NONE, Activation.RELU6])
def test_host_bias_too_large_for_the_accumulators(act: Activation, tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    g = fc_graph(rng, 50, 9, act=act, bias_range=BIG_BIAS, out_gain=20000.0, in_zp=0)
    assert "bias added" in KERNEL.prepare(g.nodes[0], g, M4).code
    x = rng.integers(-128, 128, size=(1, 50)).astype(np.int8)
    np.testing.assert_array_equal(_host_run(g, x, tmp_path), compile_ref(g).run(x)[0])


def test_host_chunked_depth_and_extremes(tmp_path: Path) -> None:
    """Large |weights| over a long depth: the hi-row dot is cut in safe chunks."""
    rng = np.random.default_rng(7)
    depth = 1100
    w = rng.choice(np.array([-127, 127], np.int8), size=(5, depth))
    g = fc_graph(rng, depth, 5, w=w, act=Activation.NONE, out_gain=40.0)
    assert dense_chunk(w) < dense_pairs(depth)
    for val in (-128, 127):
        x = np.full((1, depth), val, np.int8)
        np.testing.assert_array_equal(_host_run(g, x, tmp_path), compile_ref(g).run(x)[0])
    x = rng.integers(-128, 128, size=(1, depth)).astype(np.int8)
    np.testing.assert_array_equal(_host_run(g, x, tmp_path), compile_ref(g).run(x)[0])


# ---- emulator: the real Thumb-2 build -------------------------------------------------------

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")


def _emulated(g: Graph, x: np.ndarray) -> np.ndarray:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    exe = compile_model(g, target="cortex-m4")
    assert [m["kernel"] for m in exe.manifest["layers"]] == [KERNEL.name]
    return np.asarray(exe.run(x)[0])


EMU_CASES = [
    (640, 128, Activation.RELU, True, 4.0),
    (8, 13, Activation.RELU, False, 4.0),
    (45, 7, Activation.NONE, True, 4.0),
    (130, 10, Activation.RELU6, True, 100.0),  # act_max < 127: exact requantization
]


@needs_arm
@pytest.mark.parametrize("case", range(len(EMU_CASES)))
def test_emulator_matches_reference(case: int) -> None:
    depth, cout, act, per_channel, gain = EMU_CASES[case]
    rng = np.random.default_rng(200 + case)
    g = fc_graph(rng, depth, cout, act=act, per_channel=per_channel, out_gain=gain)
    x = rng.integers(-128, 128, size=(2, depth)).astype(np.int8)  # two inferences
    np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])


@needs_arm
def test_emulator_bias_too_large_for_the_accumulators() -> None:
    rng = np.random.default_rng(10)
    g = fc_graph(rng, 50, 9, act=Activation.NONE, bias_range=BIG_BIAS, out_gain=20000.0,
                 in_zp=0, per_channel=False)
    assert "bias added" in KERNEL.prepare(g.nodes[0], g, M4).code
    x = rng.integers(-128, 128, size=(2, 50)).astype(np.int8)
    np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])


@needs_arm
def test_emulator_chunked_depth() -> None:
    rng = np.random.default_rng(9)
    depth = 1030
    w = rng.choice(np.array([-127, 127], np.int8), size=(7, depth))
    g = fc_graph(rng, depth, 7, w=w, act=Activation.NONE, out_gain=40.0)
    for val in (-128, 127, None):
        x = (np.full((1, depth), val, np.int8) if val is not None
             else rng.integers(-128, 128, size=(1, depth)).astype(np.int8))
        np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])
