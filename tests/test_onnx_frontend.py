"""The ONNX importer against onnxruntime: real topologies, every operator, errors, QDQ int8."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort  # noqa: E402  (the oracle: a test dependency)
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import EdgennError, ModelFormatError, UnsupportedOperatorError
from edgenn.frontends import load
from edgenn.frontends.onnx import load_onnx
from edgenn.ir import Activation, DType
from edgenn.models import zoo

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT = sorted(p.stem for p in LIGHT_DIR.glob("light_*.onnx"))


def ort_run(model: onnx.ModelProto | bytes, *xs: np.ndarray, optimize: bool = True
            ) -> list[np.ndarray]:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    opts = ort.SessionOptions()
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return list(sess.run(None, dict(zip(names, xs, strict=True))))


def edgenn_run(model: onnx.ModelProto | bytes, *xs: np.ndarray) -> list[np.ndarray]:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return compile_ref(load_onnx(data, "test.onnx")).run(*xs)


def rel_err(ours: np.ndarray, ref: np.ndarray) -> float:
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-30))


# -- (a) the nine real topologies shipped with the onnx package -------------------------------
@pytest.mark.parametrize("name", LIGHT)
def test_light_model_matches_onnxruntime(name: str) -> None:
    model = onnx.load(LIGHT_DIR / f"{name}.onnx")
    g = model.graph
    inits = {i.name for i in g.initializer}
    inp = next(vi for vi in g.input if vi.name not in inits)
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    x = np.random.default_rng(0).random(shape, np.float32)
    # every weight is 0.02, so the softmax output is (nearly) uniform: compare its input too
    softmax_in = [n.input[0] for n in g.node if n.op_type == "Softmax"]
    for name_ in softmax_in:
        g.output.append(helper.make_tensor_value_info(name_, TensorProto.FLOAT, None))
    ours = edgenn_run(model, x)
    ref = ort_run(model, x)
    errs = [rel_err(o, r) for o, r in zip(ours, ref, strict=True)]
    print(f"{name}: max relative error per output {errs}")
    if name == "light_squeezenet":
        # its logits are ~1e10 and equal up to float rounding: the softmax of them is noise
        errs = errs[1:]
    assert max(errs) < 1e-4


@pytest.mark.parametrize("name", [n for n in LIGHT if n != "light_squeezenet"])
def test_light_model_matches_shipped_reference_output(name: str) -> None:
    """The onnx package ships each light model's output for the input arange(n) / n."""
    model = onnx.load(LIGHT_DIR / f"{name}.onnx")
    inits = {i.name for i in model.graph.initializer}
    inp = next(vi for vi in model.graph.input if vi.name not in inits)
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype(np.float32)
    proto = TensorProto()
    proto.ParseFromString((LIGHT_DIR / f"{name}_output_0.pb").read_bytes())
    assert rel_err(edgenn_run(model, x)[0], numpy_helper.to_array(proto)) < 1e-4


def test_light_models_are_the_expected_nine() -> None:
    assert len(LIGHT) == 9


# -- (b) ImageNet-size topologies with random weights ----------------------------------------
@pytest.mark.parametrize("builder", [zoo.resnet18, zoo.mobilenet_v2])
@pytest.mark.parametrize("size", [64, 224])
def test_zoo_model_matches_onnxruntime(builder: object, size: int) -> None:
    model = builder(seed=0, size=size)  # type: ignore[operator]
    x = np.random.default_rng(1).standard_normal((1, 3, size, size)).astype(np.float32)
    graph = load_onnx(model.SerializeToString(), "zoo.onnx")
    ops = {n.op for n in graph.nodes}
    assert "BatchNorm" not in ops and "Relu" not in ops and "Relu6" not in ops  # folded, fused
    assert "Transpose" not in ops
    err = rel_err(compile_ref(graph).run(x)[0], ort_run(model, x)[0])
    print(f"{model.graph.name} {size}x{size}: max relative error {err:.2e}")
    assert err < 1e-4


def test_batch_of_two_runs_through_the_same_graph() -> None:
    model = zoo.mobilenet_v2(seed=3, size=32, classes=10)
    x = np.random.default_rng(2).standard_normal((2, 3, 32, 32)).astype(np.float32)
    ours = edgenn_run(model, x)[0]
    ref = np.concatenate([ort_run(model, x[i : i + 1])[0] for i in range(2)])
    assert rel_err(ours, ref) < 1e-4


