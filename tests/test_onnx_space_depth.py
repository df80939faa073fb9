"""ONNX SpaceToDepth / DepthToSpace in both channel orders (DCR, and CRD: DepthToSpace since
opset 11, SpaceToDepth since opset 28) on ref and on cortex-m4, against onnxruntime."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgenn.api import compile_model
from edgenn.frontends.onnx import load_onnx

ort = pytest.importorskip("onnxruntime")


def _model(op: str, mode: str, shape: tuple[int, ...], out: tuple[int, ...]) -> bytes:
    node = helper.make_node(op, ["x"], ["y"], blocksize=2, mode=mode)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, list(shape))], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, list(out))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    model.ir_version = 11
    return model.SerializeToString()


CASES = [("SpaceToDepth", (1, 3, 4, 6), (1, 12, 2, 3)),
         ("DepthToSpace", (1, 12, 2, 3), (1, 3, 4, 6))]
TARGETS = ["ref"] + (["cortex-m4"] if shutil.which("arm-none-eabi-gcc") else [])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("op, shape, out", CASES)
def test_block_moves_match_onnxruntime(op: str, shape: tuple[int, ...],
                                       out: tuple[int, ...], mode: str, target: str) -> None:
    data = _model(op, mode, shape, out)
    x = np.random.default_rng(0).standard_normal((1, *shape[1:])).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = compile_model(load_onnx(data, f"{op}.onnx"), target).run(x)[0]
    assert np.array_equal(got, want)
