"""Small helpers for hand-made ONNX graphs in tests: a model from nodes, onnxruntime's
outputs for it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes: Sequence[Any], inputs: Sequence[tuple[str, int, Sequence[Any] | None]],
               outputs: Sequence[str | tuple[str, int]],
               inits: dict[str, np.ndarray] | None = None, opset: int = 17) -> bytes:
    """An ONNX model; inputs are (name, TensorProto element type, shape with None or str
    for dynamic dimensions); outputs are names (float32) or (name, element type), their
    shapes left to shape inference."""
    outs = [(o, TensorProto.FLOAT) if isinstance(o, str) else o for o in outputs]
    graph = helper.make_graph(
        list(nodes), "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, t, None) for o, t in outs],
        initializer=[numpy_helper.from_array(np.asarray(a), n)
                     for n, a in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def ort_run(data: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    return [np.asarray(y) for y in sess.run(None, feeds)]
