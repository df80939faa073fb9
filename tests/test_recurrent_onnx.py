"""ONNX LSTM and GRU on the reference runtime against onnxruntime (float32, 1e-5 relative),
ONNX's own node tests (``onnx.backend.test.case.node``: lstm.py, gru.py) as extra cases, the
refusals, a float32 ONNX LSTM on the Cortex-M4, and two TFLite LSTM checks the conformance
harness cannot express: a time-major multi-step sequence against TFLite Micro (the harness feeds
only inputs whose leading dimension is 1) and the variants TFLite Micro does not run."""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgenn.api import compile_model
from edgenn.errors import UnsupportedOperatorError
from edgenn.frontends.onnx import load_onnx

ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-5, 1e-6


def _session_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in sess.run(None, feeds)]


def _edgenn_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    graph = load_onnx(model.SerializeToString(), name="recurrent.onnx")
    return compile_model(graph, "ref").run(*feeds.values())


def _assert_close(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


# -- hand-built models ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Rnn:
    """One ONNX LSTM or GRU node with random weights; inputs named as ONNX does."""

    op: str  # "LSTM" or "GRU"
    steps: int
    batch: int
    n_input: int
    hidden: int
    layout: int = 0
    bias: bool = True
    peepholes: bool = False
    initial: str = "none"  # "none", "const" or "input" (the initial states as graph inputs)
    outputs: tuple[bool, ...] = (True, True, True)  # Y, Y_h (, Y_c)
    attrs: tuple[tuple[str, Any], ...] = ()
    seed: int = 0

    @property
    def gates(self) -> int:
        return 4 if self.op == "LSTM" else 3

    def x_shape(self) -> tuple[int, int, int]:
        t, b = self.steps, self.batch
        return (t, b, self.n_input) if self.layout == 0 else (b, t, self.n_input)

    def state_shape(self) -> tuple[int, int, int]:
        return (1, self.batch, self.hidden) if self.layout == 0 else (self.batch, 1,
                                                                       self.hidden)

    def model(self) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        rng = np.random.default_rng(self.seed)
        g, h = self.gates, self.hidden

        def rand(*shape: int, scale: float = 0.5) -> np.ndarray:
            return rng.normal(0, scale, shape).astype(np.float32)

        inits = {"W": rand(1, g * h, self.n_input), "R": rand(1, g * h, h)}
        names = ["X", "W", "R", "B" if self.bias else "", "", "", ""]
        if self.bias:
            inits["B"] = rand(1, 2 * g * h)
        feeds = {"X": rand(*self.x_shape(), scale=1.0)}
        states = ["initial_h"] + (["initial_c"] if self.op == "LSTM" else [])
        inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, self.x_shape())]
        for k, name in enumerate(states):
            if self.initial == "none":
                continue
            names[5 + k] = name
            value = rand(*self.state_shape())
            if self.initial == "const":
                inits[name] = value
            else:
                feeds[name] = value
                inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                            self.state_shape()))
        if self.peepholes:
            names.append("P")
            inits["P"] = rand(1, 3 * h)
        while names and not names[-1]:
            names.pop()
        out_names = ["Y", "Y_h", "Y_c"][: len(self.outputs)]
        node_outs = [n if keep else "" for n, keep in zip(out_names, self.outputs, strict=True)]
        node = helper.make_node(self.op, names, node_outs, name=f"{self.op.lower()}0",
                                hidden_size=h, layout=self.layout, **dict(self.attrs))
        outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                   for n in node_outs if n]
        graph = helper.make_graph([node], "rnn", inputs, outputs,
                                  [numpy_helper.from_array(v, k) for k, v in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        return model, feeds


RNNS = [
    Rnn("LSTM", 5, 1, 3, 4),
    Rnn("LSTM", 1, 1, 6, 5, seed=1),
    Rnn("LSTM", 7, 2, 3, 6, initial="const", seed=2),
    Rnn("LSTM", 6, 1, 4, 3, layout=1, initial="const", seed=3),
    Rnn("LSTM", 4, 1, 3, 4, peepholes=True, initial="const", seed=4),
    Rnn("LSTM", 6, 1, 3, 4, attrs=(("clip", 0.7),), seed=5),
    Rnn("LSTM", 5, 1, 2, 3, bias=False, outputs=(False, True, False), seed=6),
    Rnn("LSTM", 4, 1, 3, 4, initial="input", seed=7),
    Rnn("LSTM", 5, 2, 3, 4, layout=1, initial="input", seed=8),
    Rnn("LSTM", 4, 1, 3, 4, seed=9,
        attrs=(("activations", ["Sigmoid", "Sigmoid", "Tanh"]),)),
    Rnn("LSTM", 28, 1, 28, 20, seed=10),
    Rnn("GRU", 5, 1, 3, 4, outputs=(True, True)),
    Rnn("GRU", 6, 2, 4, 3, initial="const", outputs=(True, True), seed=11),
    Rnn("GRU", 5, 1, 3, 4, outputs=(True, True), seed=12,
        attrs=(("linear_before_reset", 1),)),
    Rnn("GRU", 4, 1, 3, 5, layout=1, initial="input", outputs=(True, True), seed=13),
    Rnn("GRU", 6, 1, 3, 4, bias=False, outputs=(False, True), seed=14,
        attrs=(("clip", 0.5),)),
    Rnn("GRU", 5, 1, 3, 4, outputs=(True, True), initial="const", seed=15,
        attrs=(("linear_before_reset", 1), ("clip", 0.9))),
]


def _onnxruntime(rnn: Rnn, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs; batch-major (layout 1) models, which it refuses, run as their
    time-major twin with the inputs and outputs transposed."""
    if rnn.layout == 0:
        return _session_run(rnn.model()[0], feeds)
    twin, _ = replace(rnn, layout=0).model()
    swapped = {k: np.ascontiguousarray(v.swapaxes(0, 1)) for k, v in feeds.items()}
    outs = _session_run(twin, swapped)
    names = [n for n, keep in zip(("Y", "Y_h", "Y_c"), rnn.outputs, strict=False) if keep]
    # Y [T, 1, B, H] -> [B, T, 1, H]; Y_h, Y_c [1, B, H] -> [B, 1, H]
    return [np.ascontiguousarray(o.transpose(2, 0, 1, 3) if n == "Y" else o.swapaxes(0, 1))
            for n, o in zip(names, outs, strict=True)]


@pytest.mark.parametrize("rnn", RNNS, ids=lambda r: f"{r.op}-{r.seed}")
def test_matches_onnxruntime(rnn: Rnn) -> None:
    model, feeds = rnn.model()
    _assert_close(_edgenn_run(model, feeds), _onnxruntime(rnn, feeds))


def test_lstm_imports_to_one_node() -> None:
    model, _ = Rnn("LSTM", 5, 1, 3, 4, initial="const").model()
    graph = load_onnx(model.SerializeToString(), name="lstm.onnx")
    lstm = [n for n in graph.nodes if n.op == "LSTM"]
    assert len(lstm) == 1 and lstm[0].attrs["time_major"] is True
    assert len(lstm[0].inputs) == 24 and lstm[0].inputs[9] == ""  # no peepholes


# -- ONNX's node tests ---------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeTest:
    name: str
    node: onnx.NodeProto
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]


def _node_tests(module: str, cls: str) -> list[NodeTest]:
    """Every ``export_*`` example of ONNX's node test generator ``module``."""
    mod = importlib.import_module(f"onnx.backend.test.case.node.{module}")
    found: list[NodeTest] = []

    def record(node: onnx.NodeProto, inputs: Sequence[np.ndarray],
               outputs: Sequence[np.ndarray], name: str, **_: Any) -> None:
        found.append(NodeTest(name, node, tuple(inputs), tuple(outputs)))

    saved: Callable[..., Any] = mod.expect
    mod.expect = record
    try:
        exporter = getattr(mod, cls)
        for attr in sorted(vars(exporter)):
            if attr.startswith("export"):
                getattr(exporter, attr)()
    finally:
        mod.expect = saved
    return found


NODE_TESTS = _node_tests("lstm", "LSTM") + _node_tests("gru", "GRU")


def _as_model(t: NodeTest) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """X stays a graph input; the weights and states become initializers."""
    present = [n for n in t.node.input if n]
    inits = [numpy_helper.from_array(v, n) for n, v in zip(present, t.inputs, strict=True)
             if n != "X"]
    x = t.inputs[0].astype(np.float32)
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
            for n in t.node.output if n]
    graph = helper.make_graph([t.node], t.name,
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model, {"X": x}


def _unsupported(t: NodeTest) -> bool:
    attrs = {a.name: helper.get_attribute_value(a) for a in t.node.attribute}
    return attrs.get("direction", b"forward") != b"forward"


@pytest.mark.parametrize("case", NODE_TESTS, ids=[t.name for t in NODE_TESTS])
def test_onnx_node_tests(case: NodeTest) -> None:
    model, feeds = _as_model(case)
    if _unsupported(case):
        with pytest.raises(UnsupportedOperatorError, match="direction"):
            load_onnx(model.SerializeToString(), name=f"{case.name}.onnx")
        return
    got = _edgenn_run(model, feeds)
    # ONNX's numpy reference computes in float64: the tolerance is its own (rtol 1e-3)
    for g, w in zip(got, case.outputs, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-7)
    if not any(a.name == "layout" and a.i == 1 for a in case.node.attribute):
        _assert_close(got, _session_run(model, feeds))  # onnxruntime refuses layout 1


# -- refusals ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rnn", "message"), [
    (Rnn("LSTM", 3, 1, 2, 3, attrs=(("direction", "bidirectional"),)), "direction"),
    (Rnn("LSTM", 3, 1, 2, 3, attrs=(("input_forget", 1),)), "input_forget"),
    (Rnn("LSTM", 3, 1, 2, 3, attrs=(("activations", ["Sigmoid", "Tanh", "Relu"]),)),
     "activations"),
    (Rnn("GRU", 3, 1, 2, 3, outputs=(True, True), attrs=(("direction", "reverse"),)),
     "direction"),
])
def test_refusals_name_the_node(rnn: Rnn, message: str) -> None:
    model, _ = rnn.model()
    with pytest.raises(UnsupportedOperatorError, match=f"{rnn.op.lower()}0.*{message}"):
        load_onnx(model.SerializeToString(), name="bad.onnx")


# -- time-major multi-step TFLite LSTM against TFLite Micro ----------------------------------------
@pytest.mark.parametrize("name", ["int8", "float32"])
def test_tflite_time_major_sequence_matches_tflm(name: str) -> None:
    pytest.importorskip("tflite_micro")
    from edgenn.frontends.tflite import load_tflite
    from edgenn.oracles.tflm import tflm_interpreter
    from tests.conformance.cases.recurrent import (
        LstmShape,
        lstm_float_parts,
        lstm_quantized_parts,
    )
    from tests.conformance.spec import model_bytes

    shape = LstmShape(batch=2, time=6, n_input=3, n_cell=5, time_major=True)
    parts = (lstm_quantized_parts if name == "int8" else lstm_float_parts)("tm", shape)
    # why not a Case: Case insists on a leading dimension of 1 (here the 6 time steps)
    case = SimpleNamespace(op="UNIDIRECTIONAL_SEQUENCE_LSTM", inputs=parts[0],
                           outputs=parts[1], options=parts[2])
    data = model_bytes([case])  # type: ignore[list-item]
    spec = parts[0][0]
    rng = np.random.default_rng(3)
    if spec.dtype.value == "int8":
        x = rng.integers(-128, 128, spec.shape).astype(np.int8)
    else:
        x = rng.uniform(-2, 2, spec.shape).astype(np.float32)
    interp = tflm_interpreter(data)
    interp.set_input(x, 0)
    interp.invoke()
    want = np.array(interp.get_output(0))
    got = compile_model(load_tflite(data, name="tm.tflite"), "ref").run(x)[0]
    if name == "int8":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- TFLite LSTM variants TFLite Micro does not run: one error naming the node ---------------------
def _tflite_lstm_variant(change: str) -> bytes:
    from edgenn.ir import DType, QuantParams
    from tests.conformance.cases.recurrent import LstmShape, lstm_quantized_parts
    from tests.conformance.spec import const, model_bytes, omitted

    shape = LstmShape(batch=1, time=3, n_input=2, n_cell=3)
    inputs, outputs, options = lstm_quantized_parts("variant", shape)
    ops = list(inputs)
    if change == "peephole":
        # why all three: TFLite takes the peepholes together or not at all
        for k in (9, 10, 11):
            ops[k] = const(np.ones(3, np.int16), DType.INT16, QuantParams.per_tensor(0.01))
    elif change == "cifg":
        ops[1] = ops[5] = ops[12] = omitted()
    elif change == "projection":
        ops[16] = const(np.ones((3, 3), np.int8), DType.INT8, QuantParams.per_tensor(0.01))
    elif change == "per-channel":
        w = ops[2]
        assert w.data is not None
        ops[2] = const(w.data, DType.INT8, QuantParams(np.full(3, 0.01), np.zeros(3), 0))
    case = SimpleNamespace(op="UNIDIRECTIONAL_SEQUENCE_LSTM", inputs=tuple(ops),
                           outputs=outputs, options=options)
    return model_bytes([case])  # type: ignore[list-item]


@pytest.mark.parametrize(("change", "message"), [
    ("peephole", "peephole"), ("cifg", "CIFG"), ("projection", "projection"),
    ("per-channel", "per tensor"),
])
def test_tflite_lstm_variants_are_refused(change: str, message: str) -> None:
    from edgenn.frontends.tflite import load_tflite

    graph = load_tflite(_tflite_lstm_variant(change), name="variant.tflite")
    with pytest.raises(UnsupportedOperatorError, match=f"LSTM node 'c0_out0'.*{message}"):
        compile_model(graph, "ref")


# -- float32 LSTM of an ONNX model on the Cortex-M4 (peepholes, clip, all three outputs) -----------
@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
@pytest.mark.parametrize("rnn", [
    Rnn("LSTM", 6, 1, 4, 5, layout=1, initial="const", peepholes=True, attrs=(("clip", 0.8),)),
    Rnn("LSTM", 5, 1, 3, 4, layout=1, initial="input", seed=3),
], ids=["peepholes-clip", "state-inputs"])
def test_onnx_lstm_on_cortex_m4(rnn: Rnn) -> None:
    model, feeds = rnn.model()
    graph = load_onnx(model.SerializeToString(), name="lstm.onnx")
    got = compile_model(graph, "cortex-m4").run(*feeds.values())
    _assert_close(got, _onnxruntime(rnn, feeds))
