"""The flash policy: fast generated code by default, compact code in as few layers as the
flash budget needs, the cheapest in cycles first (edgenn/backends/cortexm/flash_policy.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.flash_policy import (
    DEFAULT_HEADROOM_BYTES,
    Measured,
    compact_prefix,
    int8_parameter_bytes,
    plan_code_size,
)
from edgenn.frontends.tflite import load_tflite

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"


def test_int8_parameter_bytes_counts_each_constant_once() -> None:
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    want = sum(g.tensor(n).nbytes for n in {i for node in g.nodes for i in node.inputs
                                            if i and g.tensor(i).is_const})
    assert int8_parameter_bytes(g) == want > 0


def test_plan_code_size_forced_fits_over_and_partly_compact() -> None:
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    n = len(g.nodes)
    everyone = frozenset(range(n))
    calls: list[frozenset[int]] = []

    def measure(compact: frozenset[int]) -> Measured:
        # compact code saves 100 bytes per layer and costs layer i (i + 1) cycles
        calls.append(compact)
        return Measured(1000 + 100 * (n - len(compact)),
                        [100 + (i + 1 if i in compact else 0) for i in range(n)])

    assert plan_code_size(g, measure, None, compact=True) == everyone and not calls
    assert plan_code_size(g, measure, 0, compact=False) == frozenset() and not calls
    assert plan_code_size(g, measure, 1000 + 100 * n) == frozenset()  # the fast build fits
    assert calls == [frozenset()]
    assert plan_code_size(g, measure, 999) == everyone  # not even all-compact fits
    # two layers' worth too much: the two whose compact code costs the fewest cycles
    assert plan_code_size(g, measure, 1000 + 100 * (n - 2)) == {0, 1}


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_build_respects_budget_and_stays_exact() -> None:
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.backends.ref import compile_ref

    g = load_tflite((FIXTURES / "model_c_int8.tflite").read_bytes(), "c")
    fast = compile_cortexm(g, "cortex-m4", compact=False)
    compact = compile_cortexm(g, "cortex-m4", compact=True)
    assert compact.sizes()["flash"] < fast.sizes()["flash"]
    assert compact.manifest["compact_layers"] == list(range(len(g.nodes)))
    # a budget between the two: some layers compact, the build within it
    budget = (fast.sizes()["flash"] + compact.sizes()["flash"]) // 2
    tight = compile_cortexm(g, "cortex-m4", flash_budget_kb=budget / 1024)
    assert 0 < len(tight.manifest["compact_layers"]) <= len(g.nodes)
    assert tight.sizes()["flash"] <= budget
    auto = compile_cortexm(g, "cortex-m4")
    assert auto.manifest["compact_layers"] == []
    assert auto.sizes()["flash"] <= int8_parameter_bytes(g) + DEFAULT_HEADROOM_BYTES
    x = np.random.default_rng(3).integers(-128, 128, size=(2, 28, 28, 1), dtype=np.int8)
    want = compile_ref(g).run(x)[0]
    for exe in (fast, compact, tight, auto):
        np.testing.assert_array_equal(exe.run(x)[0], want)


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_an_explicit_budget_that_cannot_be_met_is_a_plan_error() -> None:
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.errors import PlanError

    g = load_tflite((FIXTURES / "model_c_int8.tflite").read_bytes(), "c")
    with pytest.raises(PlanError, match=r"of flash of --flash-kb 1: use --flash-kb \d+$"):
        compile_cortexm(g, "cortex-m4", flash_kb=1)


def test_compact_prefix_compacts_the_cheapest_layers_until_the_build_fits() -> None:
    # five layers; compact code costs layer i (4 - i) * 10 cycles and saves 100 bytes each
    base = Measured(1500, [100] * 5)
    compacted = Measured(1000, [100 + (4 - i) * 10 for i in range(5)])
    probes: list[frozenset[int]] = []

    def measure_prefix(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(1500 - 100 * len(layers), [0] * 5)

    assert compact_prefix(base, compacted, 1300, measure_prefix) == {4, 3}
    assert len(probes) <= 3  # bisection, not one build per prefix
    assert compact_prefix(base, compacted, 1000, measure_prefix) == {0, 1, 2, 3, 4}


def test_compact_prefix_builds_the_predicted_prefix_and_its_neighbour_first() -> None:
    # five layers; compact code costs layer i (4 - i) * 10 cycles; layer i's own code shrinks
    # by 100 bytes, and compact code adds 20 shared bytes once (no layer owns them)
    base = Measured(1500, [100] * 5, [200] * 5)
    compacted = Measured(1020, [100 + (4 - i) * 10 for i in range(5)], [100] * 5)
    probes: list[frozenset[int]] = []

    def measure_prefix(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(1500 + 20 - 100 * len(layers), [0] * 5)

    assert compact_prefix(base, compacted, 1320, measure_prefix) == {4, 3}
    assert probes == [{4, 3}, {4}]  # the prediction, then one layer fewer: settled
    probes.clear()
    # a prediction that is wrong (the shared bytes are twice what the builds show): the
    # bisection of what is left still finds the shortest prefix that fits
    def measure_more(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(1500 + 60 - 100 * len(layers), [0] * 5)

    assert compact_prefix(base, compacted, 1320, measure_more) == {4, 3, 2}
    assert len(probes) <= 3


def test_a_prediction_of_every_layer_tries_one_short_of_it_first() -> None:
    # the per-layer flash under-counts what compact code saves (20 bytes a layer; the rest is
    # in shared helpers): the prediction is "every layer", the truth all but one
    base = Measured(1500, [100] * 5, [120] * 5)
    compacted = Measured(1000, [100 + (4 - i) * 10 for i in range(5)], [100] * 5)
    probes: list[frozenset[int]] = []

    def measure_prefix(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(1500 - 125 * len(layers), [0] * 5)

    assert compact_prefix(base, compacted, 1010, measure_prefix) == {4, 3, 2, 1}
    assert probes == [{4, 3, 2, 1}, {4, 3, 2}]  # no bisection from the middle


VWW = Path(__file__).resolve().parents[2] / "shared" / "models" / "mlperf_tiny" / \
    "vww_96_int8.tflite"


@pytest.mark.skipif(not VWW.is_file() or shutil.which("arm-none-eabi-gcc") is None,
                    reason="needs ../shared's MLPerf Tiny models and arm-none-eabi-gcc")
def test_compile_measures_its_trial_builds_within_4_gib_of_address_space(
        tmp_path: Path) -> None:
    """Found by fuzzing: each trial build's emulator reserves a large translation buffer, and
    holding all of them made unicorn exit the process ("Could not allocate dynamic translator
    buffer") under a 4 GiB address-space limit."""
    import subprocess
    import sys

    script = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
              "from edgenn.cli.main import main\n"
              f"sys.exit(main(['compile', {str(VWW)!r}, '--target', 'cortex-m4', "
              f"'-o', {str(tmp_path / 'fw')!r}]))\n")
    # why no trial cache: the point is that every trial build is emulated in this process
    env = {**os.environ, "EDGENN_TRIAL_CACHE": "off"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-500:]
    assert (tmp_path / "fw" / "build" / "model.elf").is_file()


