"""ONNX comparisons, logical operators and Where on computed tensors (the IR's bool tensors)
against onnxruntime on the reference runtime: float32, int32 and int64 operands, constants
broadcast either side, NCHW tensors stored NHWC, and a scalar int64 input compared as Silero
VAD compares its sample rate."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import EdgennError
from edgenn.frontends.onnx import load_onnx

ort = pytest.importorskip("onnxruntime")
F, I32, I64, B = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL


def _model(nodes: list, inputs: Sequence[tuple[str, int, Sequence[int]]],
           outputs: Sequence[tuple[str, int]], inits: dict[str, np.ndarray] | None = None,
           ) -> bytes:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, list(s)) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _check(data: bytes, *xs: np.ndarray) -> None:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs, strict=True)})
    got = compile_ref(load_onnx(data, "compare.onnx")).run(*xs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":  # a convolution's sums differ in the last bits
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("elem, dtype", [(F, np.float32), (I32, np.int32), (I64, np.int64)])
def test_comparisons_with_a_broadcast_constant(op: str, elem: int, dtype: type) -> None:
    c = RNG.integers(-2, 3, (4, 1)).astype(dtype)
    nodes = [helper.make_node(op, ["x", "c"], ["y"]), helper.make_node(op, ["c", "x"], ["z"])]
    data = _model(nodes, [("x", elem, (3, 4, 5))], [("y", B), ("z", B)], {"c": c})
    _check(data, RNG.integers(-3, 4, (3, 4, 5)).astype(dtype))


def test_logical_operators_and_where_on_nchw_tensors() -> None:
    w = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Greater", ["c", "zero"], ["pos"]),
             helper.make_node("Less", ["c", "one"], ["small"]),
             helper.make_node("And", ["pos", "small"], ["both"]),
             helper.make_node("Or", ["pos", "small"], ["either"]),
             helper.make_node("Xor", ["both", "either"], ["one_only"]),
             helper.make_node("Not", ["one_only"], ["neither_or_both"]),
             helper.make_node("Where", ["neither_or_both", "c", "zero"], ["y"])]
    data = _model(nodes, [("x", F, (1, 2, 6, 7))], [("y", F), ("one_only", B)],
                  {"w": w, "zero": np.zeros(1, np.float32), "one": np.ones(1, np.float32)})
    _check(data, RNG.standard_normal((1, 2, 6, 7)).astype(np.float32))


def test_int64_input_compared_to_a_constant() -> None:
    data = _model([helper.make_node("Equal", ["sr", "k"], ["y"])], [("sr", I64, (1,))],
                  [("y", B)], {"k": np.asarray(16000, np.int64)})
    for sr in (16000, 8000):
        _check(data, np.asarray([sr], np.int64))


def test_scalar_comparison_keeps_rank_0() -> None:
    # why: Silero VAD compares its scalar sample-rate input; the result is a scalar too
    data = _model([helper.make_node("Equal", ["sr", "k"], ["y"])], [("sr", I64, ())],
                  [("y", B)], {"k": np.asarray(16000, np.int64)})
    graph = load_onnx(data, "compare.onnx")
    assert [n.op for n in graph.nodes] == ["Equal"]
    assert graph.tensor(graph.outputs[0]).shape == ()


def test_mixed_types_are_one_line() -> None:
    data = _model([helper.make_node("Equal", ["x", "c"], ["y"])], [("x", I32, (2, 3))],
                  [("y", B)], {"c": np.zeros((2, 3), np.int64)})
    with pytest.raises(EdgennError, match=r"^[^\n]*have different types"):
        load_onnx(data, "compare.onnx")
