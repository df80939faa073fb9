"""The FOLDED forms of the fast 16x8 Conv2D (``conv_s16_folded``: the patch with widened or,
in compact code, int8 weights; ``conv_s16_rows``: blocks reading a zero-padded copy of the
input) on the emulated Cortex-M4 against TFLite Micro (the layers exported to one .tflite)
and the reference runtime.

Seeded layers of the forms' shapes (one or a few input channels, strides, row dilation,
padding on every side, odd Cout, every fused activation, a K loop with a row loop) and
layers whose constants or shapes defeat their proofs: an int64 bias past int32 and a bias
that fits int32 but not beside the largest sum (``fold`` fails both: the general one-SMLAL
rescale), an int32 bias (TFLite's wrapping sum), fewer than 4 output pixels. Each layer must
take the form the test names, so every path runs. The forms' portable twins (cores without
the DSP extension) run on the host compiler."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import compile_model
from edgenn.backends.cortexm.codegen.emit import array_decl
from edgenn.backends.cortexm.codesize import compact_code
from edgenn.backends.cortexm.kernels.conv_s16_dsp import ConvS16Gemm
from edgenn.backends.cortexm.kernels.conv_s16_gemm import Geometry
from edgenn.backends.cortexm.kernels.conv_s16_rows import (
    block_plane,
    offsets,
    plane,
    row_weights,
)
from edgenn.backends.cortexm.targets import get_core
from edgenn.ir import Activation, DType, Tensor
from tests.test_cortexm_s16ops import S16_CONV, Layer, _big_bias, _check, _conv_like, _merge

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
A = Activation
CASES = [  # kind, x shape, w shape, bias, attrs
    ("rows", (1, 12, 12, 1), (8, 3, 3, 1), DType.INT64, dict(pads=(1, 1, 1, 1), activation=A.RELU)),
    ("rows", (1, 12, 13, 1), (5, 3, 3, 1), DType.INT64, dict(strides=(2, 2), pads=(1, 1, 0, 0))),
    ("rows", (1, 9, 10, 2), (6, 3, 3, 2), None,
     dict(dilations=(2, 1), pads=(2, 1, 2, 1), activation=A.RELU6)),
    ("rows", (1, 6, 16, 1), (4, 1, 5, 1), DType.INT64,
     dict(pads=(0, 2, 0, 2), activation=A.RELU_N1_TO_1)),
    ("rows", (1, 10, 10, 3), (7, 3, 3, 3), DType.INT64, dict(pads=(1, 1, 1, 1))),
    ("rows", (1, 7, 9, 1), (3, 2, 4, 1), DType.INT64, dict(strides=(1, 2), pads=(0, 1, 1, 2))),
    ("rows", (1, 6, 30, 6), (4, 2, 4, 6), DType.INT64,
     dict(strides=(1, 2), pads=(1, 1, 0, 2), activation=A.RELU)),  # border rows: 30 words
    ("rows", (1, 4, 40, 5), (3, 2, 7, 5), DType.INT64,
     dict(strides=(1, 2), pads=(0, 3, 1, 3))),  # border rows of 65 odd elements: a loop
    ("patch", (1, 6, 6, 16), (9, 3, 3, 16), DType.INT64, dict(pads=(1, 1, 1, 1))),
    ("patch", (1, 5, 9, 8), (6, 2, 3, 8), DType.INT64,
     dict(dilations=(1, 2), pads=(0, 1, 1, 1), activation=A.RELU6)),
    ("patch", (1, 4, 4, 40), (6, 3, 3, 40), DType.INT64,
     dict(pads=(1, 1, 1, 1), activation=A.RELU)),  # K = 360: the K loop and the row loop
    ("patch", (1, 2, 2, 3), (5, 2, 2, 3), DType.INT64, dict(pads=(1, 1, 0, 0))),  # 4 pixels
    ("patch", (1, 9, 9, 16), (4, 3, 3, 16), DType.INT64,
     dict(strides=(2, 2), activation=A.RELU)),  # no padding: no border window
    ("big", (1, 12, 12, 1), (8, 3, 3, 1), DType.INT64, dict(pads=(1, 1, 1, 1))),
    ("big", (1, 6, 6, 16), (9, 3, 3, 16), DType.INT64, dict(pads=(1, 1, 1, 1))),
    ("bound", (1, 5, 5, 10), (3, 4, 4, 10), DType.INT64, dict(pads=(1, 1, 2, 2))),
    ("int32", (1, 12, 12, 1), (8, 3, 3, 1), DType.INT32, dict(pads=(1, 1, 1, 1))),
    ("few", (1, 1, 3, 4), (5, 1, 3, 4), DType.INT64, dict(pads=(0, 1, 0, 1))),
]


def _bound(layer: Layer) -> Layer:
    """Weights of |w| = 127 and biases of +-1.5e9: every sum fits int32 (WIDE32), the sum
    started at the bias may not (no FOLDED)."""
    w_name, b_name = layer.node.inputs[1], layer.node.inputs[2]
    w = next(t for t in layer.tensors if t.name == w_name)
    assert w.data is not None
    signs = np.where(np.asarray(w.data) < 0, -1, 1)
    co = w.shape[0]
    b = 1_500_000_000
    assert 32768 * 127 * (w.data.size // co) < 2**31 < 32768 * 127 * (w.data.size // co) + b
    big = Tensor.const(w_name, (127 * signs).astype(np.int8), w.quant)
    bias = Tensor.const(b_name, np.array([b, -b, b][:co] * (co // 3 + 1), np.int64)[:co])
    layer.tensors = [big if t.name == w_name else bias if t.name == b_name else t
                     for t in layer.tensors]
    return layer


def _layers() -> tuple[list[Layer], list[str]]:
    rng = np.random.default_rng(2517)
    out = []
    for i, (kind, xs, ws, bias, attrs) in enumerate(CASES):
        layer = _conv_like(i, "Conv2D", rng, DType.INT16, xs, ws, bias, S16_CONV,
                           **{"strides": (1, 1), "dilations": (1, 1), "groups": 1,
                              "activation": A.NONE, **attrs})
        out.append(_big_bias(layer, rng) if kind == "big" else
                   _bound(layer) if kind == "bound" else layer)
    return out, [c[0] for c in CASES]


def _comments(layers: list[Layer]) -> list[str]:
    graph, _ = _merge(layers)
    core = get_core("cortex-m4")
    return [ConvS16Gemm().prepare(la.node, graph, core).comment for la in layers]


@needs_arm
def test_folded_forms_and_their_fallbacks_match_tflm_and_ref() -> None:
    tflm = pytest.importorskip("edgenn.oracles.tflm")
    pytest.importorskip("tflite_micro")
    from edgenn.export import export_tflite

    layers, kinds = _layers()
    comments = _comments(layers)
    # both forms of the rows: the whole plane where the arena has room, direct reads else
    assert sum("zero-padded copy" in c for c in comments) >= 2
    assert sum("input rows directly" in c for c in comments) >= 2
    for kind, comment in zip(kinds, comments, strict=True):
        assert ("zero-padded" in comment) == (kind == "rows"), (kind, comment)
        assert ("one-SMMULR" in comment) == (kind in ("rows", "patch")), (kind, comment)
        assert ("widened" in comment) == (kind in ("rows", "patch")), (kind, comment)
    _check(layers)  # every layer on edgenn_conv_s16_gemm_dsp, cortex-m4 == ref
    graph, xs = _merge(layers)
    want = tflm.tflm_run(export_tflite(graph), *xs)
    got = compile_model(graph, "cortex-m4").run(*xs)
    for layer, g, w in zip(layers, got, want, strict=True):
        assert g.shape == w.shape and int((g != w.reshape(g.shape)).sum()) == 0, layer.node


@needs_arm
def test_compact_code_keeps_int8_weights_and_matches_ref() -> None:
    layers, kinds = _layers()
    with compact_code():
        comments = _comments(layers)
        for kind, comment in zip(kinds, comments, strict=True):
            assert "widened" not in comment and "zero-padded" not in comment, (kind, comment)
            assert ("one-SMMULR" in comment) == (kind in ("rows", "patch")), (kind, comment)
        graph, xs = _merge(layers)
        got = compile_model(graph, "cortex-m4").run(*xs)
    want = compile_model(graph, "ref").run(*xs)
    for layer, g, w in zip(layers, got, want, strict=True):
        assert g.shape == w.shape and int((g != w).sum()) == 0, layer.node


def test_direct_rows_read_every_window_element_once() -> None:
    """The k pairs of each pixel cover exactly its window's elements (pad elements carry
    weight 0), at the offsets the layer's weights are laid out for, in the input, the whole
    plane and a border block's plane; the farthest element read lies inside the plane."""
    g = Geometry(in_h=7, in_w=9, in_c=3, out_h=4, out_w=5, out_c=2, k_h=2, k_w=3, stride_h=2,
                 stride_w=2, dil_h=2, dil_w=1, pad_t=1, pad_l=1, pad_b=0, pad_r=1, groups=1,
                 lo=-32768, hi=32767)
    rows, length, base, total = plane(g)
    assert length % 2 == 0 and (base + g.pad_l * g.in_c) % 2 == 0
    w = np.arange(1, 1 + g.out_c * g.k).reshape(g.out_c, g.k) % 100
    words = row_weights(w.astype(np.int8), g).reshape(1, -1, 2)  # [k pair][channel]
    blk_len, blk_total = block_plane(g)
    for row, dil in ((g.in_w * g.in_c, g.dil_h), (length, g.dil_h), (blk_len, 1)):
        for c in range(g.out_c):
            seen = {}
            for p, off in enumerate(offsets(g, row, dil)):
                for half in (0, 1):
                    e = off // 2 + half  # element from the window's first
                    wv = int(np.int16((int(words[0, p, c]) >> (16 * half)) & 0xFFFF))
                    if wv:
                        seen[(e // row, e % row)] = wv
            want = {(ky * dil, kx * g.in_c + ci): int(w[c, (ky * g.k_w + kx) * g.in_c + ci])
                    for ky in range(g.k_h) for kx in range(g.k_w) for ci in range(g.in_c)}
            assert seen == want
    step = g.stride_w * g.in_c
    far = max(base + oy * g.stride_h * length + ox * step + off // 2 + 1
              for oy in range(g.out_h) for ox in range(g.out_w)
              for off in offsets(g, length, g.dil_h))
    assert rows * length + base <= total and far < total
    far_blk = max(3 * step + off // 2 + 1 for off in offsets(g, blk_len, 1))
    assert far_blk < blk_total


@pytest.mark.parametrize("compact", [False, True], ids=["fast", "compact"])
def test_portable_twins_match_ref_on_the_host(tmp_path: Path, compact: bool) -> None:
    """The forms' C for cores without the DSP extension (the ``#else`` twins of the asm),
    compiled by the host compiler, against the reference runtime, one layer a graph."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no host C compiler")
    layers, kinds = _layers()
    picked = [la for la, k in zip(layers, kinds, strict=True) if k in ("rows", "patch")]
    core = get_core("cortex-m4")
    parts = ['#include "edgenn_conv_s8_gemm_dsp.h"\n#include "edgenn_conv_s16_mac.h"\n']
    graphs, calls = [], []
    for i, la in enumerate(picked):
        graph, _ = _merge([la])
        with compact_code(compact):
            call = ConvS16Gemm().prepare(la.node, graph, core)
        assert "one-SMMULR" in call.comment
        parts += [array_decl(f"L{i}_{a.name}", a) for a in call.arrays]
        parts.append(call.code.replace("@P@", f"L{i}"))
        parts.append(f"void L{i}_run(const int16_t *in, int16_t *out, void *scratch)\n"
                     f"{{ L{i}_conv(in, out, scratch); }}\n")
        graphs.append(graph)
        calls.append(call)
    src, so = tmp_path / "layers.c", tmp_path / "layers.so"
    src.write_text("\n".join(parts))
    subprocess.run([cc, "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", "-shared",
                    "-fPIC", f"-I{C_DIR}", str(src), "-o", str(so)], check=True)
    lib = ctypes.CDLL(str(so))
    for i, (la, graph, call) in enumerate(zip(picked, graphs, calls, strict=True)):
        x = la.x[:1]
        out_t = graph.tensor(la.node.outputs[0])
        out = np.zeros(out_t.shape, np.int16)
        scratch = np.zeros(call.scratch_bytes // 4 + 1, np.uint32)
        getattr(lib, f"L{i}_run")(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                                  ctypes.c_void_p(scratch.ctypes.data))
        np.testing.assert_array_equal(out, compile_model(graph, "ref").run(x)[0], str(la.node))


@needs_arm
@pytest.mark.slow
def test_random_few_channel_layers_match_ref() -> None:
    """40 random layers of 1-4 input channels (the rows form's layers, some on the patch or
    the general code), every padding, stride and row dilation, against ref: in one model
    (where most have the arena room for the whole plane), then the first 10 of the rows form
    alone (no room: direct reads, border blocks gathered)."""
    rng = np.random.default_rng(2518)
    layers = []
    for i in range(40):
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        st = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        dh = int(rng.integers(1, 3))
        h = int(rng.integers((kh - 1) * dh + 1, 14))
        w = int(rng.integers(kw + 3 * st[1], 24))
        ci, co = int(rng.integers(1, 5)), int(rng.integers(1, 12))
        layers.append(_conv_like(
            i, "Conv2D", rng, DType.INT16, (1, h, w, ci), (co, kh, kw, ci),
            [DType.INT64, None][int(rng.integers(0, 2))], S16_CONV, groups=1, strides=st,
            dilations=(dh, 1), pads=tuple(int(v) for v in rng.integers(0, 3, 4)),
            activation=[A.NONE, A.RELU, A.RELU6][int(rng.integers(0, 3))]))
    comments = _comments(layers)
    assert sum("zero-padded copy" in c for c in comments) >= 20
    _check(layers)
    alone = [la for la, c in zip(layers, comments, strict=True) if "zero-padded" in c][:10]
    for la in alone:
        assert "input rows directly" in _comments([la])[0]
        _check([la])
