"""The generated int8 SVDF of DSP cores (kernels/svdf_s8_gen.py, int16 or int8 state)
against the reference runtime and TFLite Micro: zero mismatches over ranks 1-3, memories from 2 up,
filter counts that leave 2- and 4-row feature passes and odd ones, input sizes that are not
multiples of 4, time passes straight, looped and odd, input / state / output zero points,
full-range inputs, and 20 consecutive stateful invocations (the state shifted in place
across them), an int8 state saturating. Every case is checked to run the generated
kernel.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.backends.cortexm.kernels.svdf_s8_gen import GeneratedSvdfS8  # noqa: E402
from edgenn.backends.cortexm.selection import select_kernel  # noqa: E402
from edgenn.backends.cortexm.targets import CORES  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir import DType, Graph  # noqa: E402
from edgenn.oracles.tflm import tflm_interpreter, tflm_run  # noqa: E402
from tests.conformance.cases.recurrent import svdf_int8  # noqa: E402
from tests.conformance.spec import Case, model_bytes  # noqa: E402

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
M4 = CORES["cortex-m4"]
FIXTURES = Path(__file__).parent / "fixtures" / "svdf"


def _cases() -> list[Case]:
    # (name, n_input, units, rank, memory, options)
    return [
        svdf_int8("gen_svdf_6x4r2m6", 1, 6, 4, 2, 6),
        svdf_int8("gen_svdf_13x3r1m2", 1, 13, 3, 1, 2, x_zp=7, out_zp=3),
        svdf_int8("gen_svdf_40x7r3m10_zp", 1, 40, 7, 3, 10, state_zp=-3, activation=0),
        svdf_int8("gen_svdf_9x5r1m8", 1, 9, 5, 1, 8, x_zp=-128, state_scale=0.004),
        svdf_int8("gen_svdf_12x3r2m40_looped", 1, 12, 3, 2, 40),  # the time pass looped
        svdf_int8("gen_svdf_6x4r2m5_odd", 1, 6, 4, 2, 5, state_zp=4),  # halfword time pass
        svdf_int8("gen_svdf8_10x4r2m6", 1, 10, 4, 2, 6, state=DType.INT8, state_zp=-3),
        # the features saturate the int8 state: clamped before the zero point, then wrapped
        svdf_int8("gen_svdf8_6x4r2m5_saturating", 1, 6, 4, 2, 5, state=DType.INT8,
                  state_zp=-40, state_scale=0.01),
    ]


def _slow_cases() -> list[Case]:
    return [
        svdf_int8("gen_svdf_97x32r2m16", 1, 97, 32, 2, 16),
        svdf_int8("gen_svdf_1x1r1m4", 1, 1, 1, 1, 4),
        svdf_int8("gen_svdf_30x64r1m2", 1, 30, 64, 1, 2, state_zp=5),
        svdf_int8("gen_svdf_8x5r1m36_looped", 1, 8, 5, 1, 36, state_zp=-2),
        svdf_int8("gen_svdf_21x9r3m1_odd", 1, 21, 9, 3, 1),
        svdf_int8("gen_svdf_5x7r1m11_odd", 1, 5, 7, 1, 11),
        svdf_int8("gen_svdf8_33x16r1m9", 1, 33, 16, 1, 9, state=DType.INT8),
    ]


def _full_range(graph: Graph, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 127, (n, *graph.tensor(name).shape[1:]), endpoint=True)
            .astype(np.int8) for name in graph.inputs]


def _mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> int:
    assert [g.shape for g in got] == [w.shape for w in want]
    return sum(int((g.astype(np.int64) != w).sum()) for g, w in zip(got, want, strict=True))


def _check_selected(graph: Graph, core: str = "cortex-m4") -> None:
    for node in graph.nodes:
        assert select_kernel(node, graph, CORES[core]).name == GeneratedSvdfS8.name, node


def test_no_dsp_keeps_the_portable_kernel() -> None:
    graph = load_tflite(model_bytes(_cases()[:1]), name="m0")
    assert select_kernel(graph.nodes[0], graph, CORES["cortex-m0plus"]).name == "edgenn_svdf_s8"
    assert not GeneratedSvdfS8().matches(graph.nodes[0], graph, CORES["cortex-m0plus"])


def _stream(data: bytes, graph: Graph, target: str, n: int, seed: int) -> None:
    """``n`` consecutive stateful invocations, a reset, three more: every output exact."""
    _check_selected(graph, target)
    xs = _full_range(graph, n + 3, seed)
    exe, ref = compile_model(graph, target), compile_model(graph, "ref")
    oracle = tflm_interpreter(data)
    for part in (slice(0, n), slice(n, n + 3)):
        x = [v[part] for v in xs]
        got = exe.run(*x, stateful=True)
        assert _mismatches(got, ref.run(*x, stateful=True)) == 0
        assert _mismatches(got, tflm_run(data, *x, stateful=True, interpreter=oracle)) == 0
        exe.reset_state()
        ref.reset_state()
        oracle.reset()


@needs_arm
def test_m4_twenty_stateful_invocations_match_reference_and_tflm() -> None:
    data = model_bytes(_cases())
    graph = load_tflite(data, name="svdf_gen")
    assert graph.state
    _stream(data, graph, "cortex-m4", 20, 3)


@needs_arm
@pytest.mark.slow
@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m7"])
def test_sweep_matches_reference_and_tflm(target: str) -> None:
    data = model_bytes(_cases() + _slow_cases())
    _stream(data, load_tflite(data, name="svdf_gen_sweep"), target, 20, 17)


def test_row_order_packs_rows_holding_minus_128() -> None:
    """Rows with -128 weights: some order of them packs, each row exactly once."""
    from edgenn.backends.cortexm.kernels.dense import packable
    from edgenn.backends.cortexm.kernels.svdf_s8_gen import row_order

    rng = np.random.default_rng(4)
    for rows in (5, 8, 13):
        w = rng.integers(-127, 128, (rows, 17))
        w[0] = -rng.integers(1, 128, 17)  # row 0 negative everywhere,
        w[1, ::3] = -128  # so the pair (0, 1) as it stands cannot pack
        w[rows - 1, 1::4] = -128
        assert not packable(w)
        order = row_order(w)
        assert order is not None and sorted(order) == list(range(rows))
        assert packable(w[order])
    assert row_order(np.full((2, 3), -128)) is None  # two rows of -128 only: no pairing


@needs_arm
@pytest.mark.parametrize("name", ["keyword_scrambled", pytest.param(
    "keyword_scrambled_8bit", marks=pytest.mark.slow)])
def test_tflm_keyword_benchmark_model_streams_exactly(name: str) -> None:
    """TFLM's keyword benchmark network (7 SVDF layers, scrambled weights holding -128: the
    feature rows reordered) over 20 consecutive invocations: bit-exact."""
    data = (FIXTURES / f"{name}.tflite").read_bytes()
    graph = load_tflite(data, name=name)
    svdf = [n for n in graph.nodes if n.op == "SVDF"]
    assert len(svdf) == 7
    assert all(select_kernel(n, graph, M4).name == GeneratedSvdfS8.name for n in svdf)
    rng = np.random.default_rng(8)
    x = rng.integers(-32768, 32767, (20, *graph.tensor(graph.inputs[0]).shape[1:]),
                     endpoint=True).astype(np.int16)
    got = compile_model(graph, "cortex-m4").run(x, stateful=True)
    want = tflm_run(data, x, stateful=True, interpreter=tflm_interpreter(data))
    assert _mismatches(got, want) == 0


def test_new_state_takes_its_slot() -> None:
    """The SVDF kernels write the new state over the old one (``state_in_place``): the
    planner gives it the state variable's slot, so the stateful arena holds the state once."""
    from edgenn.backends.cortexm.codegen.memory import plan_arena, state_aliases

    graph = load_tflite(model_bytes(_cases()[:2]), name="slots")
    assert len(graph.state) == 2
    want = {s.write: s.read for s in graph.state}
    assert state_aliases(graph, range(len(graph.nodes))) == want
    assert state_aliases(graph, []) == {}  # no kernel allows it: planned buffers, copies
    calls = [select_kernel(n, graph, M4).prepare(n, graph, M4) for n in graph.nodes]
    assert all(c.state_in_place for c in calls)
    scratch = [c.scratch_bytes for c in calls]
    shared = plan_arena(graph, scratch, state_in_place=range(len(calls)))
    assert not set(want) & set(shared.offsets)
    assert plan_arena(graph, scratch).peak_bytes > shared.peak_bytes
