"""The generated integer LSTMs of DSP cores (kernels/lstm_s8_gen.py, int8, and
kernels/lstm_s16_gen.py, 16x8) against the reference runtime and TFLite Micro: zero
mismatches over shapes with odd unit counts, input sizes that are not multiples of 4,
time-major sequences of several batch rows, cell clipping, both gate requantizations (int8:
single SMMULR and TFLite's double rounding), full-range inputs and stateful streams. Every
case is checked to run the generated kernel (not the portable fallback); each list of cases
runs in one firmware.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.backends.cortexm.kernels.lstm_s8_gen import GeneratedLstmS8  # noqa: E402
from edgenn.backends.cortexm.kernels.lstm_s16_gen import GeneratedLstmS16  # noqa: E402
from edgenn.backends.cortexm.selection import select_kernel  # noqa: E402
from edgenn.backends.cortexm.targets import CORES  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir import DType, Graph  # noqa: E402
from edgenn.oracles.tflm import tflm_interpreter, tflm_run  # noqa: E402
from tests.conformance.cases.recurrent import LstmShape, lstm_quantized  # noqa: E402
from tests.conformance.spec import Case, model_bytes  # noqa: E402

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
M4 = CORES["cortex-m4"]

# (name, shape, options): x_scale 0.05 makes the input FCs' multipliers > 0.5 (exact
# requantization), the default 0.02 keeps them below (single SMMULR)
CASES: list[tuple[str, LstmShape, dict[str, object]]] = [
    ("gen_7x5", LstmShape(1, 4, 7, 5), {}),
    ("gen_13x9", LstmShape(1, 3, 13, 9), {"x_scale": 0.05, "x_zp": -9}),
    ("gen_6x3_time_major_batch3", LstmShape(3, 1, 6, 3, time_major=True), {"h_zp": 5}),
    ("gen_1x1", LstmShape(1, 3, 1, 1), {}),
    ("gen_30x11_clip", LstmShape(1, 5, 30, 11), {"cell_clip": 1.5, "cell_pow": -12}),
    ("gen_2x17_wide", LstmShape(1, 3, 2, 17), {"x_scale": 0.05, "h_scale": 1 / 32}),
]
SLOW_CASES: list[tuple[str, LstmShape, dict[str, object]]] = [
    ("gen_129x64", LstmShape(1, 2, 129, 64), {"x_scale": 0.05, "x_zp": -7}),
    ("gen_33x31", LstmShape(1, 4, 33, 31), {"h_zp": -9}),
    ("gen_5x2_time_major_batch2", LstmShape(2, 1, 5, 2, time_major=True), {"x_scale": 0.05}),
    ("gen_4x4_cell15", LstmShape(1, 7, 4, 4), {"cell_pow": -15}),
]


CASES16: list[tuple[str, LstmShape, dict[str, object]]] = [
    ("gen16_3x4", LstmShape(1, 5, 3, 4), {}),
    ("gen16_7x5_clip", LstmShape(1, 4, 7, 5), {"cell_clip": 2.0}),
    ("gen16_6x3_time_major_batch3", LstmShape(3, 1, 6, 3, time_major=True), {}),
    ("gen16_1x1", LstmShape(1, 3, 1, 1), {"x_scale": 0.05}),
    ("gen16_30x11", LstmShape(1, 3, 30, 11), {"cell_pow": -12, "h_scale": 1 / 32}),
    ("gen16_150x37_looped", LstmShape(1, 2, 150, 37), {}),  # the input part looped
]
SLOW_CASES16: list[tuple[str, LstmShape, dict[str, object]]] = [
    ("gen16_129x64", LstmShape(1, 2, 129, 64), {"x_scale": 0.05}),
    ("gen16_33x31", LstmShape(1, 4, 33, 31), {"cell_pow": -15}),
    ("gen16_5x2_time_major_batch2", LstmShape(2, 1, 5, 2, time_major=True), {}),
]
Spec = list[tuple[str, LstmShape, dict[str, object]]]


def _cases(spec: Spec) -> list[Case]:
    return [lstm_quantized(name, shape, int16=name.startswith("gen16"), **opts)  # type: ignore[arg-type]
            for name, shape, opts in spec]


def _full_range(graph: Graph, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = []
    for name in graph.inputs:
        t = graph.tensor(name)
        info = np.iinfo(t.dtype.numpy)
        xs.append(rng.integers(info.min, info.max, (n, *t.shape[1:]), endpoint=True)
                  .astype(t.dtype.numpy))
    return xs


def _mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> int:
    assert [g.shape for g in got] == [w.shape for w in want]
    return sum(int((g.astype(np.int64) != w).sum()) for g, w in zip(got, want, strict=True))


def _check_selected(graph: Graph, core_name: str = "cortex-m4") -> None:
    for node in graph.nodes:
        int16 = graph.tensor(node.inputs[0]).dtype is DType.INT16
        want = GeneratedLstmS16.name if int16 else GeneratedLstmS8.name
        assert select_kernel(node, graph, CORES[core_name]).name == want, node


def test_both_requantizations_are_generated() -> None:
    """The case list covers the single-SMMULR and the double-rounding gate FCs."""
    codes = []
    kernel = GeneratedLstmS8()
    for case in _cases(CASES):
        graph = load_tflite(model_bytes([case]), name=case.id)
        codes.append(kernel.prepare(graph.nodes[0], graph, M4).code)
    assert any("edgenn_requant_doubled" in c for c in codes)
    assert any("edgenn_requant_s32(b0_x" in c for c in codes)


def test_no_dsp_and_int16_keep_the_portable_kernel() -> None:
    graph = load_tflite(model_bytes(_cases(CASES[:1])), name="m0")
    node = graph.nodes[0]
    assert not GeneratedLstmS8().matches(node, graph, CORES["cortex-m0plus"])
    assert select_kernel(node, graph, CORES["cortex-m0plus"]).name == "edgenn_lstm"
    g16 = load_tflite(model_bytes([lstm_quantized("i16", LstmShape(1, 3, 4, 5), int16=True)]),
                      name="i16")
    assert not GeneratedLstmS8().matches(g16.nodes[0], g16, M4)
    assert not GeneratedLstmS16().matches(graph.nodes[0], graph, M4)
    # a 16x8 input FC whose accumulators could leave int32: the portable 16x8 kernel
    deep = load_tflite(model_bytes([lstm_quantized("deep16", LstmShape(1, 1, 3000, 2),
                                                   int16=True)]), name="deep16")
    assert select_kernel(deep.nodes[0], deep, M4).name == "edgenn_lstm"


def _run(spec: Spec, target: str, seed: int) -> None:
    data = model_bytes(_cases(spec))
    graph = load_tflite(data, name="lstm_gen")
    _check_selected(graph, target)
    xs = _full_range(graph, 5, seed)
    got = compile_model(graph, target).run(*xs)
    assert _mismatches(got, compile_model(graph, "ref").run(*xs)) == 0
    assert _mismatches(got, tflm_run(data, *xs)) == 0


@needs_arm
@pytest.mark.parametrize("int16", [False, True], ids=["int8", "int16"])
def test_m4_matches_reference_and_tflm(int16: bool) -> None:
    _run(CASES16 if int16 else CASES, "cortex-m4", 1)


@needs_arm
@pytest.mark.parametrize("int16", [False, True], ids=["int8", "int16"])
def test_m4_stateful_stream_matches_reference_and_tflm(int16: bool) -> None:
    """Six invocations carrying hidden and cell state, a reset, two more."""
    data = model_bytes(_cases((CASES16 if int16 else CASES)[:3]))
    graph = load_tflite(data, name="lstm_gen_state")
    assert graph.state
    _check_selected(graph)
    xs = _full_range(graph, 8, 5)
    exe, ref = compile_model(graph, "cortex-m4"), compile_model(graph, "ref")
    oracle = tflm_interpreter(data)
    for part in (slice(0, 6), slice(6, 8)):
        x = [v[part] for v in xs]
        got = exe.run(*x, stateful=True)
        assert _mismatches(got, ref.run(*x, stateful=True)) == 0
        assert _mismatches(got, tflm_run(data, *x, stateful=True, interpreter=oracle)) == 0
        exe.reset_state()
        ref.reset_state()
        oracle.reset()


@needs_arm
@pytest.mark.slow
@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m7"])
@pytest.mark.parametrize("int16", [False, True], ids=["int8", "int16"])
def test_sweep_matches_reference_and_tflm(target: str, int16: bool) -> None:
    _run(CASES16 + SLOW_CASES16 if int16 else CASES + SLOW_CASES, target, 11)


@needs_arm
def test_m4_compact_code_matches_reference() -> None:
    """Compact code (the flash policy's smaller form): 4-row passes only, less flash, exact."""
    from edgenn.backends.cortexm.executable import compile_cortexm

    data = model_bytes(_cases(CASES[:2]))
    graph = load_tflite(data, name="lstm_gen_compact")
    xs = _full_range(graph, 4, 9)
    fast, compact = (compile_cortexm(graph, "cortex-m4", compact=c) for c in (False, True))
    assert compact.manifest["compact_layers"] == [0, 1]
    assert compact.sizes()["flash"] < fast.sizes()["flash"]
    got = compact.run(*xs)
    assert _mismatches(got, compile_model(graph, "ref").run(*xs)) == 0
    assert _mismatches(got, tflm_run(data, *xs)) == 0
