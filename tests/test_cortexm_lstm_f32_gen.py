"""The generated float32 LSTM of FPU cores (kernels/lstm_f32_gen.py) against the reference
runtime and TFLite Micro: within float tolerance (the products and sums are in TFLM's
order, libm's expf / tanhf round differently) over shapes with odd unit counts (a 4-row
block), input and hidden sizes below, at and beyond the 8-element chunk, time-major
sequences of several batch rows, cell clipping and 20 consecutive stateful invocations.
Every case is checked to run the generated kernel; each list of cases runs in one firmware.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.backends.cortexm.kernels.lstm_f32_gen import GeneratedLstmF32  # noqa: E402
from edgenn.backends.cortexm.selection import select_kernel  # noqa: E402
from edgenn.backends.cortexm.targets import CORES  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir import Graph  # noqa: E402
from edgenn.oracles.tflm import tflm_interpreter, tflm_run  # noqa: E402
from tests.conformance.cases.recurrent import LstmShape, lstm_float  # noqa: E402
from tests.conformance.spec import model_bytes  # noqa: E402

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
RTOL, ATOL = 1e-5, 1e-5  # the operator cases' float tolerance (tests/conformance)

CASES: list[tuple[str, LstmShape, float]] = [
    ("f32_7x5", LstmShape(1, 4, 7, 5), 0.0),
    ("f32_17x9_clip", LstmShape(1, 3, 17, 9), 0.8),
    ("f32_6x3_time_major_batch3", LstmShape(3, 1, 6, 3, time_major=True), 0.0),
    ("f32_1x1", LstmShape(1, 3, 1, 1), 0.0),
    ("f32_24x16", LstmShape(1, 3, 24, 16), 0.0),
]
SLOW_CASES: list[tuple[str, LstmShape, float]] = [
    ("f32_129x64", LstmShape(1, 2, 129, 64), 0.0),
    ("f32_33x31_clip", LstmShape(1, 4, 33, 31), 2.0),
    ("f32_5x2_time_major_batch2", LstmShape(2, 1, 5, 2, time_major=True), 0.0),
]


def _data(spec: list[tuple[str, LstmShape, float]]) -> bytes:
    return model_bytes([lstm_float(name, shape, clip) for name, shape, clip in spec])


def _inputs(graph: Graph, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, (n, *graph.tensor(name).shape[1:])).astype(np.float32)
            for name in graph.inputs]


def _check_selected(graph: Graph, core: str = "cortex-m4") -> None:
    lstms = [node for node in graph.nodes if node.op == "LSTM"]
    assert lstms
    for node in lstms:
        assert select_kernel(node, graph, CORES[core]).name == GeneratedLstmF32.name, node


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_no_fpu_keeps_the_portable_kernel() -> None:
    graph = load_tflite(_data(CASES[:1]), name="m0")
    node = graph.nodes[0]
    assert not GeneratedLstmF32().matches(node, graph, CORES["cortex-m0plus"])
    assert select_kernel(node, graph, CORES["cortex-m0plus"]).name == "edgenn_lstm_f32"


def test_stream_is_every_weight_once() -> None:
    """The packed stream holds each weight and bias exactly once (block order)."""
    graph = load_tflite(_data(CASES[:1]), name="w")
    call = GeneratedLstmF32().prepare(graph.nodes[0], graph, CORES["cortex-m4"])
    stream = call.arrays[0].values
    shape = CASES[0][1]
    assert stream.size == 4 * shape.n_cell * (shape.n_input + shape.n_cell + 1)
    node = graph.nodes[0]
    every = np.concatenate([graph.tensor(node.inputs[k]).data.ravel()  # type: ignore[union-attr]
                            for k in (*range(1, 9), *range(12, 16))])
    np.testing.assert_array_equal(np.sort(stream), np.sort(every.astype(np.float32)))


def _run(spec: list[tuple[str, LstmShape, float]], target: str, seed: int) -> None:
    data = _data(spec)
    graph = load_tflite(data, name="lstm_f32_gen")
    _check_selected(graph, target)
    xs = _inputs(graph, 3, seed)
    got = compile_model(graph, target).run(*xs)
    _close(got, compile_model(graph, "ref").run(*xs))
    _close(got, tflm_run(data, *xs))


@needs_arm
def test_m4_matches_reference_and_tflm() -> None:
    _run(CASES, "cortex-m4", 1)


@needs_arm
def test_m4_twenty_stateful_invocations_match_reference_and_tflm() -> None:
    """20 invocations carrying hidden and cell state, a reset, three more."""
    data = _data(CASES[:3])
    graph = load_tflite(data, name="lstm_f32_gen_state")
    assert graph.state
    _check_selected(graph)
    xs = _inputs(graph, 23, 5)
    exe, ref = compile_model(graph, "cortex-m4"), compile_model(graph, "ref")
    oracle = tflm_interpreter(data)
    for part in (slice(0, 20), slice(20, 23)):
        x = [v[part] for v in xs]
        got = exe.run(*x, stateful=True)
        _close(got, ref.run(*x, stateful=True))
        _close(got, tflm_run(data, *x, stateful=True, interpreter=oracle))
        exe.reset_state()
        ref.reset_state()
        oracle.reset()


@needs_arm
@pytest.mark.slow
@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m7"])
def test_sweep_matches_reference_and_tflm(target: str) -> None:
    _run(CASES + SLOW_CASES, target, 11)


@needs_arm
@pytest.mark.parametrize("layout,attrs", [
    (1, (("clip", 0.7),)), (1, (("activations", ["Sigmoid", "Sigmoid", "Tanh"]),)), (0, ())],
    ids=["gate-clip", "sigmoid-cell-gate", "time-major-5-steps-batch-3"])
def test_m4_onnx_lstm_matches_onnxruntime(layout: int,
                                          attrs: tuple[tuple[str, object], ...]) -> None:
    """What only ONNX has: the gates' clip, a sigmoid cell gate, a time-major sequence of
    several steps and batch rows (against onnxruntime)."""
    pytest.importorskip("onnxruntime")
    from edgenn.frontends.onnx import load_onnx
    from tests.test_recurrent_onnx import Rnn, _assert_close, _onnxruntime

    batch = 3 if layout == 0 else 2
    rnn = Rnn("LSTM", 5 if layout == 0 else 6, batch, 11, 7, layout=layout, initial="const",
              seed=21, attrs=attrs)
    model, feeds = rnn.model()
    graph = load_onnx(model.SerializeToString(), name="lstm.onnx")
    _check_selected(graph)
    got = compile_model(graph, "cortex-m4").run(*feeds.values())
    _assert_close(got, _onnxruntime(rnn, feeds))
