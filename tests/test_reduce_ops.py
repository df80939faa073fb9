"""The reduce group beyond the TFLite conformance cases: ONNX imports (ReduceMax / Min / Sum,
ArgMax / ArgMin, CumSum, LpNormalization, Resize, int8 QDQ MatMul) against onnxruntime, and
the Cortex-M kernels' requantizing paths (which no TFLite model of TFLM expresses) against the
reference runtime."""

from __future__ import annotations

import shutil

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.api import compile_model
from edgenn.backends.ref import compile_ref
from edgenn.errors import ShapeError, UnsupportedOperatorError
from edgenn.frontends.onnx import load_onnx
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import DType, Graph, Node, QuantParams, Tensor
from edgenn.oracles.tflm import tflm_run
from tests.conformance.spec import Case, const, f32, i8, model_bytes

X_SHAPE = (1, 4, 6, 5)


def _model(op: str, attrs: dict[str, object], consts: dict[str, np.ndarray], opset: int,
           nhwc: bool, out_type: int = TensorProto.FLOAT,
           shape: tuple[int, ...] = X_SHAPE) -> bytes:
    """x -> [MaxPool 1x1, which makes edgenn store x NHWC] -> op(x, *consts) -> y."""
    nodes = []
    src = "x"
    if nhwc:
        nodes.append(helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[1, 1]))
        src = "p"
    nodes.append(helper.make_node(op, [src, *consts], ["y"], **attrs))
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", out_type, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def _both(data: bytes, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    got = compile_ref(load_onnx(data, "t.onnx")).run(x)[0]
    return got, want


