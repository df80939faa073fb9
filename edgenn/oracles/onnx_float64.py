"""A float64 evaluation of an ONNX graph: the arbiter when edgenn and onnxruntime disagree on
a float output by more than float32 noise.

onnxruntime is an independent oracle, not an exact one: its CPU kernels use approximations
(MLAS's Sigmoid and Tanh are rational fits with absolute errors near 1e-7, which is a large
relative error on a small output). The same graph with every float32 constant, declared type
and Cast widened to float64, run by ``onnx.reference`` (the ONNX specification's Python
evaluator), says which of the two is closer to the mathematics both implement.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, TensorProto, numpy_helper

from edgenn.frontends.onnx.control import subgraphs


def float64_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same graph in float64: constants, declared types and Casts to float."""
    out = onnx.ModelProto()
    out.CopyFrom(model)

    def widen(t: TensorProto) -> None:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64),
                                               t.name))

    def walk(g: GraphProto) -> None:
        for t in g.initializer:
            widen(t)
        for vi in [*g.input, *g.output, *g.value_info]:
            if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
                vi.type.tensor_type.elem_type = TensorProto.DOUBLE
        for node in g.node:
            for a in node.attribute:
                if a.type == AttributeProto.TENSOR:
                    widen(a.t)
                if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.DOUBLE
            for sub in subgraphs(node):
                walk(sub)

    walk(out.graph)
    return out


class Float64Evaluator:
    """``run(feed)`` -> the graph's outputs evaluated in float64 (float inputs widened)."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from onnx.reference import ReferenceEvaluator

        self._eval = ReferenceEvaluator(float64_copy(model))

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        wide = {k: (v.astype(np.float64) if v.dtype == np.float32 else v)
                for k, v in feed.items()}
        outputs: Any = self._eval.run(None, wide)
        return [np.asarray(y) for y in outputs]
