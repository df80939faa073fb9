"""The flash policy's trial builds are measured once per content: a second compile of the same
model reads the figures, builds the same firmware, and anything that changes the project,
the inputs or the cycle model misses the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import edgenn
from edgenn.backends.cortexm import trial_cache

FIXTURE = Path(__file__).parent / "fixtures" / "tflite" / "conv2_int8.tflite"
pytestmark = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                                reason="needs arm-none-eabi-gcc")


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    import edgenn.backends.cortexm.executable as executable

    builds: list[bool] = []
    real = executable.build_project

    def counting(project, *args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(bool(kwargs.get("archive", True)))
        return real(project, *args, **kwargs)

    monkeypatch.setattr(executable, "build_project", counting)
    return builds


def test_a_second_compile_reads_the_trials_and_builds_the_same_firmware(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(trial_cache.ENV, str(tmp_path / "cache"))
    builds = _count_builds(monkeypatch)
    graph = edgenn.load_model(FIXTURE)
    fast = edgenn.compile_model(graph, target="cortex-m4", compact=False).sizes()["flash"]
    compact = edgenn.compile_model(graph, target="cortex-m4", compact=True).sizes()["flash"]
    assert compact < fast
    # a budget the fast build exceeds: the flash policy measures trials to compact part of it
    budget_kb = (fast + compact) / 2 / 1024
    builds.clear()
    first = edgenn.compile_model(graph, target="cortex-m4", out_dir=tmp_path / "a",
                                 flash_budget_kb=budget_kb)
    first_builds = len(builds)
    assert first_builds >= 3  # the fast build in place, its trials, the final build
    assert first.manifest["compact_layers"]
    entries = list((tmp_path / "cache").glob("*.json"))
    assert entries, "the trials were not recorded"
    second = edgenn.compile_model(graph, target="cortex-m4", out_dir=tmp_path / "b",
                                  flash_budget_kb=budget_kb)
    assert len(builds) - first_builds == 1  # the final build only
    assert (tmp_path / "a" / "build" / "model.elf").read_bytes() == \
        (tmp_path / "b" / "build" / "model.elf").read_bytes()
    x = np.random.default_rng(1).integers(-128, 128, size=(2, 28, 28, 1), dtype=np.int8)
    assert np.array_equal(first.run(x)[0], second.run(x)[0])
    assert first.bench(x).total_cycles == second.bench(x).total_cycles


def test_the_key_changes_with_the_project_and_the_inputs(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "build").mkdir(parents=True)
    (project / "model.c").write_text("int x;\n")
    (project / "build" / "model.o").write_bytes(b"\0")
    cc = shutil.which("arm-none-eabi-gcc")
    assert cc is not None
    x = [np.zeros((1, 4), np.int8)]
    key = trial_cache.trial_key(project, cc, x)
    (project / "build" / "model.o").write_bytes(b"\1")  # build products do not count
    assert trial_cache.trial_key(project, cc, x) == key
    assert trial_cache.trial_key(project, cc, [np.ones((1, 4), np.int8)]) != key
    (project / "model.h").write_text("#define N 1\n")
    assert trial_cache.trial_key(project, cc, x) != key


def test_off_and_unreadable_entries_are_misses(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(trial_cache.ENV, "off")
    trial_cache.store("k", 10, [1, 2])
    assert trial_cache.load("k") is None
    monkeypatch.setenv(trial_cache.ENV, str(tmp_path))
    (tmp_path / "bad.json").write_text("{not json")
    assert trial_cache.load("bad") is None
    trial_cache.store("k", 10, None)
    assert trial_cache.load("k") == {"flash_bytes": 10, "layer_cycles": None}
