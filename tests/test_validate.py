"""`edgenn validate`: a target's outputs against the reference runtime and TFLite Micro, the
metrics, a tampered target caught, and one-line errors on bad data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgenn.api import compile_model, load_model
from edgenn.cli import validate_cmd
from edgenn.cli.main import main
from edgenn.data.mnist import mnist_split
from edgenn.ir.sample import random_inputs
from edgenn.quantize import quantize_input
from edgenn.validate import FLOAT_TOLERANCE, compare_output, validate
from tests.cli_errors import error_line as _error_line

ROOT = Path(__file__).resolve().parents[1]
AD = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "ad01_int8.tflite"
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"
CNN = ROOT / "edgenn" / "models" / "mnist_cnn.onnx"


def _mnist_npz(path: Path, n: int, with_labels: bool = True) -> Path:
    """The first ``n`` house MNIST test digits as float pixels in [0, 1], [N, 28, 28, 1]."""
    images, labels = mnist_split("test")
    x = (images[:n].astype(np.float32) / np.float32(255.0)).reshape(n, 28, 28, 1)
    arrays = {"x": x, **({"y": labels[:n]} if with_labels else {})}
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


# ------------------------------------------------------------------------------ real target
def test_ad_model_on_cortex_m4_is_bit_exact_with_ref_and_tflm(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro")
    if not AD.exists():
        pytest.skip("MLPerf Tiny models not found")
    out = tmp_path / "report.json"
    assert main(["validate", str(AD), "--target", "cortex-m4", "--random", "2",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["passed"] is True and report["samples"] == 2
    assert sorted(c["against"] for c in report["comparisons"]) == ["ref", "tflm"]
    for c in report["comparisons"]:
        assert c["exact_match"] == 1.0 and c["max_abs_diff_raw"] == 0.0
        assert c["elements"] == 2 * 640 and c["top1_agreement"] == 1.0


# ------------------------------------------------------------------------------ tampering
class _Tampered:
    """A 'target' that is the reference runtime with one output element moved by one step."""

    def __init__(self, graph: Any) -> None:
        self.exe = compile_model(graph, target="ref")

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        ys = [y.copy() for y in self.exe.run(*xs)]
        flat = ys[0].reshape(-1)
        flat[0] = flat[0] + 1 if flat[0] < np.iinfo(flat.dtype).max else flat[0] - 1
        return ys


def test_compare_output_counts_one_perturbed_element() -> None:
    graph = load_model(CONV2)
    want = compile_model(graph, target="ref").run(*random_inputs(graph, 3, seed=1))[0]
    got = want.copy()
    got[1, 4] = got[1, 4] + 1 if got[1, 4] < 127 else got[1, 4] - 1
    c = compare_output(graph, 0, got, want, "ref")
    q = graph.tensor(graph.outputs[0]).quant
    assert c.passed is False and c.elements == want.size
    assert c.exact_match == pytest.approx(1 - 1 / want.size)
    assert c.max_abs_diff_raw == 1.0
    assert c.max_abs_diff == pytest.approx(q.s)
    assert compare_output(graph, 0, want, want, "ref").passed is True


def test_validate_detects_a_tampered_target() -> None:
    graph = load_model(CONV2)
    xs = random_inputs(graph, 2)
    ref = compile_model(graph, target="ref")
    report = validate(graph, _Tampered(graph).run, ref.run, xs, target="tampered")
    assert not report.passed
    assert [c.exact_match < 1.0 for c in report.comparisons if c.against == "ref"] == [True]


def test_cli_exits_1_on_a_tampered_target(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    real = validate_cmd.compile_model

    def fake(graph: Any, target: str = "ref", **options: Any) -> Any:
        return real(graph, target="ref") if target == "ref" else _Tampered(graph)

    monkeypatch.setattr(validate_cmd, "compile_model", fake)
    out = tmp_path / "r.json"
    assert main(["validate", str(CONV2), "--target", "cortex-m4", "--random", "2",
                 "--json", str(out)]) == 1
    assert "FAIL" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["passed"] is False
    assert any(not c["passed"] for c in report["comparisons"] if c["against"] == "ref")


# ------------------------------------------------------------------------------ TFLM absent
def test_missing_tflm_is_said_not_passed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A comparison asked for that did not run: no PASS, exit 3; --no-tflm does not ask."""
    from edgenn.oracles import tflm

    def absent() -> Any:
        raise tflm.OracleUnavailableError("TFLite Micro is not installed")

    monkeypatch.setattr(tflm, "_runtime", absent)
    out = tmp_path / "r.json"
    assert main(["validate", str(CONV2), "--target", "vta", "--random", "2",
                 "--json", str(out)]) == 3
    text = capsys.readouterr().out
    assert "not installed" in text and "PASS" not in text
    assert "INCOMPLETE" in text and "TFLite Micro did not run" in text
    report = json.loads(out.read_text())
    assert [c["against"] for c in report["comparisons"]] == ["ref"]
    assert report["passed"] is False and report["verdict"] == "incomplete"
    assert "not installed" in report["not_run"]["tflm"]
    assert main(["validate", str(CONV2), "--target", "vta", "--random", "2", "--no-tflm",
                 "--json", str(out)]) == 0
    assert "PASS" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["verdict"] == "pass" and report["not_run"] == {}
    assert "--no-tflm" in report["not_compared"]["tflm"]


