"""Float16 weights (TFLite's float16 quantization): FLOAT16 constants and their DEQUANTIZE
fold to float32 constants at import; the model runs on ref and host as LiteRT runs it, and
``edgenn quantize`` turns it into int8 / 16x8 files that TFLite Micro, the reference runtime
and the Cortex-M4 target run bit-exactly alike.

Fixtures: ``tests/fixtures/float16/make_float16.py`` (TensorFlow's converter).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite
import tflite_build as tb

from edgenn.api import compile_model
from edgenn.errors import ModelFormatError, UnsupportedOperatorError
from edgenn.export import export_tflite
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import DType
from edgenn.oracles.tflm import tflm_run
from edgenn.quantize import float_islands, quantize, quantize_input

FIXTURES = Path(__file__).parent / "fixtures" / "float16"
MODELS = ["cnn_fp16", "mobilenet_fp16", "tanh_fp16", "lstm_fp16", "seanet_fp16"]
FLOAT16 = int(tflite.TensorType.FLOAT16)
OP = tflite.BuiltinOperator


def _data(name: str) -> bytes:
    return (FIXTURES / f"{name}.tflite").read_bytes()


def _inputs(graph_shape: tuple[int, ...], n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, (n, *graph_shape[1:])).astype(np.float32)


def _litert(data: bytes, x: np.ndarray) -> np.ndarray:
    """LiteRT's builtin kernels (no XNNPACK delegate), one sample at a time, each from the
    initial state (LiteRT keeps an LSTM's state across invocations unless reset)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_content=data, experimental_op_resolver_type=(
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    interp.allocate_tensors()
    (inp,), (out,) = interp.get_input_details(), interp.get_output_details()
    rows = []
    for row in x:
        interp.reset_all_variables()
        interp.set_tensor(inp["index"], row[None])
        interp.invoke()
        rows.append(interp.get_tensor(out["index"])[0])
    return np.stack(rows)


@pytest.mark.parametrize("name", MODELS)
def test_float16_weights_fold_to_float32_constants(name: str) -> None:
    data = _data(name)
    model = tflite.Model.GetRootAsModel(data, 0)
    sub = model.Subgraphs(0)
    fp16 = sum(sub.Tensors(i).Type() == FLOAT16 for i in range(sub.TensorsLength()))
    assert fp16 > 0  # the fixture really stores float16 weights
    graph = load_tflite(data, name)
    assert all(n.op != "Dequantize" for n in graph.nodes)
    assert all(t.dtype is DType.FLOAT32 for t in graph.tensors.values())
    consts = [t for t in graph.tensors.values() if t.is_const and t.data is not None]
    assert consts
    for t in consts:  # widened float16: every value is exactly a float16
        assert t.data is not None
        np.testing.assert_array_equal(t.data.astype(np.float16).astype(np.float32), t.data)


@pytest.mark.parametrize("target", ["ref", "host"])
@pytest.mark.parametrize("name", MODELS)
def test_float16_model_matches_litert(name: str, target: str) -> None:
    data = _data(name)
    graph = load_tflite(data, name)
    x = _inputs(graph.tensor(graph.inputs[0]).shape, 6, seed=1)
    (ours,) = compile_model(graph, target).run(x)
    np.testing.assert_allclose(ours, _litert(data, x), rtol=1e-5, atol=1e-6)


def test_float16_weights_are_not_the_float32_weights() -> None:
    """The oracle sees the rounding: the float16 CNN and its float32 twin (same Keras
    weights) give different outputs, and edgenn follows each of them."""
    g16 = load_tflite(_data("cnn_fp16"), "cnn_fp16")
    g32 = load_tflite(_data("cnn_float"), "cnn_float")
    x = _inputs(g16.tensor(g16.inputs[0]).shape, 4, seed=2)
    (y16,), (y32,) = compile_model(g16).run(x), compile_model(g32).run(x)
    assert np.abs(y16 - y32).max() > 1e-6
    np.testing.assert_allclose(y32, _litert(_data("cnn_float"), x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, activations", [
    ("mobilenet_fp16", "int8"), ("cnn_fp16", "int16"),
    pytest.param("cnn_fp16", "int8", marks=pytest.mark.slow),
    pytest.param("mobilenet_fp16", "int16", marks=pytest.mark.slow),
    pytest.param("tanh_fp16", "int8", marks=pytest.mark.slow),
    pytest.param("seanet_fp16", "int8", marks=pytest.mark.slow),
    pytest.param("seanet_fp16", "int16", marks=pytest.mark.slow)])
def test_quantized_float16_model_is_bit_exact_on_tflm_ref_and_cortex_m4(
        name: str, activations: str) -> None:
    graph = load_tflite(_data(name), name)
    shape = graph.tensor(graph.inputs[0]).shape
    q = quantize(graph, _inputs(shape, 32, seed=3), activations=activations)
    assert float_islands(graph, activations) == []
    assert all(n.op not in ("Quantize", "Dequantize") for n in q.nodes)
    xq = quantize_input(q, _inputs(shape, 8, seed=4) * 1.2)
    (tflm,) = tflm_run(export_tflite(q), xq)
    (ref,) = compile_model(q, "ref").run(xq)
    (m4,) = compile_model(q, "cortex-m4").run(xq)
    assert tflm.dtype == np.dtype(activations)
    assert int(np.count_nonzero(ref != tflm)) == 0
    assert int(np.count_nonzero(m4 != tflm)) == 0


# -- float16 where edgenn does not take it: one line each ----------------------------------


def _fp16_add(const_type: int, shape: tuple[int, ...] = (4,), out_shape: tuple[int, ...] = (4,),
              buffer: np.ndarray | None = None) -> bytes:
    w = np.arange(4, dtype=np.float16) if buffer is None else buffer
    tensors = [tb.T("x", (1, 4)), tb.T("w16", shape, const_type, w),
               tb.T("w", out_shape), tb.T("y", (1, 4))]
    ops = [tb.Op(OP.DEQUANTIZE, [1], [2]), tb.Op(OP.ADD, [0, 2], [3], tb.add_options())]
    return tb.build(tensors, ops, [0], [3])


def test_hand_made_float16_dequantize_folds() -> None:
    g = load_tflite(_fp16_add(FLOAT16), "fp16_add")
    assert [n.op for n in g.nodes] == ["Add"]
    np.testing.assert_array_equal(g.tensor("w").data, np.arange(4, dtype=np.float32))


def test_float16_activation_is_one_clear_error() -> None:
    tensors = [tb.T("x", (1, 4), FLOAT16), tb.T("y", (1, 4))]
    data = tb.build(tensors, [tb.Op(OP.DEQUANTIZE, [0], [1])], [0], [1])
    with pytest.raises(UnsupportedOperatorError,
                       match=r"node 'y': tensor 'x' is float16; .*not float16 activations"):
        load_tflite(data, "fp16_act")


def test_float16_constant_read_directly_is_refused() -> None:
    tensors = [tb.T("x", (1, 4)), tb.T("w16", (4,), FLOAT16, np.ones(4, np.float16)),
               tb.T("y", (1, 4))]
    data = tb.build(tensors, [tb.Op(OP.ADD, [0, 1], [2], tb.add_options())], [0], [2])
    with pytest.raises(UnsupportedOperatorError, match=r"node 'y': tensor 'w16' is float16"):
        load_tflite(data, "fp16_direct")


def test_float16_dequantize_shape_mismatch_and_short_buffer() -> None:
    with pytest.raises(ModelFormatError, match=r"DEQUANTIZE of the float16 constant 'w16'"):
        load_tflite(_fp16_add(FLOAT16, out_shape=(2, 2)), "bad_shape")
    with pytest.raises(ModelFormatError, match=r"'w16' of shape \[4\] \(float16\) needs 8 bytes"):
        load_tflite(_fp16_add(FLOAT16, buffer=np.zeros(3, np.float16)), "short")


@pytest.mark.parametrize("target", ["ref", "host"])
def test_non_finite_float16_weight_runs_as_litert(target: str) -> None:
    """Was refused ("holds non-finite values"): +-inf and NaN are float16 data LiteRT runs
    (an ADD without activation clamps inf to FLT_MAX, NaN passes)."""
    data = _fp16_add(FLOAT16, buffer=np.array([1, np.inf, np.nan, -np.inf], np.float16))
    graph = load_tflite(data, "inf")
    x = _inputs((1, 4), 5, seed=3)
    want = _litert(data, x)
    flt_max = np.finfo(np.float32).max
    assert np.isnan(want[:, 2]).all() and (np.abs(want[:, [1, 3]]) == flt_max).all()
    np.testing.assert_array_equal(compile_model(graph, target).run(x)[0], want)


def test_cli_quantizes_a_float16_model(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The user's path: ``edgenn quantize`` on the float16 file writes an all-integer file
    that TFLite Micro and edgenn run alike."""
    from edgenn.cli.main import main

    calib, out = tmp_path / "calib.npz", tmp_path / "q.tflite"
    np.savez(calib, x=_inputs((1, 24, 24, 3), 16, seed=5))
    assert main(["quantize", str(FIXTURES / "mobilenet_fp16.tflite"), "--calib", str(calib),
                 "-o", str(out), "--activations", "int16"]) == 0
    assert "every operator is quantized" in capsys.readouterr().out
    q = load_tflite(out.read_bytes(), "q")
    assert {q.tensor(n).dtype for n in (*q.inputs, *q.outputs)} == {DType.INT16}
    xq = quantize_input(q, _inputs((1, 24, 24, 3), 6, seed=6))
    (tflm,) = tflm_run(out.read_bytes(), xq)
    (ref,) = compile_model(q).run(xq)
    assert int(np.count_nonzero(ref != tflm)) == 0