def _x(shape: tuple[int, ...] = X_SHAPE, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


I64 = np.int64
FLOAT_CASES = {
    "reduce_max_c_keep": ("ReduceMax", {"axes": [1], "keepdims": 1}, {}, 13, True),
    "reduce_max_hw_drop": ("ReduceMax", {"axes": [2, 3], "keepdims": 0}, {}, 13, True),
    "reduce_max_opset18_input": ("ReduceMax", {"keepdims": 1}, {"a": np.array([-1], I64)},
                                 18, False),
    "reduce_min_all": ("ReduceMin", {"keepdims": 1}, {}, 13, True),
    "reduce_sum_opset13_input": ("ReduceSum", {"keepdims": 0}, {"a": np.array([1, 3], I64)},
                                 13, True),
    "reduce_sum_keep": ("ReduceSum", {"keepdims": 1}, {"a": np.array([2], I64)}, 13, False),
    "cumsum_c_exclusive_reverse": ("CumSum", {"exclusive": 1, "reverse": 1},
                                   {"a": np.array(1, I64)}, 14, True),
    "cumsum_w": ("CumSum", {}, {"a": np.array(-1, np.int32)}, 14, False),
    "l2_channels_nhwc": ("LpNormalization", {"axis": 1}, {}, 13, True),
    "l2_last": ("LpNormalization", {"axis": -1}, {}, 13, False),
    "l2_middle": ("LpNormalization", {"axis": 2}, {}, 13, False),
}


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_onnx_float_operator_matches_onnxruntime(case: str) -> None:
    op, attrs, consts, opset, nhwc = FLOAT_CASES[case]
    got, want = _both(_model(op, attrs, consts, opset, nhwc), _x())
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,attrs,nhwc", [
    ("ArgMax", {"axis": 1, "keepdims": 1}, True),
    ("ArgMax", {"axis": 3, "keepdims": 0}, True),
    ("ArgMin", {"axis": -1, "keepdims": 0, "select_last_index": 1}, False),
    ("ArgMin", {"axis": 2, "keepdims": 1}, False),
])
def test_onnx_arg_min_max_is_exact(op: str, attrs: dict[str, object], nhwc: bool) -> None:
    x = np.round(_x() * 2).astype(np.float32)  # ties, so select_last_index matters
    got, want = _both(_model(op, attrs, {}, 13, nhwc, TensorProto.INT64), x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def _resize(mode: str, coord: str, *, scales: list[float] | None = None,
            sizes: list[int] | None = None, nearest: str = "round_prefer_floor",
            nhwc: bool = True) -> bytes:
    consts = {"roi": np.array([], np.float32),
              "scales": np.array(scales or [], np.float32)}
    if sizes is not None:
        consts["sizes"] = np.array(sizes, I64)
    attrs = {"mode": mode, "coordinate_transformation_mode": coord, "nearest_mode": nearest}
    return _model("Resize", attrs, consts, 13, nhwc)


@pytest.mark.parametrize("data", [
    _resize("nearest", "asymmetric", scales=[1, 1, 2, 2], nearest="floor"),
    _resize("nearest", "half_pixel", sizes=[1, 4, 12, 10], nhwc=False),
    _resize("nearest", "align_corners", sizes=[1, 4, 4, 9], nearest="round_prefer_ceil"),
    _resize("nearest", "tf_half_pixel_for_nn", sizes=[1, 4, 9, 7], nearest="floor"),
    _resize("linear", "half_pixel", scales=[1, 1, 2, 2]),
    _resize("linear", "pytorch_half_pixel", sizes=[1, 4, 4, 3]),
    _resize("linear", "align_corners", sizes=[1, 4, 11, 7]),
    _resize("linear", "asymmetric", sizes=[1, 4, 9, 8]),
], ids=["nn_asym_floor", "nn_half_pixel_up2", "nn_align", "nn_tf_half", "linear_half_up2",
        "linear_pytorch_down", "linear_align", "linear_asym"])
def test_onnx_resize_matches_onnxruntime(data: bytes) -> None:
    got, want = _both(data, _x())
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_onnx_resize_that_tflite_cannot_express_is_refused() -> None:
    # ceil(i / 2) is none of TFLite's floor(i / 2), floor((i + 0.5) / 2) or
    # round(i * (in - 1) / (out - 1))
    data = _resize("nearest", "asymmetric", scales=[1, 1, 2, 2], nearest="ceil")
    with pytest.raises(UnsupportedOperatorError, match="not expressible"):
        load_onnx(data, "t.onnx")
    with pytest.raises(UnsupportedOperatorError, match="cubic"):
        load_onnx(_resize("cubic", "half_pixel", scales=[1, 1, 2, 2]), "t.onnx")


def test_onnx_qdq_matmul_of_two_computed_operands_is_int8() -> None:
    sa, sb, so = 0.02, 0.03, 0.1
    q = {"sa": np.array(sa, np.float32), "sb": np.array(sb, np.float32),
         "so": np.array(so, np.float32), "z": np.array(0, np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["a", "sa", "z"], ["aq"]),
             helper.make_node("DequantizeLinear", ["aq", "sa", "z"], ["ad"]),
             helper.make_node("QuantizeLinear", ["b", "sb", "z"], ["bq"]),
             helper.make_node("DequantizeLinear", ["bq", "sb", "z"], ["bd"]),
             helper.make_node("MatMul", ["ad", "bd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "so", "z"], ["mq"]),
             helper.make_node("DequantizeLinear", ["mq", "so", "z"], ["y"])]
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3, 8]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 8, 4])]
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in q.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    data = model.SerializeToString()
    g = load_onnx(data, "t.onnx")
    (mm,) = [n for n in g.nodes if n.op == "BatchMatMul"]
    assert g.tensor(mm.outputs[0]).dtype is DType.INT8
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (1, 3, 8)).astype(np.float32)
    b = rng.uniform(-2, 2, (1, 8, 4)).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(
        None, {"a": a, "b": b})[0]
    got = compile_ref(g).run(a, b)[0]
    # onnxruntime rounds the float product half to even, TFLM's fixed point half away
    assert np.abs(got - want).max() <= so + 1e-6


# -- Cortex-M requantizing paths against the reference runtime -----------------------------
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def _graph(node: Node, x: Tensor, y: Tensor) -> Graph:
    return Graph("g", {x.name: x, y.name: y}, (node,), (x.name,), (y.name,))