# ------------------------------------------------------------------------------ data + labels
def test_float_data_is_quantized_and_scored(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro")
    from edgenn.oracles.tflm import tflm_run

    data = _mnist_npz(tmp_path / "d.npz", 12)
    out = tmp_path / "r.json"
    assert main(["validate", str(CONV2), "--target", "ref", "--data", str(data),
                 "--limit", "10", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["samples"] == 10 and "ref" in report["not_compared"]
    assert [(c["against"], c["exact_match"]) for c in report["comparisons"]] == [("tflm", 1.0)]
    # the labels' accuracy, recomputed from TFLM on inputs quantized by edgenn.quantize
    graph = load_model(CONV2)
    with np.load(data) as z:
        x, y = z["x"][:10], z["y"][:10]
    pred = np.argmax(tflm_run(CONV2.read_bytes(), quantize_input(graph, x))[0], axis=1)
    assert report["accuracy"]["tflm"] == report["accuracy"]["target"] == float(np.mean(pred == y))


def test_float_tolerance() -> None:
    graph = load_model(CNN)
    want = np.linspace(-3, 5, 20, dtype=np.float32).reshape(2, 10)
    near = want + np.float32(0.5 * FLOAT_TOLERANCE * 5)
    far = want + np.float32(3 * FLOAT_TOLERANCE * 5)
    assert compare_output(graph, 0, near, want, "ref").passed
    assert not compare_output(graph, 0, far, want, "ref").passed
    assert compare_output(graph, 0, near, want, "ref").exact_match == 0.0


# ------------------------------------------------------------------------------ errors
def test_missing_data_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = _error_line(capsys, ["validate", str(CONV2), "--target", "ref",
                               "--data", str(tmp_path / "none.npz")])
    assert "none.npz" in err


def test_npz_without_x(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    np.savez(tmp_path / "bad.npz", inputs=np.zeros((2, 28, 28, 1), np.float32))
    err = _error_line(capsys, ["validate", str(CONV2), "--target", "ref",
                               "--data", str(tmp_path / "bad.npz")])
    assert "bad.npz" in err and "'x'" in err


def test_wrong_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    np.savez(tmp_path / "s.npz", x=np.zeros((2, 28, 28), np.float32))
    err = _error_line(capsys, ["validate", str(CONV2), "--target", "ref",
                               "--data", str(tmp_path / "s.npz")])
    assert "[2, 28, 28]" in err and "[N, 28, 28, 1]" in err


def test_wrong_dtype(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    np.savez(tmp_path / "u.npz", x=np.zeros((2, 28, 28, 1), np.uint8))
    err = _error_line(capsys, ["validate", str(CONV2), "--target", "ref",
                               "--data", str(tmp_path / "u.npz")])
    assert "uint8" in err and "int8" in err


def test_bad_random_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--random 0" in _error_line(capsys, ["validate", str(CONV2), "--target", "ref",
                                                "--random", "0"])


def test_missing_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "nope.tflite" in _error_line(capsys, ["validate", str(tmp_path / "nope.tflite"),
                                                 "--target", "ref"])


def test_empty_data(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    np.savez(tmp_path / "e.npz", x=np.zeros((0, 28, 28, 1), np.float32))
    assert "no samples" in _error_line(capsys, ["validate", str(CONV2), "--target", "ref",
                                                "--data", str(tmp_path / "e.npz")])


@pytest.mark.parametrize("names", [("a", "b"), ("x0", "x1")])
def test_two_input_float_model_against_tflm(tmp_path: Path, names: tuple[str, str]) -> None:
    """Inputs named after the model's inputs or x0, x1 (float: within the tolerance)."""
    pytest.importorskip("tflite_micro")
    from tflite_build import Op, T, build

    model = tmp_path / "two.tflite"  # s = a + b, p = a * b (ADD = 0, MUL = 18)
    model.write_bytes(build([T("a", (1, 5)), T("b", (1, 5)), T("s", (1, 5)), T("p", (1, 5))],
                            [Op(0, [0, 1], [2]), Op(18, [0, 1], [3])], [0, 1], [2, 3]))
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", **{n: rng.standard_normal((3, 5)) for n in names})
    out = tmp_path / "r.json"
    assert main(["validate", str(model), "--target", "ref", "--data", str(tmp_path / "d.npz"),
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [(c["output"], c["against"]) for c in report["comparisons"]] == \
        [("s", "tflm"), ("p", "tflm")]
    assert all(c["passed"] and c["cosine"] > 0.999999 for c in report["comparisons"])
