"""The one forward loop (edgenn.backends.ref.runtime.forward): a float model whose values
overflow behaves the same on the reference runtime, the host target (its C layers plugged into
the loop) and onnxruntime: IEEE inf and NaN, no numpy warning on the user's terminal."""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.api import compile_model
from edgenn.cc import compiler_available
from edgenn.frontends.onnx import load_onnx

BIG = np.float32(2.0 ** 127)  # why a power of two: every sum and product below is exact


def _model() -> bytes:
    """x[1, 8] -> Gemm (rows that overflow in the sum, rows that stay finite) -> y + y (the
    finite rows overflow in numpy) -> * 0 (inf * 0 is NaN) -> Relu."""
    w = np.zeros((8, 8), np.float32)
    w[0, :2] = BIG  # 2^127 + 2^127: inf inside the FC layer
    w[1, 0] = BIG  # 2^127: finite, then inf in the Add
    w[2, 0] = -BIG
    w[3:, 2:] = np.eye(6, dtype=np.float32)[:5]  # ordinary small values pass untouched
    init = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(8, np.float32), "b"),
            numpy_helper.from_array(np.array([0, 1, 1, 1, 1, 1, 1, 1], np.float32), "z")]
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc"),
             helper.make_node("Add", ["y", "y"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "z"], ["m"], name="mul"),
             helper.make_node("Relu", ["m"], ["r"], name="relu")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8]) for n in "ysr"]
    graph = helper.make_graph(nodes, "overflow",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              outs, initializer=init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.skipif(not compiler_available(), reason="no host C compiler")
def test_overflow_is_ieee_and_silent_on_ref_host_and_onnxruntime() -> None:
    data = _model()
    x = np.ones((1, 8), np.float32)
    expected = ort.InferenceSession(data).run(None, {"x": x})
    assert np.isposinf(expected[0][0, 0]) and np.isposinf(expected[1][0, 1])
    assert np.isnan(expected[2][0, 0])  # the test really overflows and makes a NaN
    graph = load_onnx(data, "overflow.onnx")
    for target in ("ref", "host"):
        exe = compile_model(graph, target=target)
        if target == "host":
            where = {p["name"]: p["where"] for p in exe.placement()}
            assert where["fc"] == "host"  # the C layer, plugged into the forward loop
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a numpy RuntimeWarning fails the test
            got = exe.run(x)
        for name, g, e in zip("ysr", got, expected, strict=True):
            np.testing.assert_array_equal(g, e, err_msg=f"{target}: {name}")
