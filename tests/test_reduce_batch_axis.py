"""Reductions over axis 0 inside a graph: Keras LayerNormalization as the TFLite converter
writes it (MEAN over [0, 1, 2] of [1, C, 1, 1], a [1] result broadcast back against the
[1, C, 1, 1] input by MUL / SUB), run on a batch of samples on ref and checked against
TFLite Micro one sample at a time; and the threshold tail of a wake-word classifier
(GREATER_EQUAL of a score against a constant, CAST to float) on ref and cortex-m4."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import tflite

from edgenn.api import compile_model
from edgenn.export.flatbuffer import TflModel, TflOperator, TflTensor, serialize
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import DType

pytest.importorskip("tflite_micro")
from edgenn.oracles.tflm import tflm_run  # noqa: E402

OP, OPT = tflite.BuiltinOperator, tflite.BuiltinOptions
F32 = DType.FLOAT32


def _options(table: str, **fields: object):
    def build(b):
        getattr(tflite, f"{table}Start")(b)
        for key, value in fields.items():
            camel = "".join(p[:1].upper() + p[1:] for p in key.split("_"))
            getattr(tflite, f"{table}Add{camel}")(b, value)
        return getattr(tflite, f"{table}End")(b)
    return getattr(OPT, table), build


def _layer_norm_model(c: int = 16) -> bytes:
    m = TflModel()
    x = m.add_tensor(TflTensor("x", (1, c, 1, 1), F32))
    axes = m.add_tensor(TflTensor("axes", (3,), DType.INT32, data=np.array([0, 1, 2], np.int32)))
    mean = m.add_tensor(TflTensor("mean", (1,), F32))
    centred = m.add_tensor(TflTensor("centred", (1, c, 1, 1), F32))
    scaled = m.add_tensor(TflTensor("scaled", (1, c, 1, 1), F32))
    m.inputs, m.outputs = [x], [scaled]
    m.operators += [
        TflOperator(OP.MEAN, 1, [x, axes], [mean], *_options("ReducerOptions", keep_dims=False)),
        TflOperator(OP.SUB, 1, [x, mean], [centred],
                    *_options("SubOptions", fused_activation_function=0)),
        TflOperator(OP.MUL, 1, [centred, mean], [scaled],
                    *_options("MulOptions", fused_activation_function=0)),
    ]
    return serialize(m)


def test_layer_norm_mean_over_batch_axis_matches_tflm_batched():
    data = _layer_norm_model()
    x = np.random.default_rng(3).uniform(-2, 2, (8, 16, 1, 1)).astype(np.float32)
    want = tflm_run(data, x)[0]
    got = compile_model(load_tflite(data, name="layernorm"), "ref").run(x)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _threshold_model() -> bytes:
    m = TflModel()
    x = m.add_tensor(TflTensor("score", (1, 1), F32))
    k = m.add_tensor(TflTensor("threshold", (), F32, data=np.array(0.25, np.float32)))
    hit = m.add_tensor(TflTensor("hit", (1, 1), DType.BOOL))
    out = m.add_tensor(TflTensor("out", (1, 1), F32))
    m.inputs, m.outputs = [x], [out]
    m.operators += [
        TflOperator(OP.GREATER_EQUAL, 1, [x, k], [hit], *_options("GreaterEqualOptions")),
        TflOperator(OP.CAST, 1, [hit], [out]),
    ]
    return serialize(m)


@pytest.mark.parametrize("target", [
    "ref",
    pytest.param("cortex-m4", marks=pytest.mark.skipif(
        shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")),
])
def test_threshold_and_cast_match_tflm(target):
    data = _threshold_model()
    x = np.array([[-1.0], [0.2499], [0.25], [0.2501], [3.0], [0.0]], np.float32)
    want = tflm_run(data, x)[0]
    got = compile_model(load_tflite(data, name="threshold"), target).run(x)[0]
    assert want.ravel().tolist() == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    np.testing.assert_array_equal(got, want)
