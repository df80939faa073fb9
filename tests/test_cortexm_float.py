"""Float32 models on the Cortex-M targets against TFLite Micro.

Outputs must agree within ``rtol = 1e-5`` plus ``atol = 1e-6``: the models end in softmax
probabilities, where values near zero differ from TFLite Micro by rounding steps of ~1e-10
that no relative bound can cover (the operator cases of ``tests/conformance`` use 1e-5
relative plus 1e-5 absolute). The int8 model with float32 input and output
(``float_cnn_mixed``) must be bit-exact.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.cc.driver import first_error  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.oracles.tflm import tflm_run  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
MODELS = {
    "float_cnn": FIXTURES / "float" / "float_cnn.tflite",
    "float_cnn_mixed": FIXTURES / "float" / "float_cnn_mixed.tflite",
    "ops_float": FIXTURES / "tflite" / "ops_float.tflite",
    "conv2_float": FIXTURES / "tflite" / "conv2_float.tflite",
    "lstm_mnist_float": FIXTURES / "operators" / "lstm_mnist_float.tflite",
}


def _inputs(graph, n: int) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """``n`` MNIST test digits in [0, 1] where the input is a 28x28 image, else noise."""
    from edgenn.data.mnist import mnist_split

    digits, _ = mnist_split("test")
    xs = []
    for k, name in enumerate(graph.inputs):
        shape = graph.tensor(name).shape[1:]
        if int(np.prod(shape)) == 28 * 28:
            xs.append((digits[:n] / 255.0).astype(np.float32).reshape(n, *shape))
        else:
            xs.append(np.random.default_rng(k).uniform(0, 1, (n, *shape)).astype(np.float32))
    return xs


@needs_arm
@pytest.mark.parametrize("model,target", [
    ("float_cnn", "cortex-m4"), ("float_cnn", "cortex-m7"), ("float_cnn", "cortex-m0plus"),
    ("float_cnn_mixed", "cortex-m4"), ("ops_float", "cortex-m4"), ("conv2_float", "cortex-m4"),
    ("lstm_mnist_float", "cortex-m4"),
])
def test_float_model_matches_tflm(model: str, target: str) -> None:
    data = MODELS[model].read_bytes()
    graph = load_tflite(data, model)
    xs = _inputs(graph, 4)
    want = tflm_run(data, *xs)
    got = compile_model(graph, target).run(*xs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape
        if model.endswith("_mixed"):
            assert np.array_equal(g, w)
        else:
            bad = ~np.isclose(g, w, rtol=1e-5, atol=1e-6)
            assert not bad.any(), f"{int(bad.sum())} of {bad.size} outputs differ"


@needs_arm
def test_float_kernels_are_chosen() -> None:
    """Every layer of the float CNN runs a float32 kernel (none falls back or fails)."""
    from edgenn.backends.cortexm.selection import select_kernel
    from edgenn.backends.cortexm.targets import CORES

    graph = load_tflite(MODELS["float_cnn"].read_bytes(), "float_cnn")
    names = {select_kernel(n, graph, CORES["cortex-m4"]).name for n in graph.nodes}
    assert {"edgenn_conv_f32", "edgenn_dwconv_f32", "edgenn_maxpool_f32",
            "edgenn_avgpool_f32", "edgenn_fc_f32", "edgenn_softmax_f32"} <= names


def test_flash_overflow_is_one_line() -> None:
    stderr = ("/usr/bin/arm-none-eabi-ld: model.elf section `.rodata' will not fit in region "
              "`FLASH'\n/usr/bin/arm-none-eabi-ld: region `FLASH' overflowed by 270632 bytes\n"
              "collect2: error: ld returned 1 exit status\n")
    assert first_error(stderr, Path(".")) == "the image overflows FLASH by 270,632 bytes"


@needs_arm
def test_onnx_only_float_ops_match_onnxruntime() -> None:
    """Clip with one bound and HardSigmoid (ONNX operators TFLite Micro has no kernel for),
    on cortex-m4 against onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from edgenn.frontends.onnx import load_onnx

    nodes = [helper.make_node("Clip", ["x", "lo", ""], ["y0"]),
             helper.make_node("Clip", ["x", "", "hi"], ["y1"]),
             helper.make_node("HardSigmoid", ["x"], ["y2"], alpha=0.3, beta=0.4)]
    inits = [helper.make_tensor("lo", TensorProto.FLOAT, [], [-1.5]),
             helper.make_tensor("hi", TensorProto.FLOAT, [], [0.25])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 37])],
        [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [1, 37]) for k in range(3)],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    data = model.SerializeToString()
    x = np.random.default_rng(3).uniform(-5, 5, (4, 1, 37)).astype(np.float32)
    x[0, 0, :3] = [np.inf, -np.inf, 0.0]  # an absent bound is +-FLT_MAX in onnxruntime
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = [np.stack(w) for w in zip(*(sess.run(None, {"x": row}) for row in x), strict=True)]
    got = compile_model(load_onnx(data, "clips"), "cortex-m4").run(x.reshape(4, 37))
    for g, w in zip(got, want, strict=True):
        assert np.allclose(g.reshape(w.shape), w, rtol=1e-6, atol=1e-7)