# -- (c) one model per operator ----------------------------------------------------------------
R = np.random.default_rng(42)


def w(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


X4 = {"x": (1, 4, 7, 6)}
X4E = {"x": (1, 4, 8, 8)}
CASES: dict[str, tuple] = {
    # name: (op, inputs, consts, attrs, opset)
    "conv": ("Conv", X4, {"W": w(5, 4, 3, 3), "B": w(5)}, {"pads": [1, 1, 1, 1]}, 13),
    "conv_stride2_nobias": ("Conv", X4, {"W": w(3, 4, 3, 3)}, {"strides": [2, 2]}, 13),
    "conv_asym_pads": ("Conv", X4, {"W": w(3, 4, 2, 3)}, {"pads": [0, 1, 1, 2]}, 13),
    "conv_group2": ("Conv", X4, {"W": w(6, 2, 3, 3), "B": w(6)}, {"group": 2}, 13),
    "conv_depthwise": ("Conv", X4, {"W": w(4, 1, 3, 3), "B": w(4)},
                       {"group": 4, "pads": [1, 1, 1, 1]}, 13),
    "conv_depthwise_mult2": ("Conv", X4, {"W": w(8, 1, 3, 3)}, {"group": 4}, 13),
    "conv_dilated": ("Conv", X4E, {"W": w(2, 4, 3, 3)}, {"dilations": [2, 2]}, 13),
    "conv_same_upper": ("Conv", X4E, {"W": w(2, 4, 3, 3)},
                        {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, 13),
    "conv_same_lower": ("Conv", X4E, {"W": w(2, 4, 4, 4)},
                        {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, 13),
    "conv_valid": ("Conv", X4, {"W": w(2, 4, 3, 3)}, {"auto_pad": "VALID"}, 13),
    "gemm": ("Gemm", {"x": (1, 6)}, {"B": w(5, 6), "C": w(5)}, {"transB": 1}, 13),
    "gemm_alpha_beta": ("Gemm", {"x": (1, 6)}, {"B": w(6, 5), "C": w(1, 5)},
                        {"alpha": 0.5, "beta": 2.0}, 13),
    "gemm_transA": ("Gemm", {"x": (6, 1)}, {"B": w(6, 5)}, {"transA": 1}, 13),
    "gemm_computed_B": ("Gemm", {"x": (2, 6), "b": (6, 3)}, {"C": w(3)}, {}, 13),
    "matmul_const": ("MatMul", {"x": (1, 6)}, {"B": w(6, 4)}, {}, 13),
    "matmul_computed": ("MatMul", {"x": (1, 3, 6), "y": (1, 6, 2)}, {}, {}, 13),
    "add_channel_bias": ("Add", X4, {"b": w(4, 1, 1)}, {}, 13),
    "add_last_axis": ("Add", X4, {"b": w(6)}, {}, 13),
    "add_scalar": ("Add", X4, {"b": np.float32(0.5)}, {}, 13),
    "add_two": ("Add", {"x": (1, 4, 7, 6), "y": (1, 4, 7, 6)}, {}, {}, 13),
    "add_rank2": ("Add", {"x": (2, 5)}, {"b": w(5)}, {}, 13),
    "mul_channel": ("Mul", X4, {"b": w(1, 4, 1, 1)}, {}, 13),
    "mul_const_first": ("Mul", X4, {"b": w(7, 1)}, {}, 13, ["b", "x"]),
    "sub_const": ("Sub", X4, {"b": w(4, 1, 1)}, {}, 13),
    "sub_from_const": ("Sub", X4, {"b": w(4, 1, 1)}, {}, 13, ["b", "x"]),
    "sub_two": ("Sub", {"x": (1, 4, 7, 6), "y": (1, 4, 7, 6)}, {}, {}, 13),
    "div_const": ("Div", X4, {"b": w(4, 1, 1) + 3.0}, {}, 13),
    "sum3": ("Sum", {"x": (1, 4, 7, 6), "y": (1, 4, 7, 6), "z": (1, 4, 7, 6)}, {}, {}, 13),
    "relu": ("Relu", X4, {}, {}, 13),
    "sigmoid": ("Sigmoid", X4, {}, {}, 13),
    "tanh": ("Tanh", X4, {}, {}, 13),
    "clip_relu6": ("Clip", X4, {"lo": np.float32(0), "hi": np.float32(6)}, {}, 13),
    "clip_general": ("Clip", X4, {"lo": np.float32(-0.5), "hi": np.float32(0.7)}, {}, 13),
    "clip_min_only": ("Clip", X4, {"lo": np.float32(0)}, {}, 13),
    "clip_opset6": ("Clip", X4, {}, {"min": 0.0, "max": 6.0}, 6),
    "maxpool": ("MaxPool", X4, {}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                    "pads": [1, 1, 1, 1]}, 13),
    "maxpool_ceil": ("MaxPool", X4, {}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                         "ceil_mode": 1}, 13),
    "maxpool_same": ("MaxPool", X4, {}, {"kernel_shape": [2, 2], "strides": [2, 2],
                                         "auto_pad": "SAME_UPPER"}, 13),
    "avgpool_exclude_pad": ("AveragePool", X4, {}, {"kernel_shape": [3, 3],
                                                    "pads": [1, 1, 1, 1]}, 13),
    "avgpool_include_pad": ("AveragePool", X4, {}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                                    "pads": [1, 1, 1, 1],
                                                    "count_include_pad": 1}, 13),
    "global_avgpool": ("GlobalAveragePool", X4, {}, {}, 13),
    "global_maxpool": ("GlobalMaxPool", X4, {}, {}, 13),
    "reduce_mean_hw": ("ReduceMean", X4, {}, {"axes": [2, 3], "keepdims": 1}, 13),
    "reduce_mean_c": ("ReduceMean", X4, {}, {"axes": [1], "keepdims": 0}, 13),
    "reduce_mean_h": ("ReduceMean", X4, {}, {"axes": [2], "keepdims": 0}, 13),
    "reduce_mean_opset18": ("ReduceMean", X4, {"axes": np.array([-1], np.int64)},
                            {"keepdims": 1}, 18),
    "reshape": ("Reshape", X4, {"s": np.array([1, -1], np.int64)}, {}, 13),
    "reshape_zero": ("Reshape", X4, {"s": np.array([0, 2, -1, 4], np.int64)}, {}, 13),
    "flatten": ("Flatten", X4, {}, {"axis": 1}, 13),
    "flatten_axis2": ("Flatten", X4, {}, {"axis": 2}, 13),
    "squeeze": ("Squeeze", {"x": (1, 4, 1, 6)}, {"a": np.array([2], np.int64)}, {}, 13),
    "unsqueeze": ("Unsqueeze", {"x": (1, 6)}, {"a": np.array([1, 3], np.int64)}, {}, 13),
    "unsqueeze_opset11": ("Unsqueeze", {"x": (1, 6)}, {}, {"axes": [2]}, 11),
    "transpose": ("Transpose", X4, {}, {"perm": [0, 2, 3, 1]}, 13),
    "transpose_default": ("Transpose", {"x": (2, 3, 5)}, {}, {}, 13),
    "concat_channels": ("Concat", {"x": (1, 4, 7, 6), "y": (1, 2, 7, 6)}, {}, {"axis": 1}, 13),
    "concat_width": ("Concat", {"x": (1, 4, 7, 6), "y": (1, 4, 7, 3)}, {}, {"axis": -1}, 13),
    "concat_const": ("Concat", {"x": (2, 3)}, {"c": w(2, 2)}, {"axis": 1}, 13),
    "pad": ("Pad", X4, {"p": np.array([0, 0, 1, 2, 0, 1, 3, 0], np.int64),
                        "v": np.float32(0.25)}, {}, 13),
    "softmax_last": ("Softmax", X4, {}, {"axis": -1}, 13),
    "softmax_channels": ("Softmax", X4, {}, {"axis": 1}, 13),
    "softmax_rank2": ("Softmax", {"x": (3, 10)}, {}, {}, 13),
    "softmax_opset11_coerced": ("Softmax", X4, {}, {"axis": 1}, 11),
    "batchnorm": ("BatchNormalization", X4, {"s": w(4), "b": w(4), "m": w(4),
                                             "v": np.abs(w(4)) + 0.5}, {"epsilon": 1e-3}, 13),
    "batchnorm_rank2": ("BatchNormalization", {"x": (3, 4)}, {"s": w(4), "b": w(4), "m": w(4),
                                                              "v": np.abs(w(4)) + 0.5}, {}, 13),
    "lrn": ("LRN", {"x": (1, 8, 5, 5)}, {}, {"size": 5, "alpha": 0.01, "beta": 0.75,
                                              "bias": 1.5}, 13),
    "identity": ("Identity", X4, {}, {}, 13),
    "dropout": ("Dropout", X4, {}, {}, 13),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_operator_matches_onnxruntime(case: str) -> None:
    op, inputs, consts, attrs, opset, *order = CASES[case]
    model = zoo.single_op(op, inputs, consts, opset=opset,
                          input_order=order[0] if order else None, **attrs)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(s).astype(np.float32) for s in inputs.values()]
    ours, ref = edgenn_run(model, *xs)[0], ort_run(model, *xs)[0]
    assert rel_err(ours, ref) < 1e-4


