"""ONNX Cast: to the type the tensor already has it is the identity (checked against
onnxruntime); to another type it is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import EdgennError
from edgenn.frontends.onnx import load_onnx

ort = pytest.importorskip("onnxruntime")


def _model(to: int) -> bytes:
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Cast", ["r"], ["y"], to=to)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("y", to, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_cast_to_the_same_type_is_the_identity() -> None:
    data = _model(TensorProto.FLOAT)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    graph = load_onnx(data, "cast.onnx")
    assert "Cast" not in {n.op for n in graph.nodes}
    np.testing.assert_array_equal(compile_ref(graph).run(x)[0], want[0])


def test_cast_to_another_type_is_one_line() -> None:
    with pytest.raises(EdgennError, match=r"^[^\n]*Cast from float32 to int32 is not supported$"):
        load_onnx(_model(TensorProto.INT32), "cast.onnx")
