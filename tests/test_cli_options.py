"""Options spelled one way across commands: ``--json PATH`` with ``-`` for stdout, ``-o`` for
the file a command writes, ``--out-dir`` for a folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"


def test_json_dash_is_stdout_for_inspect_and_validate(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["inspect", str(CONV2), "--json", "-"]) == 0
    bare = capsys.readouterr().out
    assert main(["inspect", str(CONV2), "--json"]) == 0  # the historical bare flag
    assert json.loads(bare) == json.loads(capsys.readouterr().out)
    assert main(["validate", str(CONV2), "--target", "ref", "--random", "2", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)  # stdout holds the JSON only
    assert report["samples"] == 2


def test_json_path_is_written(tmp_path: Path) -> None:
    out = tmp_path / "i.json"
    assert main(["inspect", str(CONV2), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["layers"]


def test_run_takes_dash_o(tmp_path: Path) -> None:
    x = np.zeros((1, 28, 28, 1), np.int8)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(CONV2), "--input", str(tmp_path / "x.npy"),
                 "-o", str(tmp_path / "y.npy")]) == 0
    assert np.load(tmp_path / "y.npy").shape[0] == 1