@needs_arm
def test_cortexm_reduce_max_and_resize_requantize_like_ref() -> None:
    rng = np.random.default_rng(5)
    cases = []
    x8 = Tensor("x", (1, 4, 5, 6), DType.INT8, QuantParams.per_tensor(0.05, -3))
    cases.append((Node("m", "ReduceMin", ("x",), ("y",), {"axes": (1, 3), "keepdims": False}),
                  x8, Tensor("y", (1, 5), DType.INT8, QuantParams.per_tensor(0.03, 7))))
    x16 = Tensor("x", (1, 3, 4, 2), DType.INT16, QuantParams.per_tensor(0.001))
    cases.append((Node("r", "Resize", ("x",), ("y",), {"mode": "nearest", "size": (5, 7)}),
                  x16, Tensor("y", (1, 5, 7, 2), DType.INT16, QuantParams.per_tensor(0.0017))))
    cases.append((Node("r", "Resize", ("x",), ("y",),
                       {"mode": "linear", "size": (7, 3), "half_pixel_centers": True}),
                  x8, Tensor("y", (1, 7, 3, 6), DType.INT8, QuantParams.per_tensor(0.04, 2))))
    for node, x, y in cases:
        g = _graph(node, x, y)
        info = np.iinfo(x.dtype.numpy)
        xs = rng.integers(info.min, info.max, (1, *x.shape[1:]), endpoint=True)
        xs = xs.astype(x.dtype.numpy)
        want = compile_ref(g).run(xs)[0]
        got = compile_model(g, "cortex-m4").run(xs)[0]
        np.testing.assert_array_equal(got, want, err_msg=str(node))


def test_onnx_resize_opset10_is_refused() -> None:
    data = _model("Resize", {"mode": "nearest"},
                  {"scales": np.array([1, 1, 2, 2], np.float32)}, 10, True)
    with pytest.raises(UnsupportedOperatorError, match="opset 10"):
        load_onnx(data, "t.onnx")


# -- TFLite imports that edgenn refuses, and tensors without a batch axis -----------------
def test_tflite_l2norm_with_fused_relu_and_hybrid_batch_matmul_are_refused() -> None:
    l2 = Case("L2_NORMALIZATION", "relu", (f32((1, 4)),), (f32((1, 4)),),
              ("L2NormOptions", {"fused_activation_function": 1}))
    with pytest.raises(UnsupportedOperatorError, match="fused activation"):
        load_tflite(model_bytes([l2]), name="l2")
    hybrid = Case("BATCH_MATMUL", "hybrid", (f32((1, 2, 3)), i8((1, 3, 4), 0.1)),
                  (f32((1, 2, 4)),), ("BatchMatMulOptions", {}))
    with pytest.raises(UnsupportedOperatorError, match="hybrid"):
        load_tflite(model_bytes([hybrid]), name="bmm")


def test_reduction_that_drops_the_batch_axis_runs_a_batch_sample_by_sample() -> None:
    """Output [4, 5] has no batch axis: a batch of the [1, 4, 5] input runs one sample at a
    time (edgenn.ir.batch), each equal to TFLM's."""
    case = Case("REDUCE_MAX", "drop_axis0", (f32((1, 4, 5)), const([0], DType.INT32)),
                (f32((4, 5)),), ("ReducerOptions", {"keep_dims": False}))
    data = model_bytes([case])
    exe = compile_ref(load_tflite(data, name="r"))
    x = _x((1, 4, 5))
    np.testing.assert_array_equal(exe.run(x)[0], tflm_run(data, x)[0])
    xs = _x((2, 1, 4, 5))
    got = exe.run(xs)[0]
    assert got.shape == (2, 4, 5)
    np.testing.assert_array_equal(got, tflm_run(data, xs)[0])
    np.testing.assert_array_equal(exe.run(xs.reshape(2, 4, 5))[0], got)  # the declared 1 as N
    with pytest.raises(ShapeError, match="declared"):
        exe.run(_x((2, 3, 5)))
