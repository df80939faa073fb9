"""int16 pooling, softmax, quantize and dequantize on Cortex-M against the reference runtime,
for what TFLite Micro cannot check: pools whose output is declared with other parameters
(the in-place int16 requantization after the pool), ONNX's ``count_include_pad``, and a
float -> int16 -> int8 -> int16 -> float chain in one firmware."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edgenn.api import compile_model
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor

pytestmark = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                                reason="no arm-none-eabi-gcc")


def _s16(name: str, shape: tuple[int, ...], scale: float) -> Tensor:
    return Tensor(name, shape, DType.INT16, QuantParams.per_tensor(scale, 0))


def _pools_graph() -> Graph:
    """avg-pool (count_include_pad, rescaled output) -> max-pool (RELU6, rescaled output)
    -> reshape -> softmax, all int16."""
    tensors = [
        _s16("x", (1, 7, 9, 3), 4e-4),
        _s16("avg", (1, 4, 5, 3), 2.5e-4),
        _s16("mx", (1, 2, 3, 3), 3e-4),
        _s16("flat", (1, 18), 3e-4),
        _s16("prob", (1, 18), 1 / 32768),
    ]
    nodes = [
        Node("avgpool", "AvgPool2D", ("x",), ("avg",),
             {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1),
              "count_include_pad": True}),
        Node("maxpool", "MaxPool2D", ("avg",), ("mx",),
             {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 1, 1),
              "activation": Activation.RELU6}),
        Node("flatten", "Reshape", ("mx",), ("flat",), {"shape": (1, 18)}),
        Node("softmax", "Softmax", ("flat",), ("prob",), {"beta": 1.5}),
    ]
    return Graph("pools16", {t.name: t for t in tensors}, nodes, ("x",), ("prob", "avg")).validate()


def _quantize_chain() -> Graph:
    """float -> int16 -> int8 -> int16 (requantized) -> float."""
    tensors = [
        Tensor("x", (1, 40), DType.FLOAT32),
        _s16("a", (1, 40), 2e-4),
        Tensor("b", (1, 40), DType.INT8, QuantParams.per_tensor(0.03, 7)),
        _s16("c", (1, 40), 1e-3),
        _s16("d", (1, 40), 3.3e-4),
        Tensor("y", (1, 40), DType.FLOAT32),
    ]
    nodes = [
        Node("q16", "Quantize", ("x",), ("a",), {"dtype": "int16"}),
        Node("q8", "Quantize", ("a",), ("b",)),
        Node("q16b", "Quantize", ("b",), ("c",), {"dtype": DType.INT16}),
        Node("requant", "Quantize", ("c",), ("d",), {"dtype": "int16"}),
        Node("dq", "Dequantize", ("d",), ("y",)),
    ]
    return Graph("chain16", {t.name: t for t in tensors}, nodes, ("x",), ("y", "d")).validate()


def _same(graph: Graph, *xs: np.ndarray) -> None:
    want = compile_model(graph, "ref").run(*xs)
    got = compile_model(graph, "cortex-m4").run(*xs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_int16_pools_with_rescaled_outputs_and_softmax_match_ref() -> None:
    x = np.random.default_rng(0).integers(-32768, 32767, (5, 7, 9, 3)).astype(np.int16)
    _same(_pools_graph(), x)


def test_int16_quantize_chain_matches_ref() -> None:
    rng = np.random.default_rng(1)
    halves = (rng.integers(-40000, 40000, (4, 40)) + 0.5) * np.float32(2e-4)  # ties, saturation
    x = np.concatenate([rng.normal(0, 3, (4, 40)), rng.uniform(-9, 9, (4, 40)), halves])
    _same(_quantize_chain(), x.astype(np.float32))
