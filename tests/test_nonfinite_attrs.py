"""NaN / infinite float attributes are one error naming the node and the attribute (issue 16).

Hostile ONNX and TFLite files carry a NaN or an infinity in a float attribute (a LeakyRelu
alpha, a normalization epsilon, a softmax beta, ...); each import ends in one line naming the
node and the attribute, and ``edgenn inspect`` exits non-zero with that line. The same check
runs on graphs built through the API (``edgenn.ir.shapes.infer``). An infinite Clip bound
means "no bound" and still imports.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import onnx
import pytest
import tflite
from onnx import TensorProto, helper, numpy_helper
from tflite_build import Op, T, build, lrn_options, softmax_options

from edgenn.errors import EdgennError, GraphValidationError
from edgenn.frontends import load
from edgenn.ir import DType, Node, Tensor
from edgenn.ir.shapes import infer
from tests.cli_errors import error_line

NAN, INF = math.nan, math.inf


# -- ONNX ------------------------------------------------------------------------------------
def _onnx(op: str, attrs: dict[str, Any], inits: dict[str, np.ndarray] | None = None,
          shape: tuple[int, ...] = (1, 3, 4, 4), opset: int = 17) -> onnx.ModelProto:
    inits = inits or {}
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(op, ["x", *inits], ["y"], name="hostile", **attrs)
    graph = helper.make_graph([node], "g", [x], [y],
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


_C = np.ones(3, np.float32)
ONNX_CASES = [
    ("LeakyRelu", {"alpha": NAN}, None, (1, 3, 4, 4), 17, "alpha", "nan"),
    ("HardSigmoid", {"alpha": 0.2, "beta": INF}, None, (1, 3, 4, 4), 17, "beta", "inf"),
    ("BatchNormalization", {"epsilon": NAN}, {"s": _C, "b": _C, "m": _C, "v": _C},
     (1, 3, 4, 4), 17, "epsilon", "nan"),
    ("LRN", {"size": 3, "alpha": -INF}, None, (1, 3, 4, 4), 17, "alpha", "-inf"),
    # why Gemm: its alpha is folded into the weights before any IR node holds it
    ("Gemm", {"alpha": INF}, {"w": np.ones((3, 2), np.float32)}, (1, 3), 17, "alpha", "inf"),
    ("Clip", {"min": NAN, "max": 6.0}, None, (1, 3, 4, 4), 6, "min", "nan"),
]


@pytest.mark.parametrize(("op", "attrs", "inits", "shape", "opset", "key", "value"),
                         ONNX_CASES, ids=[c[0] for c in ONNX_CASES])
def test_onnx_nonfinite_attribute(tmp_path: Path, capsys: pytest.CaptureFixture[str], op: str,
                                  attrs: dict[str, Any], inits: dict[str, np.ndarray] | None,
                                  shape: tuple[int, ...], opset: int, key: str,
                                  value: str) -> None:
    path = tmp_path / "hostile.onnx"
    onnx.save(_onnx(op, attrs, inits, shape, opset), path)
    expected = f"{path}: node 'hostile': attribute {key} is {value}"
    with pytest.raises(EdgennError) as err:
        load(path)
    assert str(err.value) == expected
    assert error_line(capsys, ["inspect", str(path)]).endswith(expected)


def test_onnx_infinite_clip_bound_is_no_bound(tmp_path: Path) -> None:
    # why: -inf / inf are how a one-sided Clip says "no bound" (opset < 11 attributes)
    path = tmp_path / "relu.onnx"
    onnx.save(_onnx("Clip", {"min": 0.0, "max": INF}, opset=6), path)
    (node,) = load(path).nodes
    assert node.op in ("Relu", "Clip")  # a Clip [0, inf) may become a Relu


# -- TFLite ----------------------------------------------------------------------------------
def _leaky_relu_options(alpha: float) -> tuple[int, Any]:
    def make(b: flatbuffers.Builder) -> int:
        tflite.LeakyReluOptionsStart(b)
        tflite.LeakyReluOptionsAddAlpha(b, alpha)
        return int(tflite.LeakyReluOptionsEnd(b))

    return tflite.BuiltinOptions.LeakyReluOptions, make


OP = tflite.BuiltinOperator
TFLITE_CASES = [
    ("leaky_relu", OP.LEAKY_RELU, _leaky_relu_options(NAN), "alpha", "nan"),
    ("softmax", OP.SOFTMAX, softmax_options(INF), "beta", "inf"),
    ("lrn", OP.LOCAL_RESPONSE_NORMALIZATION, lrn_options(1, NAN, 1e-3, 0.75), "bias", "nan"),
]


@pytest.mark.parametrize(("name", "code", "options", "key", "value"), TFLITE_CASES,
                         ids=[c[0] for c in TFLITE_CASES])
def test_tflite_nonfinite_option(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                 code: int, options: tuple[int, Any], key: str,
                                 value: str) -> None:
    shape = (1, 2, 2, 4)
    path = tmp_path / "hostile.tflite"
    path.write_bytes(build([T("x", shape), T("y", shape)], [Op(code, [0], [1], options)],
                           [0], [1]))
    # the operator is named after its output tensor 'y'
    with pytest.raises(EdgennError) as err:
        load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and message.endswith(f"node 'y': attribute {key} "
                                                                f"is {value}")
    assert message.count("node 'y'") == 1
    assert error_line(capsys, ["inspect", str(path)]).endswith(message)


# -- the IR check itself ---------------------------------------------------------------------
def test_ir_node_with_nonfinite_attribute() -> None:
    x = Tensor("x", (1, 4), DType.FLOAT32)
    node = Node("act", "LeakyRelu", ("x",), ("y",), {"alpha": np.float32(np.nan)})
    with pytest.raises(GraphValidationError, match=r"^LeakyRelu node 'act': attribute alpha "
                                                   r"is nan$"):
        infer(node, [x])


def test_ir_nonfinite_inside_a_list_attribute() -> None:
    x = Tensor("x", (1, 4, 4, 2), DType.FLOAT32)
    node = Node("pad", "Pad", ("x",), ("y",),
                {"pads": ((0, 0), (1, 1), (1, 1), (0, 0)), "value": NAN})
    with pytest.raises(GraphValidationError, match=r"^Pad node 'pad': attribute value is nan$"):
        infer(node, [x])
    # an infinite pad value is allowed (max pooling pads with -inf)
    ok = Node("pad", "Pad", ("x",), ("y",),
              {"pads": ((0, 0), (1, 1), (1, 1), (0, 0)), "value": -INF})
    assert infer(ok, [x]) == [((1, 6, 6, 2), DType.FLOAT32)]