def _bytes(builder: zoo.OnnxBuilder, out: str, shape: tuple[int, ...] = (1, 8, 6, 6)) -> bytes:
    return builder.model("t", {"input": shape}, [out]).SerializeToString()


def test_channel_shuffle_reshape_transpose_is_exact() -> None:
    """ShuffleNet's shuffle: Reshape to 5-D, swap the group axes, Reshape back, then Conv."""
    b = zoo.OnnxBuilder(seed=5)
    x = b.conv("input", 8, 8, 1, bias=True)
    r = b.node("Reshape", [x, b.const(np.array([1, 2, 4, 6, 6], np.int64))])
    t = b.node("Transpose", [r], perm=[0, 2, 1, 3, 4])
    r2 = b.node("Reshape", [t, b.const(np.array([1, 8, 6, 6], np.int64))])
    out = b.conv(r2, 8, 4, 3, bias=True)
    data = _bytes(b, out)
    x_in = np.random.default_rng(0).standard_normal((1, 8, 6, 6)).astype(np.float32)
    assert rel_err(edgenn_run(data, x_in)[0], ort_run(data, x_in)[0]) < 1e-5


def test_flatten_of_nhwc_folds_into_fully_connected() -> None:
    b = zoo.OnnxBuilder(seed=6)
    x = b.relu(b.conv("input", 8, 5, 3, bias=True))
    f = b.node("Flatten", [x], axis=1)
    out = b.node("Gemm", [f, b.const(w(3, 5 * 6 * 6)), b.const(w(3))], transB=1)
    data = _bytes(b, out)
    graph = load_onnx(data, "t.onnx")
    assert [n.op for n in graph.nodes] == ["Conv2D", "Reshape", "FullyConnected"]
    x_in = np.random.default_rng(0).standard_normal((1, 8, 6, 6)).astype(np.float32)
    assert rel_err(compile_ref(graph).run(x_in)[0], ort_run(data, x_in)[0]) < 1e-5