def test_prefetch_builds_the_prediction_and_its_neighbour_and_changes_nothing() -> None:
    # the layers of the test above; prefetch is asked for the two builds the policy measures
    # when the prediction is right, and the answer is the one without prefetch
    base = Measured(1500, [100] * 5, [200] * 5)
    compacted = Measured(1020, [100 + (4 - i) * 10 for i in range(5)], [100] * 5)
    prefetched: list[Sequence[frozenset[int]]] = []
    probes: list[frozenset[int]] = []

    def measure_prefix(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(1500 + 20 - 100 * len(layers), [0] * 5)

    got = compact_prefix(base, compacted, 1320, measure_prefix, prefetched.append)
    assert got == {4, 3} == compact_prefix(base, compacted, 1320, measure_prefix)
    assert prefetched == [[{4, 3}, {4}]]
    assert probes[:2] == [{4, 3}, {4}]


def test_a_neighbour_far_over_the_budget_is_settled_by_the_calibrated_prediction() -> None:
    # KiB-sized layers: compact code saves layer i 4 KiB of its own code; the builds' unowned
    # bytes come out 1,100 B below the prediction (as VWW's do). Prefix 2 is predicted to fit
    # and does; prefix 1 is predicted (corrected by the offset prefix 2 measured) 2.5 KiB
    # over the budget: not built
    k = 1024
    base = Measured(100 * k, [100] * 5, [10 * k] * 5)
    compacted = Measured(80 * k, [100 + (4 - i) * 10 for i in range(5)], [6 * k] * 5)
    probes: list[frozenset[int]] = []
    prefetched: list[Sequence[frozenset[int]]] = []

    def measure_prefix(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(100 * k - 4 * k * len(layers) - 1100, [0] * 5)

    budget = 92 * k + 400
    got = compact_prefix(base, compacted, budget, measure_prefix, prefetched.append)
    assert got == {4, 3}
    assert probes == [{4, 3}] and prefetched == []  # one build, no neighbour
    # the answer is the one the builds give: prefix 1 does not fit, prefix 2 does
    assert measure_prefix(frozenset({4})).flash_bytes > budget
    # a neighbour within the margin of the budget is built, as before
    probes.clear()
    near = 93 * k + 512  # prefix 1 now predicted within the margin over it
    got = compact_prefix(base, compacted, near, measure_prefix)
    assert got == {4, 3} and probes == [{4, 3}, {4}]
