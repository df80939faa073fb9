"""+-inf and NaN float constants are data, not a corrupt file (issue 22, item 3).

A converter writes ``MINIMUM(x, +inf)`` for a clip without an upper bound (openWakeWord's
melspectrogram model); TFLite Micro and onnxruntime run such files. Import accepts them, the
float kernels compute what the model's runtime computes (``tests/conformance/cases/
nonfinite.py`` has the TFLite Micro cases on ref, host and cortex-m4), the C literals are
IEEE's infinities and NaN, and only the places where edgenn's own arithmetic needs finite
numbers refuse them in one line: quantizing such a constant, a quantization scale.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.api import compile_model
from edgenn.backends.c_literals import c_initializer
from edgenn.errors import EdgennError, GraphValidationError
from edgenn.frontends.onnx import load_onnx
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import Tensor
from edgenn.quantize import quantize
from tests.conformance.cases.nonfinite import CASES
from tests.conformance.spec import model_bytes

ZOO = Path(__file__).resolve().parents[1] / "zoo"
INF, NAN = np.inf, np.nan
F32_MAX = float(np.finfo(np.float32).max)


def _case(case_id: str) -> bytes:
    return model_bytes([next(c for c in CASES if c.id == case_id)])


# -- import ------------------------------------------------------------------------------------
def test_tflite_inf_constant_imports_as_data() -> None:
    graph = load_tflite(_case("MINIMUM:float32_const_inf_nan_row"), "minimum")
    data = next(t.data for t in graph.tensors.values() if t.data is not None)
    assert np.isposinf(data[..., 0]).all() and np.isneginf(data[..., 1]).all()
    assert np.isnan(data[..., 2]).all()


def test_a_bad_scale_is_still_one_error() -> None:
    """Non-finite data passes; a non-finite or zero quantization scale does not."""
    from edgenn.ir import DType, QuantParams
    from edgenn.ir.checks import check_constants

    check_constants({"c": Tensor.const("c", np.array([INF, NAN], np.float32))})
    bad = Tensor("q", (1, 4), DType.INT8, QuantParams.per_tensor(float("inf"), 0))
    with pytest.raises(GraphValidationError, match="'q' has the quantization scale inf"):
        check_constants({"q": bad})


def test_melspectrogram_imports() -> None:
    """The real model that was refused: its MINIMUM against +inf now imports."""
    path = ZOO / "packages" / "pyopen_wakeword" / "melspectrogram.tflite"
    if not path.exists():
        pytest.skip("the zoo is not in this checkout")
    graph = load_tflite(path.read_bytes(), path.name)
    consts = [t.data for t in graph.tensors.values() if t.data is not None]
    assert any(np.isposinf(c).any() for c in consts if c.dtype.kind == "f")


# -- the fused-activation clamp follows the model's format --------------------------------------
def _onnx_model() -> bytes:
    """x[1, 4] + c, Min(x, c), Max(x, c) with c = [inf, -inf, nan, 0.5]."""
    c = numpy_helper.from_array(np.array([INF, -INF, NAN, 0.5], np.float32), "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["y0"], name="add"),
             helper.make_node("Min", ["x", "c"], ["y1"], name="min"),
             helper.make_node("Max", ["x", "c"], ["y2"], name="max")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [1, 4]) for k in range(3)],
        initializer=[c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _x() -> np.ndarray:
    return np.random.default_rng(4).uniform(-3, 3, (5, 4)).astype(np.float32)


def test_onnx_add_with_inf_gives_inf_as_onnxruntime() -> None:
    """onnxruntime's Add does not clamp (x + inf is inf); TFLite Micro's does (FLT_MAX,
    ``cases/nonfinite.py``). Min / Max against NaN are not compared: onnxruntime's Eigen
    min / max pick differently from TFLite's ``a < b ? a : b``."""
    ort = pytest.importorskip("onnxruntime")
    data = _onnx_model()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = [np.concatenate(w) for w in zip(*(sess.run(None, {"x": r[None]}) for r in _x()),
                                           strict=True)]
    got = compile_model(load_onnx(data, "inf_consts"), "ref").run(_x())
    assert np.isposinf(want[0][:, 0]).all() and np.isneginf(want[0][:, 1]).all()
    np.testing.assert_array_equal(got[0], want[0])
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_array_equal(g[:, [0, 1, 3]], w[:, [0, 1, 3]])


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_onnx_inf_constants_on_cortex_m4_as_ref() -> None:
    """The Cortex-M kernels clamp to the reference layer's bounds: +-inf for an ONNX model
    (x + inf is inf), so the target and the reference agree on every value, NaN included."""
    graph = load_onnx(_onnx_model(), "inf_consts")
    want = compile_model(graph, "ref").run(_x())
    got = compile_model(graph, "cortex-m4").run(_x())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# -- C literals --------------------------------------------------------------------------------
def test_c_float_literals_are_ieee_infinities_and_nan(tmp_path: Path) -> None:
    """``c_float`` writes +-inf and NaN as constant expressions C99 accepts in a static
    initializer (gcc -std=c99 -pedantic -Werror) that hold exactly those float32 bits."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    values = [INF, -INF, NAN, -0.0, F32_MAX, -F32_MAX, 1e-45]
    src = tmp_path / "lit.c"
    src.write_text("#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n"
                   f"static const float v[{len(values)}] = {c_initializer(values, 'float')};\n"
                   "int main(void) { for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)"
                   " { uint32_t b; memcpy(&b, &v[i], 4); printf(\"%08x\\n\", (unsigned)b); }"
                   " return 0; }\n")
    exe = tmp_path / "lit"
    subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2",
                    str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    bits = [int(b, 16) for b in out]
    want = np.array(values, np.float32).view(np.uint32)
    assert bits[:2] == [0x7F800000, 0xFF800000]
    assert (bits[2] & 0x7F800000) == 0x7F800000 and bits[2] & 0x7FFFFF  # a NaN
    assert bits[3:] == [int(w) for w in want[3:]]


# -- where finite numbers are needed -----------------------------------------------------------
def test_quantizing_a_non_finite_constant_is_one_error() -> None:
    graph = load_tflite(_case("ADD:float32_const_plus_inf"), "add_inf")
    x = np.random.default_rng(0).standard_normal((8, 2, 3, 4)).astype(np.float32)
    with pytest.raises(EdgennError, match=r"constant '.*' holds 1 non-finite value\(s\) \(inf\)"):
        quantize(graph, x)


def test_batchnorm_with_infinite_gamma_runs_as_onnxruntime() -> None:
    """Folding gamma = inf into the weights would change which outputs are NaN (0 * inf in
    every weight product): the BatchNorm stays a node, computed as onnxruntime computes it
    (new scale, new bias; ``b - mean * inf`` is NaN) and without a numpy warning."""
    ort = pytest.importorskip("onnxruntime")
    from tests.test_fuzz import _conv_bn

    model = _conv_bn()
    gamma = np.array([1.0, INF, 2.0, -INF], np.float32)
    next(t for t in model.graph.initializer if t.name == "g").CopyFrom(
        numpy_helper.from_array(gamma, "g"))
    data = model.SerializeToString()
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    graph = load_onnx(data, "bn_inf")
    assert [n.op for n in graph.nodes] == ["Conv2D", "BatchNorm"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = compile_model(graph, "ref").run(x)[0]
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, equal_nan=True)
