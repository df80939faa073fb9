"""ONNX Pow on float32 against onnxruntime on the reference runtime: constant exponents
(2 becomes a Mul, 1 the identity, others the IR's Pow), an integer exponent constant, a
computed exponent tensor, broadcasting, and in NHWC / 1-D layouts after a convolution; TFLite's
POW against LiteRT."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgenn.backends.ref import compile_ref
from edgenn.frontends.onnx import load_onnx
from tests.onnx_graphs import make_model, ort_run

pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT


@pytest.mark.parametrize("exponent", [np.float32(2.0), np.float32(3.0), np.float32(0.5),
                                      np.float32(1.0), np.float32(-1.5), np.int64(2),
                                      np.asarray([[2.0, 3.0, 0.5, 1.0]], np.float32)],
                         ids=["2", "3", "0.5", "1", "-1.5", "int64-2", "row"])
def test_pow_constant_exponent_matches_onnxruntime(exponent: np.ndarray) -> None:
    data = make_model([helper.make_node("Pow", ["x", "e"], ["y"])], [("x", F, [3, 4])], ["y"],
                      {"e": np.asarray(exponent)})
    x = np.abs(np.random.default_rng(0).standard_normal((3, 4))).astype(np.float32) + 0.1
    want = ort_run(data, {"x": x})
    got = compile_ref(load_onnx(data, "pow.onnx")).run(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=0)


def test_pow_exponent_two_is_a_multiply() -> None:
    data = make_model([helper.make_node("Pow", ["x", "e"], ["y"])], [("x", F, [2, 5])], ["y"],
                      {"e": np.float32(2.0)})
    ops = [n.op for n in load_onnx(data, "pow.onnx").nodes]
    assert ops == ["Mul"]


def test_pow_computed_exponent_and_negative_base() -> None:
    # why a negative base: onnxruntime gives NaN for a fractional exponent, as powf does
    data = make_model([helper.make_node("Pow", ["x", "e"], ["y"])],
                      [("x", F, [2, 6]), ("e", F, [6])], ["y"])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    e = np.asarray([2, 3, 0.5, -1, 0, 1.5], np.float32)
    x[0] = -np.abs(x[0])  # negative bases in every column
    want = ort_run(data, {"x": x, "e": e})
    got = compile_ref(load_onnx(data, "pow.onnx")).run(x, e)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=0, equal_nan=True)
    assert np.isnan(want[0]).any()  # the case is exercised


@pytest.mark.parametrize("shape", [(1, 2, 5, 6), (1, 2, 9)], ids=["nchw", "ncl"])
def test_pow_after_convolution_layouts(shape: tuple[int, ...]) -> None:
    k = [3] * (len(shape) - 2)
    w = np.random.default_rng(2).standard_normal((3, shape[1], *k)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Pow", ["c", "e"], ["y"])]
    data = make_model(nodes, [("x", F, list(shape))], ["y"],
                      {"w": w, "e": np.asarray([2.0, 3.0, 1.0], np.float32).reshape(
                          (3,) + (1,) * (len(shape) - 2))})
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    want = ort_run(data, {"x": x})
    got = compile_ref(load_onnx(data, "pow.onnx")).run(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_tflite_pow_matches_litert() -> None:
    """TFLite's POW (float32, a computed exponent broadcast over rows) imports to the same
    IR Pow; LiteRT's reference kernels are the oracle (TFLite Micro has no POW kernel)."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    from tflite_build import Op, T, build

    from edgenn.frontends.tflite import load_tflite
    from edgenn.ir.tflite_enums import OP

    data = build([T("x", (2, 5)), T("e", (5,)), T("y", (2, 5))],
                 [Op(int(OP.POW), [0, 1], [2])], [0, 1], [2])
    rng = np.random.default_rng(4)
    x = np.abs(rng.standard_normal((2, 5))).astype(np.float32) + 0.05
    e = np.asarray([2.0, 3.0, 0.5, -1.0, 1.7], np.float32)
    interp = litert.Interpreter(model_content=data, experimental_op_resolver_type=(
        litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    interp.allocate_tensors()
    ins = interp.get_input_details()
    interp.set_tensor(ins[0]["index"], x)
    interp.set_tensor(ins[1]["index"], e)
    interp.invoke()
    want = interp.get_tensor(interp.get_output_details()[0]["index"])
    got = compile_ref(load_tflite(data, "pow.tflite")).run(x, e)
    np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=0)
