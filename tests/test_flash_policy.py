"""The flash policy: int8 weights by default, int16 pre-widened kernels only where measured
faster and within the flash budget (edgenn/backends/cortexm/flash_policy.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.flash_policy import (
    DEFAULT_HEADROOM_BYTES,
    FlashPlan,
    Measured,
    choose_widened,
    compact_prefix,
    int8_parameter_bytes,
    plan_widening,
)
from edgenn.backends.cortexm.kernel import uses_widened_weights
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.frontends.tflite import load_tflite

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"
M4 = get_core("cortex-m4")


def test_choose_widened_takes_best_ratio_first_within_budget() -> None:
    base = Measured(10_000, [100, 1000, 1000, 500], [0, 400, 300, 100])
    wide = Measured(11_000, [100, 600, 900, 600], [0, 800, 600, 200])
    # layer 1 saves 400 cycles for 400 bytes (1.0/B), layer 2 100 for 300 (0.33/B),
    # layer 3 is slower widened: never chosen
    assert choose_widened(base, wide, [1, 2, 3], budget_bytes=10_400) == {1}
    assert choose_widened(base, wide, [1, 2, 3], budget_bytes=10_700) == {1, 2}
    assert choose_widened(base, wide, [1, 2, 3], budget_bytes=10_399) == {2}
    assert choose_widened(base, wide, [1, 2, 3], budget_bytes=10_299) == set()


def test_int8_parameter_bytes_counts_each_constant_once() -> None:
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    want = sum(g.tensor(n).nbytes for n in {i for node in g.nodes for i in node.inputs
                                            if i and g.tensor(i).is_const})
    assert int8_parameter_bytes(g) == want > 0


def test_default_selection_never_uses_widened_weights() -> None:
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    for node in g.nodes:
        assert not uses_widened_weights(select_kernel(node, g, M4))


def test_plan_widening_modes_and_budget() -> None:
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    n = len(g.nodes)
    calls: list[frozenset[int]] = []

    def measure(widened: frozenset[int], compact: frozenset[int]) -> Measured:
        calls.append(widened)
        cycles = [100 if i in widened else 200 for i in range(n)]
        return Measured(1000 + 50 * len(widened), cycles,
                        [100 if i in widened else 50 for i in range(n)])

    assert plan_widening(g, M4, measure, None, "none") == FlashPlan() and not calls
    everything = plan_widening(g, M4, measure, None, "all").widened
    assert everything and not calls
    assert plan_widening(g, M4, measure, 1000, "auto") == FlashPlan()  # no room at all
    everyone = frozenset(range(n))
    assert plan_widening(g, M4, measure, 999, "auto") == FlashPlan(compact=everyone)  # over
    assert plan_widening(g, M4, measure, 1000 + 50 * len(everything), "auto") == \
        FlashPlan(everything)
    with pytest.raises(ValueError, match="widen mode"):
        plan_widening(g, M4, measure, None, "sometimes")


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_build_respects_budget_and_stays_exact() -> None:
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.backends.ref import compile_ref

    g = load_tflite((FIXTURES / "model_c_int8.tflite").read_bytes(), "c")
    narrow = compile_cortexm(g, "cortex-m4", widen="none")
    tight = compile_cortexm(g, "cortex-m4", flash_kb=narrow.sizes()["flash"] / 1024)
    assert tight.manifest["widened_layers"] == []
    auto = compile_cortexm(g, "cortex-m4")
    assert auto.sizes()["flash"] <= int8_parameter_bytes(g) + DEFAULT_HEADROOM_BYTES
    x = np.random.default_rng(3).integers(-128, 128, size=(2, 28, 28, 1), dtype=np.int8)
    want = compile_ref(g).run(x)[0]
    for exe in (narrow, tight, auto):
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
    base = Measured(1500, [100] * 5, [0] * 5)
    compacted = Measured(1000, [100 + (4 - i) * 10 for i in range(5)], [0] * 5)
    probes: list[frozenset[int]] = []

    def measure_prefix(layers: frozenset[int]) -> Measured:
        probes.append(layers)
        return Measured(1500 - 100 * len(layers), [0] * 5, [0] * 5)

    assert compact_prefix(base, compacted, 1300, measure_prefix) == {4, 3}
    assert len(probes) <= 3  # bisection, not one build per prefix
    assert compact_prefix(base, compacted, 1000, measure_prefix) == {0, 1, 2, 3, 4}


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
