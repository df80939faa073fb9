"""benchmarks/model_zoo.py's machinery on two tiny models (the full zoo run is not a test):
a model that runs is compared with TFLite Micro, a broken one is recorded as its first error
line, never a traceback, and the next model still runs."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _zoo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("model_zoo", ROOT / "benchmarks" / "model_zoo.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_folder_runs_and_a_broken_model_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro")
    models = tmp_path / "models" / "sub"
    models.mkdir(parents=True)
    shutil.copy(ROOT / "zoo" / "tflm_examples" / "hello_world_int8.tflite", models)
    good = (ROOT / "zoo" / "tflm_examples" / "hello_world_float.tflite").read_bytes()
    (models / "broken.tflite").write_bytes(good[: len(good) // 3])  # truncated: no model
    out = tmp_path / "zoo.json"
    zoo = _zoo()
    assert zoo.main([str(tmp_path / "models"), "--stages", "inspect,ref", "--json", str(out),
                     "--timeout", "120"]) == 0
    doc = json.loads(out.read_text())
    rows = {m["model"]: m for m in doc["models"]}
    assert sorted(rows) == ["sub/broken.tflite", "sub/hello_world_int8.tflite"]
    ref = rows["sub/hello_world_int8.tflite"]["stages"]["ref"]
    assert ref["ok"] and ref["mismatches"] == 0 and ref["oracle"] == "tflite-micro"
    assert ref["values"] == zoo.SAMPLES  # one output value a sample
    for stage, record in rows["sub/broken.tflite"]["stages"].items():
        assert not record["ok"], stage
        error = record["error"]
        assert error and "\n" not in error and "Traceback" not in error, error
        assert "sub/broken.tflite" in error and str(tmp_path) not in error, error


def test_first_error_line_of_a_cli_error_and_of_a_traceback() -> None:
    zoo = _zoo()
    assert zoo.first_error_line("edgenn run: error: m.tflite: node 'x': bad\n") == \
        "m.tflite: node 'x': bad"
    trace = 'Traceback (most recent call last):\n  File "a.py", line 1\nKeyError: \'k\'\n'
    assert zoo.first_error_line(trace) == "traceback: KeyError: 'k'"


def test_compare_counts_integer_mismatches_and_float_relative_error() -> None:
    zoo = _zoo()
    want = [np.array([[1, 2, 3]], np.int8)]
    assert zoo.compare([np.array([[1, 2, 3]], np.int8)], want) == \
        {"values": 3, "ok": True, "mismatches": 0}
    bad = zoo.compare([np.array([[1, 0, 4]], np.int8)], want)
    assert bad["mismatches"] == 2 and not bad["ok"]
    w = [np.array([[2.0, -4.0]], np.float32)]
    assert zoo.compare([np.array([[2.0, -4.0]], np.float32)], w)["ok"]
    off = zoo.compare([np.array([[2.0, -4.001]], np.float32)], w)
    assert not off["ok"] and off["max_rel_error"] == pytest.approx(0.001 / 4, rel=1e-3)
    with pytest.raises(ValueError, match="shape"):
        zoo.compare([np.zeros((1, 3), np.float32)], w)


def test_sources_list_every_zoo_file_with_its_hash() -> None:
    spec = importlib.util.spec_from_file_location("sources", ROOT / "zoo" / "make" / "sources.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (ROOT / "zoo" / "SOURCES.md").read_text() == mod.render(), \
        "zoo/SOURCES.md is stale: run zoo/make/sources.py"


def test_validate_passes_only_when_every_asked_comparison_ran() -> None:
    """A PASS whose TFLite Micro comparison did not run is recorded as a failure, with the
    reason as its error line."""
    import subprocess

    zoo = _zoo()
    ok = subprocess.CompletedProcess([], 0, "PASS: cortex-m4 meets the contract\n", "")
    ran = {"passed": True, "comparisons": [{"output": "y"}], "not_compared": {}}
    assert zoo._validate_record(ok, ran)["ok"]
    skipped = {**ran, "not_compared": {"tflm": "TFLite Micro cannot load the model"}}
    record = zoo._validate_record(ok, skipped)
    assert not record["ok"] and record["error"] == \
        "tflm not compared: TFLite Micro cannot load the model"
    failed = subprocess.CompletedProcess([], 1, "FAIL: cortex-m4 disagrees: y vs tflm\n", "")
    assert zoo._validate_record(failed, {**ran, "passed": False})["error"] == \
        "FAIL: cortex-m4 disagrees: y vs tflm"
    incomplete = subprocess.CompletedProcess([], 3, "INCOMPLETE: no verdict (ref ran); tflm\n", "")
    record = zoo._validate_record(incomplete, {**ran, "passed": False, "verdict": "incomplete",
                                               "not_run": {"tflm": "cannot load"}})
    assert not record["ok"] and record["error"].startswith("INCOMPLETE")
    noted = {**ran, "verdict": "pass", "not_compared": {"litert": "not installed"}}
    assert zoo._validate_record(ok, noted)["ok"]  # a note beside a complete verdict


def test_a_model_too_big_for_the_part_runs_on_the_part_its_error_names() -> None:
    """The fit error's flags are re-run by the zoo: they must be enough, and exact."""
    pytest.importorskip("tflite_micro")
    zoo = _zoo()
    model = ROOT / "zoo" / "tflm_examples" / "hello_world_int8.tflite"
    with pytest.raises(Exception) as info:
        zoo.run_stage(model, zoo.CORE, {"flash_kb": 1})
    part = zoo.larger_part(str(info.value))
    assert set(part) == {"flash_kb"} and part["flash_kb"] > 1, str(info.value)
    result = zoo.run_stage(model, zoo.CORE, part)
    assert result["ok"] and result["mismatches"] == 0
    assert result["flash_bytes"] <= part["flash_kb"] * 1024
    assert zoo.larger_part("node 'x': unsupported operator 'Foo'") == {}


def test_float64_arbiter_judges_edgenn_against_the_exact_graph(tmp_path: Path) -> None:
    """onnxruntime's CPU Sigmoid is a rational approximation (absolute error near 1e-7): on
    small probabilities it is itself more than 1e-5 relative off. The arbiter measures both
    sides against the graph evaluated in float64; a wrong edgenn output still fails."""
    import onnx
    from onnx import TensorProto, helper

    from edgenn.api import compile_model, load_model

    zoo = _zoo()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])
    shift = helper.make_tensor("shift", TensorProto.FLOAT, [1], [-9.0])
    graph = helper.make_graph([helper.make_node("Add", ["x", "shift"], ["z"]),
                               helper.make_node("Sigmoid", ["z"], ["y"])],
                              "small_probabilities", [x], [y], [shift])
    path = tmp_path / "sigmoid.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    oracle = zoo.Oracle(path, {})
    xs = zoo.make_inputs(oracle, 4)
    want = zoo.oracle_outputs(oracle, xs, stateful=False)
    got = list(compile_model(load_model(path), "ref").run(*xs))
    verdict = zoo.float64_arbiter(oracle, xs, got, want, stateful=False)
    assert verdict["ok"] and verdict["float64"]["edgenn_rel"] < 1e-6, verdict
    wrong = [got[0] * (1 + 1e-4)]
    assert not zoo.float64_arbiter(oracle, xs, wrong, want, stateful=False)["ok"]
