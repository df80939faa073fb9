"""The main job end to end, and the Python API that mirrors the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import edgenn
from edgenn.cli.main import main
from edgenn.datasets import dataset_split
from edgenn.evaluate import images_to_input
from edgenn.models import shipped_model_path


def test_demo_reports_zero_tflm_mismatches_and_small_accuracy_loss(tmp_path: Path) -> None:
    assert main(["demo", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tflm_mismatches"] == 0 and report["outputs_compared"] == 20000
    assert report["float_accuracy"] >= 0.98
    assert abs(report["int8_accuracy"] - report["float_accuracy"]) <= 0.005
    assert report["onnxruntime_max_rel_error"] < 1e-4
    assert 0 < report["arena_bytes_edgenn"] <= report["arena_bytes_tflm"]
    assert (tmp_path / "mnist_cnn_int8.tflite").read_bytes()[4:8] == b"TFL3"
    m4 = report["cortex_m4"]
    assert m4["mismatches"] == 0 and "zero wait states" in m4["cycle_model"]
    fused = m4["fused_model_a"]  # a real Conv2D chain, fused, against the reference runtime
    assert fused["fused_chains"] and fused["mismatches"] == 0 and fused["images"] == 50


def test_python_api_load_quantize_compile_run_plan() -> None:
    from edgenn.oracles.tflm import tflm_run

    graph = edgenn.load_model(shipped_model_path("mnist_cnn"))
    train, _ = dataset_split("mnist", "train")
    test, labels = dataset_split("mnist", "test")
    qgraph = edgenn.quantize_model(graph, images_to_input(graph, train[:200]), method="percentile")
    exe = edgenn.compile_model(qgraph, target="ref")
    x = images_to_input(qgraph, test[:300])
    (y,) = exe.run(x)
    assert y.dtype == np.int8 and y.shape == (300, 10)
    assert np.mean(np.argmax(y, axis=1) == labels[:300]) > 0.95
    from edgenn.export import export_tflite

    assert np.array_equal(tflm_run(export_tflite(qgraph), x)[0].reshape(y.shape), y)
    plan = exe.memory_plan()
    assert plan.peak_bytes <= exe.memory_plan("linear").peak_bytes


def test_every_target_rejects_unknown_options() -> None:
    """Backends register a typed options dataclass; an option a target does not take is an
    error naming the target and the options it takes, for every target (``ref`` included)."""
    from edgenn.backends.targets import backend_names, get_backend
    from edgenn.errors import EdgennError as Error

    graph = edgenn.load_model(Path(__file__).parent / "fixtures" / "tflite" / "conv2_int8.tflite")
    for name in backend_names():
        with pytest.raises(Error, match=f"unknown option.*target {name}.*no_such_option"):
            edgenn.compile_model(graph, target=name, no_such_option=1)
    assert get_backend("ref").option_names() == ()
    assert "board" in get_backend("cortex-m4").option_names()
