"""Runtime layer skipping from the user's side: policy, simulation, CLI --skip / --plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.cli.main import main
from edgenn.errors import EdgennError
from edgenn.skipping import BudgetPolicy, ConfigProfile
from edgenn.skipping.simulate import compare_policies

ROOT = Path(__file__).resolve().parents[1]
RESNET = ROOT / "tests" / "fixtures" / "tflite" / "resnet_int8.tflite"


def _profile(skip: set[str], cycles: int, accuracy: float) -> ConfigProfile:
    return ConfigProfile(frozenset(skip), macs=cycles, peak_bytes=1000, cycles=cycles,
                         accuracy=accuracy)


PROFILES = [
    _profile(set(), 1000, 0.99),
    _profile({"block1"}, 800, 0.40),  # dominated by skipping block2: never chosen
    _profile({"block2"}, 500, 0.985),
    _profile({"block1", "block2"}, 100, 0.30),
]


def test_policy_picks_the_deepest_configuration_that_fits() -> None:
    policy = BudgetPolicy(PROFILES)
    assert policy.choose(1000).profile.skip == frozenset()
    assert policy.choose(999).profile.skip == frozenset({"block2"})
    assert policy.choose(499).profile.skip == frozenset({"block1", "block2"})
    miss = policy.choose(50)
    assert not miss.fits and miss.profile.cycles == 100
    assert frozenset({"block1"}) not in {p.skip for p in policy.allowed}


def test_policy_needs_measured_cycles() -> None:
    with pytest.raises(EdgennError, match="cycle"):
        BudgetPolicy([ConfigProfile(frozenset(), macs=1, peak_bytes=1)])


def test_simulation_keeps_deadlines_that_full_depth_misses() -> None:
    available = np.array([1200, 900, 600, 300, 150, 1100], dtype=float)
    adaptive, full, cheapest = compare_policies(PROFILES, available)
    assert adaptive.misses == 0 and full.misses == 4 and cheapest.misses == 0
    assert adaptive.mean_accuracy > max(full.mean_accuracy, cheapest.mean_accuracy)


def test_bench_skip_reports_that_configuration_and_a_cheap_switch(tmp_path: Path) -> None:
    reports = {}
    for skip in (None, "block2"):
        out = tmp_path / f"{skip}.json"
        argv = ["bench", str(RESNET), "--target", "cortex-m4", "--json", str(out)]
        assert main(argv + (["--skip", skip] if skip else [])) == 0
        reports[skip] = json.loads(out.read_text())
    assert reports["block2"]["extra"]["skip"] == ["block2"]
    assert reports["block2"]["total_cycles"] < 0.7 * reports[None]["total_cycles"]
    assert reports["block2"]["extra"]["switch_cycles"] == 6  # the figure docs/skipping.md states


def test_run_skip_on_cortex_m4_equals_the_reference(tmp_path: Path) -> None:
    from edgenn.datasets import dataset_split

    images, _ = dataset_split("mnist", "test")
    x = (images[:5].astype(np.int16) - 128).astype(np.int8)[..., None]
    np.save(tmp_path / "x.npy", x)
    outs = {}
    for target in ("ref", "cortex-m4"):
        out = tmp_path / f"{target}.npy"
        assert main(["run", str(RESNET), "--target", target, "--skip", "block1,block2",
                     "--input", str(tmp_path / "x.npy"), "--output", str(out)]) == 0
        outs[target] = np.load(out)
    assert np.array_equal(outs["ref"], outs["cortex-m4"])


def test_bench_plot_writes_the_pareto_png(tmp_path: Path) -> None:
    png, out = tmp_path / "pareto.png", tmp_path / "b.json"
    assert main(["bench", str(RESNET), "--target", "cortex-m4", "--pareto-plot", str(png),
                 "--json", str(out)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    configs = json.loads(out.read_text())["extra"]["configurations"]
    assert len(configs) == 4 and all(c["cycles"] and c["accuracy"] for c in configs)
