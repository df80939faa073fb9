"""The widened-weight form of the 16x8 pointwise kernel (``pointwise_s16_wide``) on the emulated
Cortex-M4 against TFLite Micro (the layers exported to one .tflite) and the reference runtime.

Random 1x1 layers, seeded: short K (the form's layers: every group tail 1-3 channels, odd K,
odd and single pixel counts, every fused activation) and layers whose constants defeat its
proofs: an int64 bias past int32 (``fold`` fails: the sum cannot start at the bias), an int32
bias (TFLite's wrapping sum), a long K (the offset form); each layer must take the form the
test names, so both paths run."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edgenn.api import compile_model
from edgenn.backends.cortexm.kernels.pointwise_s16 import PointwiseS16
from edgenn.backends.cortexm.kernels.pointwise_s16_wide import stream
from edgenn.backends.cortexm.targets import get_core
from edgenn.ir import Activation, DType
from tests.test_cortexm_s16ops import S16_PW, Layer, _big_bias, _check, _conv_like, _merge

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]


def _layer(i: int, rng: np.random.Generator, kind: str) -> Layer:
    npix = [1, 2, 3, 7, 10][int(rng.integers(0, 5))]
    ci = int(rng.integers(1, 33)) if kind != "long" else int(rng.integers(34, 90))
    co = int(rng.integers(1, 20))
    bias = {"wide": [DType.INT64, None][int(rng.integers(0, 2))], "big": DType.INT64,
            "int32": DType.INT32, "long": DType.INT64}[kind]
    layer = _conv_like(i, "Conv2D", rng, DType.INT16, (1, 1, npix, ci), (co, 1, 1, ci), bias,
                       S16_PW, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), groups=1,
                       activation=ACTS[int(rng.integers(0, len(ACTS)))])
    return _big_bias(layer, rng) if kind == "big" else layer


def _layers() -> tuple[list[Layer], list[str]]:
    rng = np.random.default_rng(2516)
    kinds = ["wide"] * 14 + ["big"] * 3 + ["int32"] * 3 + ["long"] * 3
    return [_layer(i, rng, k) for i, k in enumerate(kinds)], kinds


@needs_arm
def test_wide_form_and_its_fallbacks_match_tflm_and_ref() -> None:
    tflm = pytest.importorskip("edgenn.oracles.tflm")
    pytest.importorskip("tflite_micro")
    from edgenn.export import export_tflite

    layers, kinds = _layers()
    graph, xs = _merge(layers)
    core = get_core("cortex-m4")
    for layer, kind in zip(layers, kinds, strict=True):
        comment = PointwiseS16().prepare(layer.node, graph, core).comment
        assert ("widened" in comment) == (kind == "wide"), (kind, comment)
        # the long K keeps the offset form's bias-started sum; the others cannot start there
        assert ("bias in the sum" in comment) == (kind in ("wide", "long")), (kind, comment)
    _check(layers)  # every layer on PointwiseS16, cortex-m4 == ref
    want = tflm.tflm_run(export_tflite(graph), *xs)
    got = compile_model(graph, "cortex-m4").run(*xs)
    for layer, g, w in zip(layers, got, want, strict=True):
        assert g.shape == w.shape and int((g != w.reshape(g.shape)).sum()) == 0, layer.node


def test_stream_holds_each_groups_biases_widened_words_and_multipliers() -> None:
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (6, 5)).astype(np.int8)  # 2 groups (4 + 2), odd K
    quant = np.zeros((6, 4), np.int64)
    quant[:, 0] = rng.integers(-2**31, 2**31, 6)
    quant[:, 1] = rng.integers(-2**31, 2**31, 6)
    s = stream(w, quant.ravel()).astype(np.int64)
    kp = 3
    pos = 0
    for c0, n in ((0, 4), (4, 2)):
        assert list(s[pos:pos + n]) == list(quant[c0:c0 + n, 0] % 2**32)
        pos += n
        for j in range(kp):
            for c in range(c0, c0 + n):
                lo, hi = int(w[c, 2 * j]), int(w[c, 2 * j + 1]) if 2 * j + 1 < 5 else 0
                assert s[pos] == (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)
                pos += 1
        assert list(s[pos:pos + n]) == list(quant[c0:c0 + n, 1] % 2**32)
        pos += n
    assert pos == s.size
