"""ONNX 1-D (rank-3, N x C x L) convolution, pooling and BatchNorm, lowered to the 2-D IR ops.

Each small model runs on edgenn's reference runtime against onnxruntime (1e-5 relative). The
layout checks pin the design: a 1-D tensor is stored [N, 1, L, C], so consecutive 1-D layers
and the element-wise operators between them need no Transpose. A small audio-style network
is also quantized (int8 and 16x8), exported to .tflite and run in TFLite Micro, on the
reference runtime and as cortex-m4 firmware in the emulator: every output integer agrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import UnsupportedOperatorError
from edgenn.frontends.onnx import load_onnx
from edgenn.ir import DType, Graph

ort = pytest.importorskip("onnxruntime")

F = TensorProto.FLOAT


def _model(nodes: list, x_shape: Sequence[int], outputs: Sequence[str],
           inits: dict[str, np.ndarray] | None = None, opset: int = 17) -> bytes:
    tensors = [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, list(x_shape))],
        [helper.make_tensor_value_info(o, F, None) for o in outputs], initializer=tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _check(model: bytes, x: np.ndarray) -> Graph:
    """edgenn ref == onnxruntime on ``x`` (batch of one); returns the imported graph."""
    g = load_onnx(model, "conv1d")
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = compile_ref(g).run(x)
    assert len(got) == len(want)
    for o, w in zip(got, want, strict=True):
        assert o.shape == w.shape
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(w).max())))
    return g


def _ops(g: Graph) -> list[str]:
    return [n.op for n in g.nodes]


# -- convolution ---------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs, ci, co, k, length", [
    ({}, 4, 8, 3, 16),
    ({"pads": [1, 2]}, 3, 5, 3, 11),
    ({"strides": [2], "pads": [2, 2]}, 4, 6, 5, 17),
    ({"dilations": [3], "pads": [3, 3]}, 2, 4, 3, 20),
    ({"group": 2, "pads": [1, 1]}, 4, 6, 3, 9),
    ({"group": 6, "pads": [2, 2]}, 6, 6, 5, 13),  # depthwise
    ({"group": 3, "strides": [2]}, 3, 6, 4, 15),  # depthwise with multiplier 2
    ({"auto_pad": "SAME_UPPER", "strides": [2]}, 3, 4, 4, 15),
    ({"auto_pad": "SAME_LOWER", "strides": [3]}, 3, 4, 4, 14),
    ({"auto_pad": "VALID", "strides": [2]}, 3, 4, 3, 12),
    ({"kernel_shape": [1]}, 5, 3, 1, 7),  # pointwise
])
def test_conv1d(attrs: dict[str, Any], ci: int, co: int, k: int, length: int) -> None:
    rng = np.random.default_rng(0)
    group = attrs.get("group", 1)
    inits = {"w": _rand(rng, co, ci // group, k), "b": _rand(rng, co)}
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
                   (1, ci, length), ["y"], inits)
    g = _check(model, _rand(rng, 1, ci, length))
    assert _ops(g).count("Conv2D") + _ops(g).count("DepthwiseConv2D") == 1
    assert "Transpose" not in _ops(g)  # the boundary permutation is the host's


def test_conv1d_without_bias_and_batch_dimension_symbolic() -> None:
    rng = np.random.default_rng(1)
    w = _rand(rng, 4, 3, 3)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1])], "g",
        [helper.make_tensor_value_info("x", F, ["batch", 3, 10])],
        [helper.make_tensor_value_info("y", F, None)], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    g = load_onnx(data)
    x = _rand(rng, 3, 3, 10)  # three samples at once
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(compile_ref(g).run(x)[0], want[0], rtol=1e-5, atol=1e-5)


# -- pooling -------------------------------------------------------------------------------------


@pytest.mark.parametrize("op, attrs, length", [
    ("MaxPool", {"kernel_shape": [2], "strides": [2]}, 16),
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, 15),
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}, 14),
    ("MaxPool", {"kernel_shape": [4], "auto_pad": "SAME_UPPER"}, 9),
    ("AveragePool", {"kernel_shape": [3], "strides": [1]}, 10),
    ("AveragePool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, 11),
    ("AveragePool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1],
                     "count_include_pad": 1}, 11),
    ("AveragePool", {"kernel_shape": [2], "strides": [2], "ceil_mode": 1}, 9),
    ("AveragePool", {"kernel_shape": [3], "auto_pad": "SAME_LOWER"}, 8),
])
def test_pool1d(op: str, attrs: dict[str, Any], length: int) -> None:
    rng = np.random.default_rng(2)
    model = _model([helper.make_node(op, ["x"], ["y"], **attrs)], (1, 5, length), ["y"])
    g = _check(model, _rand(rng, 1, 5, length))
    assert {"MaxPool": "MaxPool2D", "AveragePool": "AvgPool2D"}[op] in _ops(g)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool_rank3(op: str) -> None:
    rng = np.random.default_rng(3)
    model = _model([helper.make_node(op, ["x"], ["y"])], (1, 6, 13), ["y"])
    _check(model, _rand(rng, 1, 6, 13))


# -- transposed convolution and BatchNorm --------------------------------------------------------


@pytest.mark.parametrize("attrs, ci, co, k, length", [
    ({"strides": [2]}, 4, 3, 3, 8),
    ({"strides": [2], "pads": [1, 1], "output_padding": [1]}, 3, 5, 4, 7),
    ({"strides": [3], "dilations": [2], "pads": [2, 1]}, 2, 4, 3, 6),
    ({"group": 2, "strides": [2]}, 4, 6, 3, 5),
    ({"strides": [2], "auto_pad": "SAME_UPPER"}, 3, 2, 4, 6),
    ({"strides": [2], "output_shape": [12]}, 3, 2, 3, 6),
])
def test_conv_transpose1d(attrs: dict[str, Any], ci: int, co: int, k: int,
                          length: int) -> None:
    rng = np.random.default_rng(4)
    group = attrs.get("group", 1)
    inits = {"w": _rand(rng, ci, co // group, k), "b": _rand(rng, co)}
    model = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
                   (1, ci, length), ["y"], inits)
    g = _check(model, _rand(rng, 1, ci, length))
    assert "TransposeConv2D" in _ops(g)


def _bn_inits(rng: np.random.Generator, c: int) -> dict[str, np.ndarray]:
    return {"s": rng.uniform(0.5, 1.5, c).astype(np.float32), "bb": _rand(rng, c),
            "m": _rand(rng, c), "v": rng.uniform(0.5, 2.0, c).astype(np.float32)}


def test_batchnorm_rank3() -> None:
    rng = np.random.default_rng(5)
    model = _model([helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["y"],
                                     epsilon=1e-3)], (1, 4, 9), ["y"], _bn_inits(rng, 4))
    _check(model, _rand(rng, 1, 4, 9))


def test_batchnorm_after_conv1d_folds() -> None:
    rng = np.random.default_rng(6)
    inits = {"w": _rand(rng, 6, 3, 3), **_bn_inits(rng, 6)}
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1]),
                    helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"])],
                   (1, 3, 12), ["y"], inits)
    g = _check(model, _rand(rng, 1, 3, 12))
    assert "BatchNorm" not in _ops(g) and _ops(g).count("Conv2D") == 1, _ops(g)


# -- layout between layers -----------------------------------------------------------------------


def test_elementwise_between_1d_layers_keeps_the_layout() -> None:
    """Bias-like [C, 1] constants broadcast over L; no Transpose between the 1-D layers."""
    rng = np.random.default_rng(7)
    inits = {"w1": _rand(rng, 6, 4, 3), "w2": _rand(rng, 6, 6, 3), "cb": _rand(rng, 6, 1),
             "sc": _rand(rng, 1, 6, 1), "row": _rand(rng, 1, 1, 16), "lo": np.float32(-0.5),
             "hi": np.float32(0.7), "pads": np.array([0, 0, 1, 0, 0, 3]),
             "pv": np.float32(0.25)}
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1]),
        helper.make_node("Add", ["a", "cb"], ["b"]),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Mul", ["sc", "c"], ["d"]),
        helper.make_node("LeakyRelu", ["d"], ["e"], alpha=0.2),
        helper.make_node("Conv", ["e", "w2"], ["f"], pads=[1, 1]),
        helper.make_node("Sigmoid", ["f"], ["g"]),
        helper.make_node("Mul", ["g", "row"], ["h"]),
        helper.make_node("Add", ["h", "e"], ["i"]),
        helper.make_node("Clip", ["i", "lo", "hi"], ["j"]),
        helper.make_node("Concat", ["j", "a"], ["k"], axis=1),
        helper.make_node("Pad", ["k", "pads", "pv"], ["kp"]),
        helper.make_node("MaxPool", ["kp"], ["y"], kernel_shape=[2], strides=[2]),
    ]
    g = _check(_model(nodes, (1, 4, 16), ["y"], inits), _rand(rng, 1, 4, 16))
    assert "Transpose" not in _ops(g), _ops(g)
    assert g.external_perm[g.inputs[0]] == (0, 2, 1)
    assert g.external_perm[g.outputs[0]] == (0, 2, 1)


def test_onnx_order_ops_after_1d_layers() -> None:
    """Reshape, Flatten, Transpose, Softmax and Gemm see the NCL order; a computed rank-2
    operand broadcasts against a 1-D tensor; an intermediate 1-D graph output is NCL."""
    rng = np.random.default_rng(8)
    inits = {"w": _rand(rng, 3, 2, 3), "fc": _rand(rng, 10, 30), "shape": np.array([1, 30]),
             "perm_w": _rand(rng, 3, 10)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"]),
        helper.make_node("Softmax", ["a"], ["sm"], axis=1),
        helper.make_node("Reshape", ["sm", "shape"], ["r"]),
        helper.make_node("Gemm", ["r", "fc"], ["y"], transB=1),
        helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "perm_w"], ["z"]),
        helper.make_node("Flatten", ["a"], ["fl"]),
        helper.make_node("Squeeze", ["a"], ["sq"]),
        helper.make_node("Add", ["a", "sq"], ["u"]),
    ]
    _check(_model(nodes, (1, 2, 12), ["y", "a", "z", "fl", "u"], inits), _rand(rng, 1, 2, 12))


def test_rank3_input_without_conv_stays_onnx_order() -> None:
    rng = np.random.default_rng(9)
    model = _model([helper.make_node("Relu", ["x"], ["y"])], (1, 3, 5), ["y"])
    g = _check(model, _rand(rng, 1, 3, 5))
    assert not g.external_perm


def test_3d_convolution_is_refused() -> None:
    rng = np.random.default_rng(10)
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"])], (1, 2, 4, 4, 4), ["y"],
                   {"w": _rand(rng, 3, 2, 1, 1, 1)})
    with pytest.raises(UnsupportedOperatorError, match="only 2-D convolution is supported"):
        load_onnx(model)


# -- a small audio-style network -----------------------------------------------------------------


def audio_net(rng: np.random.Generator, c_in: int = 2, length: int = 32) -> bytes:
    """Conv1d-BN-ReLU-MaxPool1d x2, residual Add, ConvTranspose1d, global pool, Gemm."""
    inits: dict[str, np.ndarray] = {}
    nodes = []
    prev, c = "x", c_in
    for i, co in enumerate((8, 12), start=1):
        inits[f"w{i}"] = (_rand(rng, co, c, 5) / np.sqrt(5 * c)).astype(np.float32)
        inits[f"b{i}"] = _rand(rng, co) * 0.1
        inits.update({f"{k}{i}": v for k, v in _bn_inits(rng, co).items()})
        nodes += [
            helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[2, 2]),
            helper.make_node("BatchNormalization", [f"c{i}", f"s{i}", f"bb{i}", f"m{i}",
                                                    f"v{i}"], [f"n{i}"]),
            helper.make_node("Relu", [f"n{i}"], [f"r{i}"]),
            helper.make_node("MaxPool", [f"r{i}"], [f"p{i}"], kernel_shape=[2], strides=[2]),
        ]
        prev, c = f"p{i}", co
    inits["wr"] = (_rand(rng, 12, 12, 3) / 6).astype(np.float32)
    inits["wt"] = (_rand(rng, 12, 6, 4) / 6).astype(np.float32)
    inits["bt"] = _rand(rng, 6) * 0.1
    inits["fc"] = (_rand(rng, 4, 6) / 2).astype(np.float32)
    inits["fb"] = _rand(rng, 4) * 0.1
    nodes += [
        helper.make_node("Conv", ["p2", "wr"], ["res"], pads=[1, 1]),
        helper.make_node("Add", ["res", "p2"], ["sum"]),
        helper.make_node("ConvTranspose", ["sum", "wt", "bt"], ["up"], strides=[2],
                         pads=[1, 1]),
        helper.make_node("GlobalAveragePool", ["up"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "fb"], ["y"], transB=1),
    ]
    return _model(nodes, (1, c_in, length), ["y"], inits)


def test_audio_net_float() -> None:
    rng = np.random.default_rng(11)
    g = _check(audio_net(rng), _rand(rng, 1, 2, 32))
    ops = _ops(g)
    assert "BatchNorm" not in ops and ops.count("Conv2D") == 3, ops
    assert "TransposeConv2D" in ops and "Transpose" not in ops, ops


@pytest.mark.parametrize("act", ["int8", "int16"])
def test_audio_net_quantized_tflm_ref_cortexm(act: str) -> None:
    pytest.importorskip("tflite_micro")
    from edgenn.api import compile_model
    from edgenn.export.tflite_export import export_tflite
    from edgenn.oracles.tflm import tflm_run
    from edgenn.quantize import dequantize_output, quantize, quantize_input

    rng = np.random.default_rng(12)
    model = audio_net(rng)
    g = load_onnx(model, "audio")
    calib = rng.uniform(-2, 2, (64, 2, 32)).astype(np.float32)
    test = rng.uniform(-2, 2, (8, 2, 32)).astype(np.float32)
    q = quantize(g, calib, activations=act)
    dtype = DType.INT8 if act == "int8" else DType.INT16
    assert q.tensor(q.inputs[0]).dtype is dtype
    assert all(q.tensor(n.inputs[0]).dtype is dtype for n in q.nodes
               if n.op in ("Conv2D", "TransposeConv2D", "MaxPool2D")), \
        [(n.op, q.tensor(n.inputs[0]).dtype) for n in q.nodes]
    # the quantizer and the runtimes take the graph's internal [N, L, C] input layout
    feed = quantize_input(q, test.transpose(0, 2, 1), 0)
    (ref,) = compile_ref(q).run(feed)
    (tflm,) = tflm_run(export_tflite(q), feed)
    (m4,) = compile_model(q, "cortex-m4").run(feed)
    assert ref.dtype == tflm.dtype == m4.dtype
    assert int(np.count_nonzero(ref != tflm)) == 0
    assert int(np.count_nonzero(ref != m4)) == 0
    # and the quantized net still computes what onnxruntime does (within a few steps)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    want = np.concatenate([sess.run(None, {"x": test[i:i + 1]})[0] for i in range(len(test))])
    got = dequantize_output(q, ref, 0)
    span = float(np.ptp(want))
    assert float(np.abs(got - want).max()) <= 0.05 * span


# -- QDQ int8 (onnxruntime.quantization) ---------------------------------------------------------


def test_qdq_conv1d_model_imports_as_int8(tmp_path: Any) -> None:
    """A QDQ 1-D model converts to int8 2-D ops in the 1-D layout and matches onnxruntime's
    literal QDQ execution within 2 output steps."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    rng = np.random.default_rng(13)
    inits = {"w1": _rand(rng, 6, 3, 3) / 3, "b1": _rand(rng, 6) * 0.1,
             "w2": _rand(rng, 6, 6, 3) / 4, "b2": _rand(rng, 6) * 0.1}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2], strides=[2]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["c"], pads=[1, 1]),
        helper.make_node("Add", ["c", "p"], ["y"]),
    ]
    cal = rng.uniform(-2, 2, (16, 1, 3, 16)).astype(np.float32)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"x": c} for c in cal])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    fp, qp = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(onnx.load_model_from_string(_model(nodes, (1, 3, 16), ["y"], inits)), fp)
    quantize_static(str(fp), str(qp), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    per_channel=True)
    data = qp.read_bytes()
    g = load_onnx(data, "qdq1d.onnx")
    ops = _ops(g)
    assert ops.count("Conv2D") == 2 and "MaxPool2D" in ops and "Transpose" not in ops, ops
    assert all(g.tensor(n.inputs[0]).dtype is DType.INT8 for n in g.nodes
               if n.op in ("Conv2D", "MaxPool2D", "Add"))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    x = rng.uniform(-2, 2, (10, 3, 16)).astype(np.float32)
    want = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(len(x))])
    got = compile_ref(g).run(x)[0]
    (deq,) = [n for n in g.nodes if n.op == "Dequantize"]
    lsb = g.tensor(deq.inputs[0]).quant.s  # type: ignore[union-attr]
    assert float(np.rint(np.abs(got - want) / lsb).max()) <= 2
