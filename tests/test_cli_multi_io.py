"""`edgenn run` with several inputs and outputs: one --input / --output per tensor in the
model's order, or one .npz named after the tensors; wrong counts are one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_build import Op, T, build

from edgenn.cli.main import main


@pytest.fixture()
def two_in_two_out(tmp_path: Path) -> Path:
    """Float model: s = a + b, p = a * b (ADD = 0, MUL = 18)."""
    data = build([T("a", (1, 5)), T("b", (1, 5)), T("s", (1, 5)), T("p", (1, 5))],
                 [Op(0, [0, 1], [2]), Op(18, [0, 1], [3])], [0, 1], [2, 3])
    path = tmp_path / "two.tflite"
    path.write_bytes(data)
    return path


def _xs(tmp_path: Path) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.savez(tmp_path / "ab.npz", a=a, b=b)
    return a, b


def test_one_file_per_input_and_output(two_in_two_out: Path, tmp_path: Path) -> None:
    a, b = _xs(tmp_path)
    assert main(["run", str(two_in_two_out), "--input", str(tmp_path / "a.npy"),
                 "--input", str(tmp_path / "b.npy"), "--output", str(tmp_path / "s.npy"),
                 "--output", str(tmp_path / "p.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "s.npy"), a + b, rtol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), a * b, rtol=1e-6)


def test_npz_in_and_out(two_in_two_out: Path, tmp_path: Path) -> None:
    a, b = _xs(tmp_path)
    assert main(["run", str(two_in_two_out), "--input", str(tmp_path / "ab.npz"),
                 "--output", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["p", "s"]
        np.testing.assert_allclose(z["s"], a + b, rtol=1e-6)
        np.testing.assert_allclose(z["p"], a * b, rtol=1e-6)


@pytest.mark.parametrize("argv,expect", [
    (["--input", "a.npy", "--output", "s.npy", "--output", "p.npy"],
     "1 --input given; the model takes 2 input(s) ['a', 'b']"),
    (["--input", "a.npy", "--input", "b.npy", "--output", "s.npy"],
     "1 --output given; the model has 2 output(s) ['s', 'p']"),
])
def test_wrong_counts_are_one_line_errors(two_in_two_out: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          argv: list[str], expect: str) -> None:
    _xs(tmp_path)
    args = [str(tmp_path / v) if v.endswith(".npy") else v for v in argv]
    assert main(["run", str(two_in_two_out), *args]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], err
    assert not (tmp_path / "s.npy").exists()


def test_npz_with_wrong_names(two_in_two_out: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "bad.npz", a=np.zeros((1, 5), np.float32), c=np.zeros((1, 5), np.float32))
    assert main(["run", str(two_in_two_out), "--input", str(tmp_path / "bad.npz"),
                 "--output", str(tmp_path / "o.npz")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing ['b']" in err[0] and "unknown ['c']" in err[0], err
