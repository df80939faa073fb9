"""Integer LSTM on full-range inputs, bit-exact with TFLite Micro, stateless and stateful.

Inputs over the whole int8 / int16 range make the gates' accumulators large, so their Q3.12
values fall next to a rounding boundary now and then: there the gate FCs' multipliers must be
TFLM's to the last bit (the two float32 scales multiplied in double). With the product taken
in float32 instead, about one cell-state value in 6,000 was one to four steps off and some
reached the outputs (the seeds below are ones where they did: row 20 of the stateless batch,
invocation 18 of the stream). Real digits and quarter-range inputs never showed it, which is
why ``test_operator_fixtures`` and ``test_stateful`` passed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir import Graph  # noqa: E402
from edgenn.oracles.tflm import tflm_interpreter, tflm_run  # noqa: E402
from tests.conformance.cases.recurrent import LstmShape, lstm_quantized  # noqa: E402
from tests.conformance.spec import model_bytes  # noqa: E402

MNIST_LSTM = Path(__file__).parent / "fixtures" / "operators" / "lstm_mnist_int8.tflite"
STREAM = 20
# why these seeds: before the fix, row 20 of this batch and invocation 18 of this stream
# differed from TFLite Micro (found by sweeping seeds; the sweeps below cover others)
STATELESS_SEED, STATEFUL_SEED = 2, 82
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
TARGETS = ["ref", pytest.param("cortex-m4", marks=needs_arm)]


def _full_range(graph: Graph, n: int, seed: int) -> np.ndarray:
    """``n`` samples of the graph's (only) input, uniform over its integer type's range."""
    t = graph.tensor(graph.inputs[0])
    info = np.iinfo(t.dtype.numpy)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max, (n, *t.shape[1:]), endpoint=True).astype(
        t.dtype.numpy)


def _mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> int:
    assert [g.shape for g in got] == [w.shape for w in want]
    return sum(int((g != w).sum()) for g, w in zip(got, want, strict=True))


def _stateless(data: bytes, graph: Graph, target: str, n: int, seed: int) -> int:
    x = _full_range(graph, n, seed)
    return _mismatches(compile_model(graph, target).run(x), tflm_run(data, x))


def _stateful(data: bytes, graph: Graph, target: str, seed: int) -> int:
    """Mismatches over ``STREAM`` consecutive invocations, then a reset and 5 more."""
    xs = _full_range(graph, STREAM + 5, seed)
    exe = compile_model(graph, target)
    oracle = tflm_interpreter(data)
    bad = _mismatches(exe.run(xs[:STREAM], stateful=True),
                      tflm_run(data, xs[:STREAM], stateful=True, interpreter=oracle))
    exe.reset_state()
    oracle.reset()
    return bad + _mismatches(exe.run(xs[STREAM:], stateful=True),
                             tflm_run(data, xs[STREAM:], stateful=True, interpreter=oracle))


@pytest.mark.parametrize("target", TARGETS)
def test_mnist_lstm_full_range_stateless(target: str) -> None:
    data = MNIST_LSTM.read_bytes()
    assert _stateless(data, load_tflite(data, "lstm"), target, 32, STATELESS_SEED) == 0


@pytest.mark.parametrize("target", TARGETS)
def test_mnist_lstm_full_range_stateful(target: str) -> None:
    data = MNIST_LSTM.read_bytes()
    assert _stateful(data, load_tflite(data, "lstm"), target, STATEFUL_SEED) == 0


@pytest.mark.parametrize("seed", range(6))
def test_mnist_lstm_full_range_sweep_ref(seed: int) -> None:
    data = MNIST_LSTM.read_bytes()
    graph = load_tflite(data, "lstm")
    assert _stateless(data, graph, "ref", 64, seed) == 0
    assert _stateful(data, graph, "ref", 1000 + seed) == 0


def _synthetic(int16: bool, seed: int) -> bytes:
    """A conformance-style LSTM (random weights) with a wide input, 8x8->16 or 16x8->16:
    on full-range inputs about a third of its gate sums sit at the int16 clamp and most lie
    beyond 4.0 (the activations' saturated table end). These did not show the multiplier bug
    (saturated gates hide a one-step change of their input); they guard the rest of the
    arithmetic at the range edges."""
    name = f"lstm_full_range_{'16' if int16 else '8'}_{seed}"
    return model_bytes([lstm_quantized(name, LstmShape(1, 6, 48, 12), int16=int16,
                                       x_scale=0.05, h_scale=1 / 64, cell_pow=-12)])


@pytest.mark.parametrize("int16", [False, True], ids=["int8", "int16"])
@pytest.mark.parametrize("seed", range(4))
def test_synthetic_lstm_full_range_ref(int16: bool, seed: int) -> None:
    data = _synthetic(int16, seed)
    graph = load_tflite(data, "lstm")
    assert _stateless(data, graph, "ref", 48, seed) == 0
    assert _stateful(data, graph, "ref", 2000 + seed) == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 40))
def test_mnist_lstm_full_range_sweep_ref_slow(seed: int) -> None:
    data = MNIST_LSTM.read_bytes()
    graph = load_tflite(data, "lstm")
    assert _stateless(data, graph, "ref", 128, seed) == 0
    assert _stateful(data, graph, "ref", 1000 + seed) == 0
