"""A verdict only from comparisons that ran: the TFLite Micro oracle sizes its arena from the
model (a small file with large activations, beyond the package's 10x-the-file default), and
`validate` never prints PASS when a comparison it was asked for did not run (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tflite_build import INT8, Op, T, add_options, build

from edgenn.api import compile_model
from edgenn.cli.main import main
from edgenn.errors import EdgennError
from edgenn.frontends.tflite import load_tflite
from edgenn.ir.sample import random_inputs

tflm = pytest.importorskip("edgenn.oracles.tflm")
pytest.importorskip("tflite_micro")


@pytest.fixture()
def wide(tmp_path: Path) -> Path:
    """int8 y = x + x over [1, 96, 96, 4]: a 400-byte file whose two 36 KiB activations need
    an arena of about 74 KB, more than 10x the file."""
    q = {"scale": [0.05], "zero_point": [0]}
    path = tmp_path / "wide.tflite"
    path.write_bytes(build([T("x", (1, 96, 96, 4), INT8, **q), T("y", (1, 96, 96, 4), INT8, **q)],
                           [Op(0, [0, 0], [1], add_options())], [0], [1]))
    return path


def test_the_oracle_runs_a_model_whose_arena_is_beyond_10x_its_file(wide: Path) -> None:
    data = wide.read_bytes()
    assert tflm.tflm_arena_bytes(data) > 10 * len(data)
    graph = load_tflite(data, name="wide")
    xs = random_inputs(graph, 2, seed=1)
    np.testing.assert_array_equal(tflm.tflm_run(data, *xs)[0],
                                  compile_model(graph, target="ref").run(*xs)[0])


def test_a_short_first_arena_is_doubled(wide: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tflm, "arena_guess", lambda data: 1024)
    sizes: list[int] = []
    real = tflm._runtime().Interpreter.from_bytes

    def counting(data: bytes, arena_size: int | None = None, **kw: Any) -> Any:
        sizes.append(int(arena_size or 0))
        return real(data, arena_size=arena_size, **kw)

    monkeypatch.setattr(tflm._runtime().Interpreter, "from_bytes", counting)
    (y,) = tflm.tflm_run(wide.read_bytes(), np.ones((1, 96, 96, 4), np.int8))
    assert y.shape == (1, 96, 96, 4)
    assert sizes[0] == 1024 and sizes == [1024 * 2**k for k in range(len(sizes))]
    assert sizes[-1] >= tflm.tflm_arena_bytes(wide.read_bytes())


def test_a_model_tflm_cannot_run_is_not_retried(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    data = build([T("x", (1, 4)), T("y", (1, 4))], [Op(32, [0], [1], custom_code="NoSuchOp")],
                 [0], [1])
    calls: list[int] = []
    real = tflm._runtime().Interpreter.from_bytes

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(tflm._runtime().Interpreter, "from_bytes", counting)
    with pytest.raises(EdgennError, match="TFLite Micro cannot load the model"):
        tflm.tflm_interpreter(data)
    assert len(calls) == 1


def test_validate_compares_with_tflm_on_such_a_model(wide: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["validate", str(wide), "--target", "ref", "--random", "2",
                 "--json", str(out)]) == 0
    assert "PASS" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["verdict"] == "pass"
    assert [c["against"] for c in report["comparisons"]] == ["tflm"]


def test_validate_never_passes_when_tflm_did_not_run(
        wide: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """TFLite Micro really fails to allocate (the arena capped below the model's need): the
    comparison with the reference runtime passes, yet the verdict is INCOMPLETE, exit 3,
    naming the comparison that did not run and why."""
    monkeypatch.setattr(tflm, "arena_guess", lambda data: 4096)
    monkeypatch.setattr(tflm, "ARENA_CAP_BYTES", 8192)
    out = tmp_path / "r.json"
    assert main(["validate", str(wide), "--target", "cortex-m4", "--random", "2",
                 "--json", str(out)]) == 3
    text = capsys.readouterr().out
    assert "PASS" not in text and "NOT RUN" in text
    assert "INCOMPLETE: no verdict (the comparisons that ran agree); TFLite Micro did not " \
           "run: TFLite Micro cannot load the model: TFLM failed to allocate tensors in an " \
           "arena of 8,192 bytes" in " ".join(text.split())
    report = json.loads(out.read_text())
    assert report["passed"] is False and report["verdict"] == "incomplete"
    assert [(c["against"], c["passed"]) for c in report["comparisons"]] == [("ref", True)]
    assert "allocate" in report["not_run"]["tflm"]


FLOAT16_CNN = Path(__file__).parent / "fixtures" / "float16" / "cnn_fp16.tflite"


def test_float16_weights_are_validated_against_litert(tmp_path: Path) -> None:
    """TFLite Micro cannot load float16 weights; LiteRT (TFLite's own kernels) is compared
    instead, and the report says why TFLite Micro was not."""
    pytest.importorskip("ai_edge_litert")
    out = tmp_path / "r.json"
    assert main(["validate", str(FLOAT16_CNN), "--target", "ref", "--random", "3",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["verdict"] == "pass"
    assert [c["against"] for c in report["comparisons"]] == ["litert"]
    assert "float16" in report["not_compared"]["tflm"]


def test_float16_weights_without_litert_are_incomplete(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgenn.oracles import litert
    from edgenn.oracles.tflm import OracleUnavailableError

    def missing(model_bytes: bytes) -> Any:
        raise OracleUnavailableError("LiteRT is not installed: pip install ai-edge-litert")

    monkeypatch.setattr(litert, "litert_interpreter", missing)
    out = tmp_path / "r.json"
    assert main(["validate", str(FLOAT16_CNN), "--target", "ref", "--random", "2",
                 "--json", str(out)]) == 3
    report = json.loads(out.read_text())
    assert report["verdict"] == "incomplete" and "not installed" in report["not_run"]["litert"]