def test_constant_and_shape_arithmetic_are_folded() -> None:
    """torch-style flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    b = zoo.OnnxBuilder(seed=8)
    x = b.conv("input", 8, 4, 3, bias=True)
    shp = b.node("Shape", [x])
    n = b.node("Gather", [shp, b.const(np.array(0, np.int64))], axis=0)
    n1 = b.node("Unsqueeze", [n, b.const(np.array([0], np.int64))])
    minus1 = b.node("Constant", [], value=numpy_helper.from_array(np.array([-1], np.int64)))
    spec = b.node("Concat", [n1, minus1], axis=0)
    out = b.node("Reshape", [x, spec])
    data = _bytes(b, out)
    graph = load_onnx(data, "t.onnx")
    assert graph.output_tensors()[0].shape == (1, 4 * 6 * 6)
    x_in = np.random.default_rng(0).standard_normal((1, 8, 6, 6)).astype(np.float32)
    assert rel_err(compile_ref(graph).run(x_in)[0], ort_run(data, x_in)[0]) < 1e-5


def test_nchw_boundary_layout_is_recorded() -> None:
    graph = load_onnx(zoo.single_op("Relu", X4).SerializeToString(), "t.onnx")
    assert graph.tensor("x").shape == (1, 7, 6, 4)
    assert graph.external_perm["x"] == (0, 3, 1, 2)
    assert graph.external_shape("y0") == (1, 4, 7, 6)


# -- (d) errors ----------------------------------------------------------------------------------
def test_unsupported_operator_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "erf.onnx"
    path.write_bytes(zoo.single_op("Erf", X4).SerializeToString())
    with pytest.raises(UnsupportedOperatorError) as info:
        load(path)
    assert str(info.value) == f"{path}: node 'erf': unsupported operator 'Erf' on float32"


def test_not_onnx_names_the_file() -> None:
    with pytest.raises(ModelFormatError, match=r"^junk\.onnx: "):
        load_onnx(b"\x00\xffthis is not a model", "junk.onnx")


SMALL = zoo.small_cnn(seed=1, size=8).SerializeToString()


@given(st.integers(min_value=0, max_value=len(SMALL) - 1))
def test_truncated_model_raises_edgenn_error(cut: int) -> None:
    with pytest.raises(EdgennError) as info:
        load_onnx(SMALL[:cut], "cut.onnx")
    assert "\n" not in str(info.value) and str(info.value).startswith("cut.onnx")


@given(st.lists(st.tuples(st.integers(0, len(SMALL) - 1), st.integers(0, 255)),
                min_size=1, max_size=8))
def test_corrupted_model_loads_or_raises_edgenn_error(edits: list[tuple[int, int]]) -> None:
    data = bytearray(SMALL)
    for pos, val in edits:
        data[pos] = val
    try:
        load_onnx(bytes(data), "bad.onnx")
    except EdgennError as err:
        assert "\n" not in str(err)


# -- (e) QDQ int8 models from onnxruntime.quantization ------------------------------------------
def _quantize(tmp_path: Path, model: onnx.ModelProto, cal: np.ndarray, **options: object
              ) -> bytes:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"input": x[None]} for x in cal])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    fp, qp = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(model, fp)
    quantize_static(str(fp), str(qp), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, **options)
    return qp.read_bytes()


QDQ_VARIANTS = {
    "per_channel": (True, False),
    "per_tensor": (False, False),
    # symmetric activations: onnxruntime keeps the Relu nodes (DQ -> Conv -> Relu -> Q)
    "symmetric_relu": (True, True),
}


@pytest.mark.parametrize("variant", sorted(QDQ_VARIANTS))
def test_qdq_model_imports_as_int8_and_matches_onnxruntime(tmp_path: Path,
                                                           variant: str) -> None:
    per_channel, symmetric = QDQ_VARIANTS[variant]
    rng = np.random.default_rng(0)
    cal = rng.standard_normal((16, 3, 32, 32)).astype(np.float32)
    data = _quantize(tmp_path, zoo.small_cnn(seed=0), cal, per_channel=per_channel,
                     extra_options={"ActivationSymmetric": symmetric})
    graph = load_onnx(data, "qdq.onnx")
    ops = [n.op for n in graph.nodes]
    assert ops[0] == "Quantize" and ops[-1] == "Dequantize"
    assert "Relu" not in ops
    if symmetric:  # the Relus between Conv and Q became fused activations
        assert [n.attr("activation") for n in graph.nodes if n.op == "Conv2D"] == \
            [Activation.RELU] * 3
    for node in graph.nodes[1:-1]:
        out = graph.tensor(node.outputs[0])
        assert out.dtype == DType.INT8 and out.quant is not None, node
    conv_w = graph.tensor(graph.nodes[1].inputs[1])
    assert conv_w.dtype == DType.INT8 and conv_w.quant is not None
    assert conv_w.quant.per_channel == per_channel
    assert graph.tensor(graph.nodes[1].inputs[2]).dtype == DType.INT32

    x = rng.standard_normal((20, 3, 32, 32)).astype(np.float32)
    ours = compile_ref(graph).run(x)[0]
    lsb = graph.tensor(graph.nodes[-1].inputs[0]).quant.s  # type: ignore[union-attr]
    # the QDQ semantics executed literally (DQ -> float op -> Q), and onnxruntime's fused
    # int8 kernels (which round differently and can saturate 16-bit sums on AVX2)
    for optimize in (False, True):
        ref = np.concatenate([ort_run(data, x[i : i + 1], optimize=optimize)[0]
                              for i in range(len(x))])
        diff = np.rint(np.abs(ours - ref) / lsb)
        print(f"QDQ {variant} ORT optimize={optimize}: "
              f"max {diff.max():.0f} LSB, exact {np.mean(diff == 0):.1%}, "
              f"within 1 LSB {np.mean(diff <= 1):.1%}")
        if not optimize:
            assert diff.max() <= 2 and np.mean(diff <= 1) >= 0.99
