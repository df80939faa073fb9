"""ONNX ConvTranspose on the reference runtime against onnxruntime (float32, NCHW models)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import UnsupportedOperatorError
from edgenn.frontends.onnx import load_onnx


def _model(x_shape: tuple[int, ...], w: np.ndarray, b: np.ndarray | None, relu: bool = False,
           **attrs: object) -> bytes:
    inits = [numpy_helper.from_array(w, "W")]
    inputs = ["X", "W"]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "B"))
        inputs.append("B")
    nodes = [helper.make_node("ConvTranspose", inputs, ["T" if relu else "Y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["T"], ["Y"]))
    graph = helper.make_graph(
        nodes, "tconv", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


def _compare(data: bytes, x: np.ndarray) -> None:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"X": x})
    (got,) = compile_ref(load_onnx(data, "tconv.onnx")).run(x)
    assert got.shape == want.shape
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))
    assert err < 1e-5, err


CASES = {
    "stride1_bias": ((1, 3, 5, 4), (3, 2, 3, 3), True, {}),
    "stride_3x2_pads": ((1, 2, 3, 3), (2, 2, 3, 3), False,
                        {"strides": [3, 2], "pads": [1, 2, 1, 2]}),
    "dilated_output_padding": ((1, 2, 4, 5), (2, 3, 3, 2), True,
                               {"strides": [2, 2], "dilations": [2, 2],
                                "output_padding": [1, 1], "pads": [1, 0, 0, 2]}),
    "grouped": ((1, 4, 4, 3), (4, 3, 2, 2), True, {"group": 2, "strides": [2, 1]}),
    "depthwise_like": ((1, 3, 5, 5), (3, 1, 3, 3), True, {"group": 3, "pads": [1, 1, 1, 1]}),
    "same_upper_stride2": ((1, 2, 3, 4), (2, 2, 4, 3), True,
                           {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "same_lower_stride2": ((1, 2, 3, 4), (2, 2, 4, 3), True,
                           {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "output_shape": ((1, 2, 3, 3), (2, 3, 3, 3), True,
                     {"strides": [2, 2], "output_shape": [6, 5]}),
    "valid": ((1, 1, 4, 4), (1, 2, 3, 3), False, {"strides": [2, 2], "auto_pad": "VALID"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_transpose_matches_onnxruntime(name: str) -> None:
    x_shape, w_shape, bias, attrs = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    w = rng.uniform(-1, 1, w_shape).astype(np.float32)
    groups = int(attrs.get("group", 1))  # type: ignore[call-overload]
    b = rng.uniform(-1, 1, w_shape[1] * groups).astype(np.float32) if bias else None
    x = rng.uniform(-2, 2, x_shape).astype(np.float32)
    _compare(_model(x_shape, w, b, **attrs), x)


def test_conv_transpose_then_relu_runs_in_nhwc() -> None:
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, (3, 4, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    data = _model((1, 3, 4, 4), w, b, relu=True, strides=[2, 2], pads=[1, 1, 0, 0])
    graph = load_onnx(data, "tconv.onnx")
    assert [n.op for n in graph.nodes if n.op != "Transpose"] == ["TransposeConv2D", "Relu"]
    _compare(data, rng.uniform(-2, 2, (1, 3, 4, 4)).astype(np.float32))


def test_conv_transpose_3d_is_refused_in_one_line() -> None:
    w = np.zeros((2, 2, 3, 3, 3), np.float32)  # rank 5: 1-D (rank 3) is supported
    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ["X", "W"], ["Y"])], "t",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, (1, 2, 5, 5, 5))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "W")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOperatorError, match="only 2-D ConvTranspose"):
        load_onnx(data.SerializeToString(), "t.onnx")
