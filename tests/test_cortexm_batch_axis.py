"""A graph declared with a batch above 1: the Cortex-M image kernels run one image, so such a
layer is refused in one line (never a silently wrong result); layers that loop over their
first axis run it and match the reference runtime."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.api import compile_model, load_model
from edgenn.errors import UnsupportedOperatorError

RNG = np.random.default_rng(0)
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="arm-none-eabi-gcc not installed")


def _model(tmp_path: Path, nodes: list, x: list[int], y: list[int], inits: list) -> Path:
    graph = helper.make_graph(
        nodes, "batch2", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], inits)
    path = tmp_path / "batch2.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@needs_arm
@pytest.mark.parametrize("node", [
    helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
    helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1]),
])
def test_image_layer_with_batch_2_is_refused(tmp_path: Path, node: onnx.NodeProto) -> None:
    w = numpy_helper.from_array(RNG.standard_normal((3, 3, 3, 3)).astype(np.float32), "w")
    graph = load_model(_model(tmp_path, [node], [2, 3, 8, 8], [2, 3, 8, 8], [w]))
    with pytest.raises(UnsupportedOperatorError, match=r"batch 1.*declared \[2, 8, 8, 3\]"):
        compile_model(graph, "cortex-m4")


@needs_arm
def test_dense_layer_with_batch_2_matches_ref(tmp_path: Path) -> None:
    w = numpy_helper.from_array(RNG.standard_normal((5, 6)).astype(np.float32), "w")
    node = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)
    graph = load_model(_model(tmp_path, [node], [2, 6], [2, 5], [w]))
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    want = compile_model(graph, "ref").run(x)[0]
    got = compile_model(graph, "cortex-m4").run(x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
