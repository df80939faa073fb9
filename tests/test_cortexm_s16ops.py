"""The generated DSP kernels of issue 25 item 3 on the emulated Cortex-M4 against the reference
runtime (pinned to TFLite Micro by the conformance cases and the operator fixtures):
``conv_s16_gemm`` (16x8 Conv2D), ``dwconv_s16_gen`` (16x8 depthwise), ``maxpool_s16_dsp``,
``concat_words``, ``conv_transpose_gemm`` and ``conv_transpose_s16_gemm`` (int8 / 16x8
TransposeConv2D by output phases).

All layers of a sweep go into one model (independent inputs and outputs), so each sweep is one
firmware build and one emulator run. The shapes cover odd channel counts, K not a multiple
of 4, fewer output pixels than a block, padding, strides, dilation, every fused activation,
int32 and int64 biases (both accumulation modes the kernel takes), and rescaled pool outputs;
each layer must be run by the kernel under test (a layer left to the portable fallback would
prove nothing).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pytest

from edgenn.api import compile_model
from edgenn.backends.cortexm.kernels.conv_s16_gemm import pack_weights, wide_records
from edgenn.backends.cortexm.kernels.conv_transpose_gemm import axis_phases
from edgenn.backends.cortexm.kernels.conv_transpose_s16_gemm import TransposeConvS16Gemm
from edgenn.backends.cortexm.kernels.dwconv_s16_plane import DwConvS16Plane
from edgenn.backends.cortexm.kernels.pointwise_s16 import PointwiseS16, group_weights
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


@dataclass
class Layer:
    node: Node
    tensors: list[Tensor]
    x: np.ndarray
    kernel: str


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _act(t: DType, name: str, shape: tuple[int, ...], rng: np.random.Generator
         ) -> tuple[Tensor, np.ndarray]:
    if t is DType.INT16:
        q = QuantParams.per_tensor(_scale(rng, 1e-4, 1e-2), 0)
        return Tensor(name, shape, t, q), rng.integers(-32768, 32768, (3, *shape[1:])).astype(
            np.int16)
    q = QuantParams.per_tensor(_scale(rng, 0.01, 0.1), int(rng.integers(-20, 20)))
    return Tensor(name, shape, t, q), rng.integers(-128, 128, (3, *shape[1:])).astype(np.int8)


def _conv_like(i: int, op: str, rng: np.random.Generator, dtype: DType,
               x_shape: tuple[int, ...], w_shape: tuple[int, ...], bias: DType | None,
               kernel: str, **attrs: object) -> Layer:
    x, data = _act(dtype, f"x{i}", x_shape, rng)
    co = w_shape[0]
    scales = np.array([_scale(rng, 1e-3, 0.05) for _ in range(co)], np.float32)
    wq = QuantParams(scales, np.zeros(co, np.int64), 0)
    w = Tensor.const(f"w{i}", rng.integers(-127, 128, w_shape).astype(np.int8), wq)
    ins = [x, w]
    if bias is not None:
        ins.append(Tensor.const(f"b{i}", rng.integers(-300_000, 300_000, co).astype(bias.numpy)))
    node = Node(f"n{i}", op, tuple(t.name for t in ins), (f"y{i}",), dict(attrs))
    ((shape, out_t),) = infer(node, ins)
    depth = int(np.prod(w_shape[1:]))
    x_std = 18900 if dtype is DType.INT16 else 74
    real = x_std * 73 * np.sqrt(depth) * x.quant.s * float(scales.mean())  # type: ignore[union-attr]
    spread = 4000 if dtype is DType.INT16 else 16
    zp = 0 if dtype is DType.INT16 else -7
    y = Tensor(f"y{i}", shape, out_t, QuantParams.per_tensor(float(np.float32(real / spread)), zp))
    return Layer(node, [*ins, y], data, kernel)


def _merge(layers: list[Layer], extra: tuple[str, ...] = ()) -> tuple[Graph, list[np.ndarray]]:
    tensors = {t.name: t for layer in layers for t in layer.tensors}
    graph = Graph("sweep", tensors, tuple(layer.node for layer in layers),
                  (*(layer.node.inputs[0] for layer in layers), *extra),
                  tuple(layer.node.outputs[0] for layer in layers)).validate()
    return graph, [layer.x for layer in layers]


def _check(layers: list[Layer]) -> None:
    graph, xs = _merge(layers)
    core = get_core("cortex-m4")
    for layer in layers:  # the kernel under test runs every layer
        assert select_kernel(layer.node, graph, core).name == layer.kernel, layer.node
    want = compile_model(graph, "ref").run(*xs)
    got = compile_model(graph, "cortex-m4").run(*xs)
    for layer, g, w in zip(layers, got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert int((g != w).sum()) == 0, layer.node


S16_CONV = "edgenn_conv_s16_gemm_dsp"
CONV_CASES = [  # x shape, w shape, bias, attrs
    ((1, 16, 16, 3), (16, 3, 3, 3), DType.INT64,
     dict(strides=(2, 2), pads=(0, 0, 1, 1), activation=Activation.RELU6)),
    ((1, 8, 8, 16), (16, 1, 1, 16), DType.INT64, dict(strides=(2, 2))),  # 1x1, strided
    ((1, 1, 64, 4), (8, 1, 7, 4), DType.INT64, dict(pads=(0, 3, 0, 3))),
    ((1, 1, 20, 8), (7, 1, 3, 8), DType.INT64,
     dict(dilations=(1, 3), pads=(0, 3, 0, 3), activation=Activation.RELU)),
    ((1, 5, 7, 5), (3, 3, 2, 5), DType.INT32,
     dict(strides=(2, 1), pads=(1, 0, 2, 1), activation=Activation.RELU_N1_TO_1)),
    ((1, 2, 1, 3), (5, 1, 1, 3), None, dict(pads=(0, 0, 1, 0))),  # 1x1, padded
    ((1, 6, 5, 7), (9, 2, 3, 7), DType.INT64, dict(dilations=(2, 1), pads=(1, 2, 0, 1))),
    ((1, 4, 4, 40), (6, 3, 3, 40), DType.INT64, dict(pads=(1, 1, 1, 1))),  # K = 360: row loop
]


@needs_arm
def test_conv_s16_gemm_matches_ref() -> None:
    rng = np.random.default_rng(25)
    layers = [_conv_like(i, "Conv2D", rng, DType.INT16, xs, ws, b, S16_CONV,
                         **{"strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0),
                            "groups": 1, "activation": Activation.NONE, **attrs})
              for i, (xs, ws, b, attrs) in enumerate(CONV_CASES)]
    _check(layers)


def _big_bias(layer: Layer, rng: np.random.Generator) -> Layer:
    """The layer with an int64 bias beyond int32 (the sum cannot start at it: no FOLDED)."""
    name = layer.node.inputs[2]
    co = next(t for t in layer.tensors if t.name == name).shape[0]
    big = rng.integers(-2**33, 2**33, co).astype(np.int64)
    layer.tensors = [Tensor.const(name, big) if t.name == name else t for t in layer.tensors]
    return layer


S16_PW = "edgenn_conv_s16_1x1_dsp"
PW_CASES = [  # x shape, Cout, bias, activation (1x1, stride 1, no padding)
    ((1, 8, 8, 16), 16, DType.INT64, Activation.NONE),
    ((1, 5, 5, 16), 16, DType.INT32, Activation.RELU6),  # odd pixel count
    ((1, 3, 5, 7), 5, DType.INT64, Activation.RELU),  # odd Cin, odd Cout
    ((1, 1, 1, 3), 9, None, Activation.NONE),  # one pixel, Cin < 4
    ((1, 2, 3, 10), 3, DType.INT32, Activation.RELU_N1_TO_1),  # Cout < 4, Cin % 4 == 2
    ((1, 3, 3, 130), 6, DType.INT64, Activation.NONE),  # 65 k pairs: the chunk loop
    ((1, 2, 2, 131), 7, DType.INT32, Activation.RELU),  # chunk loop + odd Cin
    ((1, 4, 4, 64), 24, DType.INT64, Activation.RELU6),
]


@needs_arm
def test_pointwise_s16_matches_ref() -> None:
    rng = np.random.default_rng(26)
    layers = [_conv_like(i, "Conv2D", rng, DType.INT16, xs, (co, 1, 1, xs[3]), b, S16_PW,
                         strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), groups=1,
                         activation=act)
              for i, (xs, co, b, act) in enumerate(PW_CASES)]
    # int64 biases past int32: not foldable into the sum, the one-SMLAL rescale in C
    for i, xs in enumerate([(1, 3, 3, 12), (1, 2, 2, 5)], start=len(layers)):
        layer = _conv_like(i, "Conv2D", rng, DType.INT16, xs, (6, 1, 1, xs[3]), DType.INT64,
                           S16_PW, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0),
                           groups=1, activation=Activation.RELU)
        layers.append(_big_bias(layer, rng))
    graph, _ = _merge(layers)
    comments = [PointwiseS16().prepare(la.node, graph, get_core("cortex-m4")).comment
                for la in layers]
    assert sum("one-SMMULR" in c for c in comments) >= 3  # every rescale form is exercised
    assert sum("one-SMLAL" in c for c in comments) >= 1
    assert sum("wrapping" in c for c in comments) >= 2
    _check(layers)


def test_group_weights_order_blocks_by_k_pair() -> None:
    w = np.arange(5 * 3, dtype=np.int64).reshape(5, 3).astype(np.int8)  # Cout 5, K 3
    words = group_weights(w).reshape(2, 2, 2)  # [group][k pair][channel pair]
    byte = lambda v, i: (int(v) >> (8 * i)) & 0xFF  # noqa: E731
    assert [byte(words[0, 1, 1], i) for i in range(4)] == [w[2, 2], w[3, 2], 0, 0]
    assert [byte(words[0, 0, 0], i) for i in range(4)] == [w[0, 0], w[1, 0], w[0, 1], w[1, 1]]
    assert [byte(words[1, 0, 0], i) for i in range(4)] == [w[4, 0], 0, w[4, 1], 0]
    assert not words[1, :, 1].any()


DW_CASES = [  # x shape, kernel, bias, attrs (depth multiplier 1)
    # no tap pairs along either axis (dilated both ways, 1x1, a dilated 1xK): left to
    # dwconv_s16_gen by dwconv_s16_plane
    ((1, 8, 8, 16), (3, 3), DType.INT64,
     dict(strides=(1, 2), dilations=(2, 2), pads=(2, 2, 2, 2))),
    ((1, 7, 6, 8), (3, 2), DType.INT32,
     dict(strides=(2, 1), dilations=(2, 2), pads=(1, 0, 2, 1), activation=Activation.RELU6)),
    ((1, 5, 5, 12), (1, 1), None, dict(strides=(2, 2))),
    ((1, 3, 9, 4), (1, 4), DType.INT64,
     dict(dilations=(1, 2), pads=(0, 3, 0, 0), activation=Activation.RELU)),
    # pairs apply, but 3 outputs a channel read 44 inputs: the planes would not repay
    ((1, 11, 4, 4), (3, 4), DType.INT64, dict(strides=(3, 3))),
]


@needs_arm
def test_dwconv_s16_gen_matches_ref() -> None:
    rng = np.random.default_rng(28)
    layers = [_conv_like(i, "Conv2D", rng, DType.INT16, xs, (xs[3], *k, 1), b,
                         "edgenn_dwconv_s16_gen_dsp",
                         **{"strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0),
                            "groups": xs[3], "activation": Activation.NONE, **attrs})
              for i, (xs, k, b, attrs) in enumerate(DW_CASES)]
    layers.append(_big_bias(_conv_like(
        len(layers), "Conv2D", rng, DType.INT16, (1, 4, 4, 8), (8, 3, 3, 1), DType.INT64,
        "edgenn_dwconv_s16_gen_dsp", strides=(1, 2), dilations=(2, 2), pads=(2, 2, 2, 2),
        groups=8, activation=Activation.NONE), rng))
    _check(layers)


S16_DWP = "edgenn_dwconv_s16_plane_dsp"
DWP_CASES = [  # x shape, kernel, bias, attrs (depth multiplier 1; tap pairs along an axis)
    ((1, 8, 8, 16), (3, 3), DType.INT64, dict(pads=(1, 1, 1, 1))),  # mbv3_int16's layer
    ((1, 8, 8, 16), (3, 3), DType.INT32, dict(activation=Activation.RELU6)),  # no padding
    ((1, 4, 13, 6), (3, 3), DType.INT64, dict(pads=(1, 1, 1, 1))),  # paired trip + 2 steps
    ((1, 7, 9, 5), (3, 3), None, dict(strides=(2, 1), pads=(0, 1, 2, 1))),  # odd C, odd W
    ((1, 9, 6, 3), (5, 5), DType.INT64, dict(pads=(2, 2, 2, 2), activation=Activation.RELU)),
    ((1, 6, 11, 6), (2, 4), DType.INT32, dict(dilations=(2, 1), pads=(1, 0, 1, 3))),
    ((1, 3, 9, 4), (1, 4), DType.INT64, dict(pads=(0, 3, 0, 0), activation=Activation.RELU)),
    ((1, 5, 3, 7), (3, 2), DType.INT64, dict(pads=(1, 1, 1, 0))),  # rows of one step
    ((1, 4, 4, 2), (3, 3), DType.INT32, dict(pads=(1, 1, 1, 1))),  # two channels
    # column stride 2: 5 words a kernel row for 4 outputs, the asm loads them in groups
    ((1, 8, 8, 16), (3, 3), DType.INT64, dict(strides=(1, 2), pads=(1, 1, 1, 1))),
    ((1, 9, 11, 5), (3, 3), DType.INT64,
     dict(strides=(2, 2), pads=(1, 1, 1, 1), activation=Activation.RELU)),  # USAT 15
    ((1, 5, 5, 12), (5, 5), None, dict(strides=(2, 2), pads=(2, 2, 2, 2))),
    ((1, 6, 9, 4), (3, 3), DType.INT64,  # the asm clamp's CMP bounds
     dict(strides=(1, 2), pads=(1, 1, 1, 1), activation=Activation.RELU_N1_TO_1)),
    ((1, 6, 8, 6), (3, 3), DType.INT64, dict(pads=(1, 1, 1, 1), activation=Activation.RELU6)),
    # no pairs along the rows (dilated, one tap wide): the planes hold the input transposed
    ((1, 7, 6, 8), (3, 2), DType.INT32,
     dict(strides=(2, 1), dilations=(1, 2), pads=(1, 0, 2, 1), activation=Activation.RELU6)),
    ((1, 32, 8, 16), (9, 1), DType.INT64, dict(pads=(4, 0, 4, 0), activation=Activation.RELU)),
    ((1, 13, 3, 5), (9, 1), DType.INT64, dict(strides=(2, 1), pads=(4, 0, 3, 0))),
    ((1, 25, 5, 4), (3, 3), DType.INT64, dict(pads=(1, 1, 1, 1))),  # tall: transposed
    ((1, 11, 4, 5), (3, 4), DType.INT64, dict(strides=(3, 3))),  # few outputs, C % 4: planes
]


@needs_arm
def test_dwconv_s16_plane_matches_ref() -> None:
    rng = np.random.default_rng(29)
    layers = [_conv_like(i, "Conv2D", rng, DType.INT16, xs, (xs[3], *k, 1), b, S16_DWP,
                         **{"strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0),
                            "groups": xs[3], "activation": Activation.NONE, **attrs})
              for i, (xs, k, b, attrs) in enumerate(DWP_CASES)]
    # an int64 bias past int32: the sums start at 0, the one-SMLAL rescale
    layers.append(_big_bias(_conv_like(
        len(layers), "Conv2D", rng, DType.INT16, (1, 4, 4, 8), (8, 3, 3, 1), DType.INT64,
        S16_DWP, strides=(1, 1), dilations=(1, 1), pads=(1, 1, 1, 1), groups=8,
        activation=Activation.NONE), rng))
    graph, _ = _merge(layers)
    calls = [DwConvS16Plane().prepare(la.node, graph, get_core("cortex-m4")) for la in layers]
    codes = [call.code for call in calls]
    assert sum("__asm__" in c for c in codes) >= 6  # the asm steps (FOLDED)
    assert sum("usat" in c for c in codes) >= 2 and sum("movgt" in c for c in codes) >= 2
    assert sum("__asm__" not in c for c in codes) >= 3  # the C steps
    assert sum("down the columns" in call.comment for call in calls) >= 3  # transposed
    _check(layers)


TCONV_CASES = [  # x shape, w shape, strides, pads, dilations, output_padding
    ((1, 1, 32, 16), (8, 1, 4, 16), (1, 2), (0, 1, 0, 1), (1, 1), (0, 0)),
    ((1, 4, 5, 3), (5, 3, 4, 3), (2, 3), (1, 0, 2, 1), (1, 1), (1, 2)),
    ((1, 3, 3, 5), (3, 3, 3, 5), (1, 1), (1, 1, 1, 1), (1, 1), (0, 0)),
    ((1, 3, 4, 4), (6, 3, 3, 4), (2, 2), (0, 0, 0, 0), (1, 3), (1, 0)),
    ((1, 3, 3, 4), (3, 2, 2, 4), (3, 3), (0, 0, 0, 0), (1, 1), (0, 0)),  # phases no tap reaches
    ((1, 3, 4, 6), (4, 3, 3, 6), (2, 2), (0, 1, 1, 0), (2, 1), (0, 0)),  # rows: one empty phase
]


@needs_arm
def test_conv_transpose_gemm_matches_ref() -> None:
    rng = np.random.default_rng(26)
    acts = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.NONE,
            Activation.RELU, Activation.NONE]
    layers = [_conv_like(i, "TransposeConv2D", rng, DType.INT8, xs, ws, DType.INT32,
                         "edgenn_tconv_s8_gemm_dsp", strides=st, pads=pd, dilations=dl,
                         output_padding=op, groups=1, activation=acts[i])
              for i, (xs, ws, st, pd, dl, op) in enumerate(TCONV_CASES)]
    _check(layers)


@needs_arm
def test_conv_transpose_s16_gemm_matches_ref() -> None:
    rng = np.random.default_rng(29)
    biases = [DType.INT64, None, DType.INT16, DType.INT64, DType.INT64, DType.INT16]
    acts = [Activation.NONE, Activation.RELU6, Activation.NONE, Activation.RELU,
            Activation.NONE, Activation.RELU]
    layers = [_conv_like(i, "TransposeConv2D", rng, DType.INT16, xs, ws, biases[i],
                         "edgenn_tconv_s16_gemm_dsp", strides=st, pads=pd, dilations=dl,
                         output_padding=op, groups=1, activation=acts[i])
              for i, (xs, ws, st, pd, dl, op) in enumerate(TCONV_CASES)]
    n = len(layers)
    # a crop past the kernel's reach: phase (r = 1) has a negative padding, no Conv2D node
    layers.append(_conv_like(n, "TransposeConv2D", rng, DType.INT16, (1, 4, 5, 3),
                             (4, 4, 4, 3), DType.INT64, "edgenn_tconv_s16_gemm_dsp",
                             strides=(2, 2), pads=(3, 3, 1, 1), dilations=(1, 1),
                             output_padding=(0, 0), groups=1, activation=Activation.RELU))
    # an int64 bias past int32: no phase may start its sums at it (no FOLDED form)
    layers.append(_big_bias(_conv_like(
        n + 1, "TransposeConv2D", rng, DType.INT16, (1, 4, 4, 8), (6, 3, 3, 8), DType.INT64,
        "edgenn_tconv_s16_gemm_dsp", strides=(2, 2), pads=(1, 1, 0, 0), dilations=(1, 1),
        output_padding=(0, 0), groups=1, activation=Activation.NONE), rng))
    # K = 576: a one-layer graph's patch bound refuses the phase to the generated Conv2D
    # kernels (the table gives the portable one): conv_s16_gemm directly
    layers.append(_conv_like(n + 2, "TransposeConv2D", rng, DType.INT16, (1, 4, 4, 64),
                             (4, 3, 3, 64), DType.INT64, "edgenn_tconv_s16_gemm_dsp",
                             strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1),
                             output_padding=(0, 0), groups=1, activation=Activation.NONE))
    graph, _ = _merge(layers)
    comments = [TransposeConvS16Gemm().prepare(la.node, graph, get_core("cortex-m4")).comment
                for la in layers]
    # the phases run the Conv2D kernels the table selects, the others conv_s16_gemm directly
    assert any("edgenn_conv_s16_1x1_dsp" in c for c in comments)
    assert any("edgenn_conv_s16_gemm_dsp" in c for c in comments)
    direct = [i for i, c in enumerate(comments) if "(conv_s16_gemm" in c or ", conv_s16_gemm" in c]
    assert n in direct and n + 2 in direct
    _check(layers)


def _s16(name: str, shape: tuple[int, ...], scale: float) -> Tensor:
    return Tensor(name, shape, DType.INT16, QuantParams.per_tensor(scale, 0))


@needs_arm
def test_maxpool_s16_and_concat_words_match_ref() -> None:
    rng = np.random.default_rng(27)

    def data(shape: tuple[int, ...], dtype: type = np.int16) -> np.ndarray:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, (3, *shape[1:])).astype(dtype)

    pool = "edgenn_maxpool_s16_dsp"
    layers = [
        Layer(Node("p0", "MaxPool2D", ("a0",), ("o0",),
                   {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 0)}),
              [_s16("a0", (1, 8, 8, 16), 1e-3), _s16("o0", (1, 4, 4, 16), 1e-3)],
              data((1, 8, 8, 16)), pool),
        Layer(Node("p1", "MaxPool2D", ("a1",), ("o1",),
                   {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1),
                    "activation": Activation.RELU6}),
              [_s16("a1", (1, 7, 9, 6), 1e-3), _s16("o1", (1, 4, 5, 6), 1e-3)],
              data((1, 7, 9, 6)), pool),
        Layer(Node("p2", "MaxPool2D", ("a2",), ("o2",),  # rescaled output
                   {"kernel": (3, 2), "strides": (2, 1), "pads": (1, 1, 1, 0)}),
              [_s16("a2", (1, 5, 4, 2), 1e-3), _s16("o2", (1, 3, 4, 2), 2.5e-3)],
              data((1, 5, 4, 2)), pool),
    ]
    graph_extra = [
        _s16("c0", (1, 8, 8, 16), 1e-3), _s16("c1", (1, 8, 8, 8), 1e-3),
        _s16("c2", (1, 8, 8, 40), 1e-3), _s16("cat", (1, 8, 8, 64), 1e-3)]
    # a 3-input concat: its first input is the layer's; the others are extra graph inputs
    layers.append(Layer(Node("cc", "Concat", ("c0", "c1", "c2"), ("cat",), {"axis": 3}),
                        graph_extra, data((1, 8, 8, 16)), "edgenn_concat_words"))
    graph, xs = _merge(layers, ("c1", "c2"))
    xs += [data((1, 8, 8, 8)), data((1, 8, 8, 40))]
    core = get_core("cortex-m4")
    for layer in layers:
        assert select_kernel(layer.node, graph, core).name == layer.kernel, layer.node
    want = compile_model(graph, "ref").run(*xs)
    got = compile_model(graph, "cortex-m4").run(*xs)
    for layer, g, w in zip(layers, got, want, strict=True):
        assert int((g != w).sum()) == 0, layer.node


def test_wide_records_equal_the_split_64_bit_shift() -> None:
    """hi32(acc m' + b') >> e against (int32)((acc m + bias_r) >> total), every total."""
    rng = np.random.default_rng(3)
    total = np.arange(1, 47)
    mult = rng.integers(-(2**15) + 1, 2**15, total.size)
    mult[0] = 0x7FFF
    bias_r = rng.integers(-(2**62), 2**62, total.size)
    fast = wide_records(mult, total, bias_r)
    small = total >= 16  # m << (32 - total) must stay within int32
    sub = wide_records(mult[small], total[small], bias_r[small])
    assert fast is None and sub is not None
    m2, e, b2 = sub
    for acc in [*rng.integers(-(2**31), 2**31, 200), -(2**31), 2**31 - 1, 0]:
        for k in range(m2.size):
            t = int(total[small][k])
            # TFLite's int64 sum (wrapping), shifted arithmetically, truncated to int32
            r = (int(acc) * int(mult[small][k]) + int(bias_r[small][k]) + 2**63) % 2**64 - 2**63
            want = ((r >> t) + 2**31) % 2**32 - 2**31
            s = (int(acc) * int(m2[k]) + int(b2[k])) % 2**64
            hi = ((s >> 32) + 2**31) % 2**32 - 2**31
            assert hi >> int(e[k]) == want


def test_pack_weights_pairs_channels_by_k_pair() -> None:
    w = np.arange(3 * 5, dtype=np.int64).reshape(3, 5) - 7
    words = pack_weights(w)
    b = words.view(np.uint8).reshape(2, 3, 4).astype(np.int8)  # [pair][k pair][byte]
    assert b[0, 1].tolist() == [w[0, 2], w[1, 2], w[0, 3], w[1, 3]]
    assert b[1, 2].tolist() == [w[2, 4], 0, 0, 0]  # channel 3 and element 5 are padding


@pytest.mark.parametrize("out,stride,k,dil,pad", [
    (64, 2, 4, 1, 1), (9, 3, 4, 1, 0), (7, 2, 3, 3, 1), (5, 1, 3, 2, 2), (11, 3, 5, 2, 4)])
def test_axis_phases_cover_exactly_the_scatter(out: int, stride: int, k: int, dil: int,
                                                pad: int) -> None:
    """Every (output, input, tap) triple of the scatter appears once in the phases."""
    n_in = 6
    want = {(o, i, t) for i in range(n_in) for t in range(k)
            if 0 <= (o := i * stride + t * dil - pad) < out}
    phases = axis_phases(out, stride, k, dil, pad)
    assert phases is not None
    got = set()
    for ph in phases:
        for m in range(ph.count):
            for j, t in enumerate(ph.taps):
                i = m - ph.pad + j * ph.dil
                if 0 <= i < n_in:
                    got.add((ph.r + stride * m, i, t))
    assert got == want


def _random_layers(rng: np.random.Generator, kind: str, n: int) -> list[Layer]:
    """Random layers of one kind (some the kernel refuses: those are dropped)."""
    out: list[Layer] = []
    kernels = {"conv": S16_CONV, "pw": S16_PW, "dw": "edgenn_dwconv_s16_gen_dsp", "dwp": S16_DWP,
               "tconv16": "edgenn_tconv_s16_gemm_dsp", "tconv8": "edgenn_tconv_s8_gemm_dsp"}
    for i in range(n):
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        st = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        dl = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        h = int(rng.integers((kh - 1) * dl[0] + 1, 12))
        w = int(rng.integers((kw - 1) * dl[1] + 1, 12))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        act = [Activation.NONE, Activation.RELU, Activation.RELU6][int(rng.integers(0, 3))]
        bias = [DType.INT64, DType.INT32, None][int(rng.integers(0, 3))]
        common = {"strides": st, "dilations": dl, "pads": pads, "activation": act}
        if kind == "conv":
            ci, co = int(rng.integers(1, 20)), int(rng.integers(1, 20))
            layer = _conv_like(i, "Conv2D", rng, DType.INT16, (1, h, w, ci), (co, kh, kw, ci),
                               bias, kernels[kind], groups=1, **common)
        elif kind == "pw":
            ci, co = int(rng.integers(1, 80)), int(rng.integers(1, 20))
            common.update(strides=(1, 1), pads=(0, 0, 0, 0))
            layer = _conv_like(i, "Conv2D", rng, DType.INT16, (1, h, w, ci), (co, 1, 1, ci),
                               bias, kernels[kind], groups=1, **common)
        elif kind == "dw":
            c = 4 * int(rng.integers(1, 7))
            layer = _conv_like(i, "Conv2D", rng, DType.INT16, (1, h, w, c), (c, kh, kw, 1),
                               bias, kernels[kind], groups=c, **common)
        elif kind == "dwp":  # any stride, one axis undilated
            c = int(rng.integers(2, 25))
            common.update(dilations=(dl[0], 1) if i % 2 else (1, dl[1]))
            layer = _conv_like(i, "Conv2D", rng, DType.INT16, (1, h, w, c), (c, kh, kw, 1),
                               bias, kernels[kind], groups=c, **common)
        else:
            dtype = DType.INT16 if kind == "tconv16" else DType.INT8
            ci, co = int(rng.integers(1, 12)), int(rng.integers(1, 12))
            # crops within the kernel's reach, so that some output is left
            common["pads"] = (int(rng.integers(0, kh)), int(rng.integers(0, kw)),
                              int(rng.integers(0, kh)), int(rng.integers(0, kw)))
            b = (DType.INT64 if dtype is DType.INT16 else DType.INT32) if bias else None
            layer = _conv_like(i, "TransposeConv2D", rng, dtype, (1, h // 2 + 1, w // 2 + 1, ci),
                               (co, kh, kw, ci), b, kernels[kind], groups=1,
                               output_padding=(0, 0), **common)
        out.append(layer)
    return out


@needs_arm
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["conv", "dw", "tconv16", "tconv8", "pw", "dwp"])
def test_random_layers_match_ref(kind: str) -> None:
    seed = ["conv", "dw", "tconv16", "tconv8", "pw", "dwp"].index(kind) + 40
    layers = _random_layers(np.random.default_rng(seed), kind, 40)
    graph, _ = _merge(layers)
    core = get_core("cortex-m4")
    claimed = [la for la in layers if select_kernel(la.node, graph, core).name == la.kernel]
    assert len(claimed) >= 10, f"only {len(claimed)} of 40 {kind} layers claimed"
    _check(claimed)
