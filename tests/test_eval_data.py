"""`edgenn eval MODEL --data F.npz`: any classifier on arrays x / y; the same figure as
`--dataset mnist` on the same digits, per-class accuracy checked with TFLite Micro."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import load_model
from edgenn.cli.main import main
from edgenn.data.mnist import mnist_split
from edgenn.quantize import quantize_input

ROOT = Path(__file__).resolve().parents[1]
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"
N = 60


def _npz(path: Path, n: int = N, one_hot: bool = False, labels: bool = True) -> Path:
    """The first ``n`` house MNIST test digits as float pixels in [0, 1], [N, 28, 28, 1]."""
    images, y = mnist_split("test")
    x = (images[:n].astype(np.float32) / np.float32(255.0)).reshape(n, 28, 28, 1)
    arrays: dict[str, np.ndarray] = {"x": x}
    if labels:
        arrays["y"] = np.eye(10, dtype=np.float32)[y[:n]] if one_hot else y[:n]
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


def _eval(argv: list[str], out: Path) -> dict:  # type: ignore[type-arg]
    assert main(["eval", str(CONV2), *argv, "--json", str(out)]) == 0
    return dict(json.loads(out.read_text()))


def test_data_equals_dataset_mnist(tmp_path: Path) -> None:
    by_data = _eval(["--data", str(_npz(tmp_path / "d.npz"))], tmp_path / "a.json")
    by_name = _eval(["--dataset", "mnist", "--limit", str(N)], tmp_path / "b.json")
    assert by_data["samples"] == by_name["samples"] == N
    assert by_data["accuracy"] == by_name["accuracy"]
    assert by_data["per_class_accuracy"] == by_name["per_class_accuracy"]
    assert by_data["data"].endswith("d.npz") and by_name["dataset"] == "mnist"


def test_per_class_accuracy_matches_tflm(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro")
    from edgenn.oracles.tflm import tflm_run

    data = _npz(tmp_path / "d.npz")
    result = _eval(["--data", str(data)], tmp_path / "r.json")
    with np.load(data) as z:
        x, y = z["x"], z["y"]
    pred = np.argmax(tflm_run(CONV2.read_bytes(), quantize_input(load_model(CONV2), x))[0],
                     axis=1)
    want = {str(c): float(np.mean(pred[y == c] == c)) for c in np.unique(y)}
    assert result["per_class_accuracy"] == pytest.approx(want)
    assert result["accuracy"] == pytest.approx(float(np.mean(pred == y)))


def test_one_hot_labels_equal_integer_labels(tmp_path: Path) -> None:
    a = _eval(["--data", str(_npz(tmp_path / "i.npz", 20))], tmp_path / "a.json")
    b = _eval(["--data", str(_npz(tmp_path / "o.npz", 20, one_hot=True))], tmp_path / "b.json")
    assert a["accuracy"] == b["accuracy"]


def test_data_and_dataset_are_exclusive(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(CONV2), "--dataset", "mnist", "--data", str(tmp_path / "d.npz")])
    assert exc.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["no_y", "missing", "split"])
def test_bad_data_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                              case: str) -> None:
    path = tmp_path / "d.npz"
    argv = ["eval", str(CONV2), "--data", str(path)]
    if case == "no_y":
        _npz(path, 5, labels=False)
    elif case == "split":
        _npz(path, 5)
        argv += ["--split", "train"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert {"no_y": "'y'", "missing": "no such file", "split": "--split"}[case] in err
