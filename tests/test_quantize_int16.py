"""The 16x8 scheme: ``quantize(..., activations="int16")`` (int16 activations with symmetric
per-tensor scales, int8 per-channel weights, int64 biases), its export, and TFLite Micro
running the exported model bit-exactly like edgenn's reference runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgenn.errors import EdgennError
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.quantize import dequantize_output, quantize, quantize_input, scheme
from tests.test_quantize import branch_graph, cnn_graph, lrn_graph

ROOT = Path(__file__).resolve().parents[1]
CNN = ROOT / "edgenn" / "models" / "mnist_cnn.onnx"


def _data(graph: Graph, n: int, seed: int) -> np.ndarray:
    shape = graph.tensor(graph.inputs[0]).shape[1:]
    return np.random.default_rng(seed).normal(0, 1, (n, *shape)).astype(np.float32)


def _tflm(data: bytes, xq: np.ndarray) -> np.ndarray:
    from edgenn.oracles.tflm import tflm_run

    pytest.importorskip("tflite_micro")
    (out,) = tflm_run(data, xq)
    return out


def _ref(q: Graph, xq: np.ndarray) -> np.ndarray:
    from edgenn.backends.ref import compile_ref

    (out,) = compile_ref(q).run(xq)
    return out


# -- the rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize("lo, hi", [(-1.0, 3.0), (0.0, 6.0), (-7.5, 0.5), (2.0, 2.0)])
def test_symmetric_params_cover_the_range_with_zero_point_0(lo: float, hi: float) -> None:
    p = scheme.INT16.params(lo, hi)
    assert p.zp == 0 and p.s == pytest.approx(max(abs(lo), abs(hi)) / 32767, rel=1e-6)
    q = scheme.quantize_per_tensor(np.array([lo, hi, 0.0]), p, DType.INT16)
    assert q.dtype == np.int16 and q[2] == 0 and np.abs(q).max() <= 32767


def test_int16_ranges_fix_softmax_logistic_tanh_outputs() -> None:
    g = cnn_graph()
    ranges = {n: (-2.0, 3.0) for n in ["x", "c1", "p1", "c2", "r", "logits", "prob"]}
    params = scheme.activation_ranges(g, ranges, list(g.nodes), act=scheme.INT16)
    assert params["prob"] == QuantParams.per_tensor(1 / 32768, 0)
    assert params["c1"] == params["p1"] and params["c2"] == params["r"]
    assert params["x"] == scheme.symmetric_params(-2.0, 3.0)
    for op in ("Sigmoid", "Tanh"):
        assert scheme.INT16.fixed_params(op) == QuantParams.per_tensor(1 / 32768, 0)
    # int8: TFLite's fixed Logistic / Tanh outputs (quantization spec)
    assert scheme.INT8.fixed_params("Sigmoid") == QuantParams.per_tensor(1 / 256, -128)
    assert scheme.INT8.fixed_params("Tanh") == QuantParams.per_tensor(1 / 128, 0)


def test_int64_bias_keeps_large_values() -> None:
    p = QuantParams(np.array([1e-9, 1e-3], np.float32), np.zeros(2, np.int64), axis=0)
    q = scheme.quantize_bias(np.array([5.0, -1.25]), p, DType.INT64)
    assert q.dtype == np.int64
    assert q[0] == round(5.0 / float(np.float32(1e-9))) and q[1] == -1250  # beyond int32


def test_unknown_activation_type() -> None:
    g = cnn_graph()
    with pytest.raises(EdgennError, match="unknown activation type 'int4'"):
        quantize(g, _data(g, 8, 1), activations="int4")


# -- the int16 graph -----------------------------------------------------------------------------


def test_quantized_cnn_follows_the_16x8_scheme() -> None:
    g = cnn_graph()
    calib = _data(g, 64, 10)
    q = quantize(g, calib, activations="int16")
    assert [n.op for n in q.nodes] == [n.op for n in g.nodes]
    for t in q.tensors.values():
        assert t.quant is not None, t.name
        if not t.is_const:
            assert t.dtype == DType.INT16 and t.quant.axis is None and t.quant.zp == 0
    amax = float(np.abs(calib).max())
    assert q.tensor("x").quant == QuantParams.per_tensor(float(np.float32(amax / 32767)), 0)
    assert q.tensor("prob").quant == QuantParams.per_tensor(1 / 32768, 0)
    for node in q.nodes:
        if node.op in ("Conv2D", "FullyConnected"):
            x, w, b = (q.tensor(n) for n in node.inputs)
            assert w.dtype == DType.INT8 and w.quant is not None and w.quant.axis == 0
            assert b.dtype == DType.INT64 and b.quant is not None and x.quant is not None
            expected = (np.float64(x.quant.s) * w.quant.scale).astype(np.float32)
            np.testing.assert_array_equal(b.quant.scale, expected)
    assert "16x8" in q.metadata["quantization"]


def test_float_only_operator_runs_between_int16_dequantize_and_quantize() -> None:
    g = lrn_graph()
    q = quantize(g, _data(g, 32, 13), activations="int16")
    assert [n.op for n in q.nodes] == ["Conv2D", "Dequantize", "LRN", "Quantize", "Conv2D"]
    assert q.nodes[3].attr("dtype") == "int16"
    assert q.tensor(q.nodes[3].outputs[0]).dtype == DType.INT16
    assert q.tensor("y").dtype == DType.INT16


@pytest.mark.parametrize("build", [cnn_graph, branch_graph])
def test_tflite_micro_runs_the_int16_export_bit_exactly(build) -> None:  # type: ignore[no-untyped-def]
    from edgenn.export import export_tflite

    g = build()
    q = quantize(g, _data(g, 64, 14), activations="int16")
    x = _data(g, 40, 15) * 1.3  # some inputs saturate
    xq = quantize_input(q, x)
    assert xq.dtype == np.int16
    ref = _ref(q, xq)
    tflm = _tflm(export_tflite(q), xq)
    assert tflm.dtype == np.int16 and tflm.shape == ref.shape
    assert int(np.count_nonzero(tflm != ref)) == 0
    # finer activations: closer to the float model than the int8 graph
    from edgenn.backends.ref import compile_ref

    (fl,) = compile_ref(g).run(x)
    q8 = quantize(g, _data(g, 64, 14))
    err16 = np.abs(dequantize_output(q, ref) - fl).mean()
    err8 = np.abs(dequantize_output(q8, _ref(q8, quantize_input(q8, x))) - fl).mean()
    assert err16 < err8, (err16, err8)


def test_quantize_input_matches_tflite_micro_int16_quantize() -> None:
    """A float -> int16 QUANTIZE graph run by TFLM is the oracle for the int16 rounding."""
    from edgenn.export import export_tflite

    p = scheme.INT16.params(-1.0, 2.0)
    tensors = {"x": Tensor("x", (1, 64), DType.FLOAT32),
               "y": Tensor("y", (1, 64), DType.INT16, p)}
    node = Node("q", "Quantize", ("x",), ("y",), {"dtype": "int16"})
    g = Graph("q", tensors, [node], ("x",), ("y",)).validate()
    rng = np.random.default_rng(16)
    steps = rng.integers(-33000, 33000, (8, 64)) + 0.5  # exact half steps, both signs
    x = np.concatenate([(steps * p.s).astype(np.float32), rng.normal(0, 2, (8, 64))])
    x = x.astype(np.float32)
    tflm = _tflm(export_tflite(g), x)
    assert tflm.dtype == np.int16
    np.testing.assert_array_equal(tflm, scheme.quantize_per_tensor(x, p, DType.INT16))


# -- acceptance: the shipped MNIST CNN -----------------------------------------------------------


@pytest.fixture(scope="module")
def mnist():  # type: ignore[no-untyped-def]
    from edgenn.data import mnist_split
    from edgenn.frontends.onnx import load_onnx

    graph = load_onnx(CNN.read_bytes(), name=str(CNN))
    x_train, y_train = mnist_split("train")
    pick = np.sort(np.random.default_rng(0).choice(len(x_train), 500, replace=False))
    calib = (x_train[pick] / 255.0).astype(np.float32)[:, None]  # NCHW
    x_test, y_test = mnist_split("test")
    x_test = (x_test / 255.0).astype(np.float32)[:, None]
    return graph, calib, y_train[pick], x_test, y_test


def _run(q: Graph, x_nchw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xq = quantize_input(q, x_nchw.transpose(0, 2, 3, 1))  # the quantized graph is NHWC
    return xq, _ref(q, xq)


def test_mnist_int16_tflite_micro_parity_and_accuracy(mnist) -> None:  # type: ignore[no-untyped-def]
    from edgenn.backends.ref import compile_ref
    from edgenn.export import export_tflite

    graph, calib, y_calib, x_test, y_test = mnist
    q16 = quantize(graph, calib, activations="int16")
    q8 = quantize(graph, calib)
    assert all(q16.tensor(n.inputs[0]).dtype == DType.INT16 for n in q16.nodes)

    xq, out16 = _run(q16, x_test)
    tflm = _tflm(export_tflite(q16), xq)
    mismatches = int(np.count_nonzero(tflm != out16))
    print(f"\nTFLM vs ref, int16 MNIST CNN on {len(xq)} digits: {mismatches} mismatching outputs")
    assert tflm.dtype == np.int16 and mismatches == 0

    (fl_test,) = compile_ref(graph).run(x_test)
    (fl_calib,) = compile_ref(graph).run(calib)
    _, out8 = _run(q8, x_test)
    acc = {"float": np.mean(fl_test.argmax(1) == y_test),
           "int8": np.mean(out8.argmax(1) == y_test), "int16": np.mean(out16.argmax(1) == y_test)}
    acc_calib = {name: np.mean(_run(q, calib)[1].argmax(1) == y_calib)
                 for name, q in (("int8", q8), ("int16", q16))}
    err = {name: float(np.abs(dequantize_output(q, o) - fl_test).mean())
           for name, q, o in (("int8", q8, out8), ("int16", q16, out16))}
    print("MNIST test " + "  ".join(f"{k} {v:.2%}" for k, v in acc.items())
          + " | calibration " + "  ".join(f"{k} {v:.2%}" for k, v in acc_calib.items())
          + " | mean |logit - float| " + "  ".join(f"{k} {v:.4f}" for k, v in err.items()))
    assert acc_calib["int16"] >= acc_calib["int8"]
    assert acc["int16"] >= acc["float"] - 0.005  # the bar the int8 model meets
    assert err["int16"] < 0.75 * err["int8"]  # int16 activations track the float model closer


def test_cli_quantize_int16_writes_a_model_tflite_micro_loads(tmp_path: Path) -> None:
    from edgenn.cli.main import main
    from edgenn.frontends.tflite import load_tflite

    out = tmp_path / "cnn16.tflite"
    argv = ["quantize", str(CNN), "--calib", "mnist", "--calib-size", "64",
            "--activations", "int16", "-o", str(out)]
    assert main(argv) == 0
    g = load_tflite(out.read_bytes(), name=str(out))
    assert g.tensor(g.inputs[0]).dtype == DType.INT16
    assert any(n.op == "Conv2D" for n in g.nodes)
    shape = (3, *g.tensor(g.inputs[0]).shape[1:])
    xq = np.random.default_rng(4).integers(0, 32767, shape).astype(np.int16)
    assert np.array_equal(_tflm(out.read_bytes(), xq), _ref(g, xq))


def test_relu_clip_keeps_symmetric_int16() -> None:
    """A fused ReLU clips the range to [0, hi]; the int16 parameters stay symmetric."""
    g = cnn_graph()
    q = quantize(g, _data(g, 32, 3), activations="int16")
    p = q.tensor("c1").quant
    assert p is not None and p.zp == 0
    node = next(n for n in q.nodes if n.name == "conv1")
    assert node.attr("activation") == Activation.RELU
