"""ONNX Pad ``reflect`` and ``edge`` (the IR's BorderPad) against onnxruntime on the reference
runtime: NCHW (stored NHWC), N x C x L (stored [N, 1, L, C]) and 2-D tensors, between
convolutions as an STFT front end has them (Silero VAD pads its audio with ``reflect``), and
the one-line errors for what ONNX itself refuses or edgenn does not run."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import EdgennError
from edgenn.frontends.onnx import load_onnx

ort = pytest.importorskip("onnxruntime")


def _model(x_shape: Sequence[int], pads: Sequence[int], mode: str, conv: bool) -> bytes:
    rank = len(x_shape)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], mode=mode)]
    inits = {"pads": np.asarray(pads, np.int64)}
    out = "p"
    if conv:  # a convolution after the padding: the layout conversion is exercised
        c = x_shape[1]
        k = [3] * (rank - 2)
        inits["w"] = np.random.default_rng(0).standard_normal((4, c, *k)).astype(np.float32)
        nodes.append(helper.make_node("Conv", ["p", "w"], ["y"]))
        out = "y"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


CASES = [
    ((1, 3, 5, 6), [0, 0, 2, 1, 0, 0, 1, 3], True),  # NCHW: H and W
    ((2, 2, 40), [0, 0, 7, 0, 0, 9], True),  # N x C x L audio frames
    ((1, 1, 64), [0, 0, 16, 0, 0, 16], False),  # the STFT padding of Silero VAD
    ((3, 7), [0, 2, 0, 5], False),
]


@pytest.mark.parametrize("mode", ["reflect", "edge"])
@pytest.mark.parametrize("shape, pads, conv", CASES, ids=[str(c[0]) for c in CASES])
def test_pad_modes_match_onnxruntime(shape: tuple[int, ...], pads: list[int], conv: bool,
                                     mode: str) -> None:
    data = _model(shape, pads, mode, conv)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = compile_ref(load_onnx(data, "pad.onnx")).run(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_reflect_pad_as_long_as_its_axis_is_one_line() -> None:
    data = _model((1, 1, 4), [0, 0, 4, 0, 0, 0], "reflect", False)
    with pytest.raises(EdgennError, match=r"^[^\n]*reflect pads .* must be shorter"):
        load_onnx(data, "pad.onnx")


def test_wrap_mode_is_refused_in_one_line() -> None:
    data = _model((1, 1, 4), [0, 0, 1, 0, 0, 1], "wrap", False)
    with pytest.raises(EdgennError, match=r"^[^\n]*Pad mode 'wrap' is not supported"):
        load_onnx(data, "pad.onnx")
