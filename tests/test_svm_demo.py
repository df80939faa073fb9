"""``edgenn svm-demo``: the device learns the digit classes its factory head never saw."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from edgenn.cli.main import main

needs_arm_gcc = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                                   reason="arm-none-eabi-gcc not installed")


@needs_arm_gcc
def test_svm_demo_learns_new_classes_on_the_emulated_device(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert main(["svm-demo", "--steps", "2", "--capacity", "60", "--device-test", "100",
                 "--out-dir", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    before, after = report["steps"][0], report["steps"][-1]
    assert report["known"] == [0, 1, 2, 3, 4] and report["new"] == [5, 6, 7, 8, 9]
    assert before["accuracy_new"] == 0.0  # the factory head cannot name a class it never saw
    assert before["accuracy_known"] > 0.95
    assert after["accuracy_new"] > 0.85 and after["accuracy"] > 0.85
    assert all(s["train_cycles"] > 0 for s in report["steps"][1:])
    assert report["device_agreement"] == 1.0  # the firmware votes as the reference layer
    assert (out / "accuracy.png").stat().st_size > 10_000


def test_svm_demo_bad_known_classes_is_one_line(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    assert main(["svm-demo", "--known", "0,x", "--no-device", "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--known" in err[0]
    assert main(["svm-demo", "--known", "0,11", "--no-device", "--out-dir", str(tmp_path)]) == 2
    assert "known classes" in capsys.readouterr().err
