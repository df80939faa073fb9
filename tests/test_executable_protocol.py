"""Every registered target returns an ``Executable`` whose ``bench`` gives the one schema."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import compile_model, load_model
from edgenn.backends.bench_report import SCHEMA, BenchReport, BenchSettings
from edgenn.backends.executable import Executable
from edgenn.backends.targets import backend_names
from edgenn.cli.main import main
from edgenn.evaluate import bench_inputs
from edgenn.models import shipped_model_path

ROOT = Path(__file__).resolve().parents[1]
INT8 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"
COMMON = {"schema", "model", "target", "title", "time_basis", "total_ms", "total_cycles",
          "total_instructions", "total_macs", "arena_bytes", "flash_bytes", "ram_bytes",
          "stack_bytes", "notes", "layers", "extra"}
LAYER = {"index", "name", "op", "where", "kernel", "macs", "cycles", "instructions", "ms",
         "shape", "extra"}
# a float model for the host target (it computes float layers); int8 elsewhere
MODELS = {"host": shipped_model_path("mnist_cnn")}


@pytest.mark.parametrize("target", backend_names())
def test_every_target_benches_into_the_common_schema(target: str) -> None:
    graph = load_model(MODELS.get(target, INT8))
    exe = compile_model(graph, target=target)
    assert isinstance(exe, Executable)
    xs = bench_inputs(graph)
    settings = BenchSettings(repeats=2, warmup=0)
    report = exe.bench(*xs, settings=settings)
    assert isinstance(report, BenchReport)
    data = report.to_json()
    assert set(data) == COMMON and data["schema"] == SCHEMA
    assert json.loads(json.dumps(data)) == data
    assert [layer["name"] for layer in data["layers"]] == [n.name for n in exe.graph.nodes]
    assert all(set(layer) == LAYER for layer in data["layers"])
    # a time, or (a core without a cycle model) an instruction count, and never a fake time
    if data["total_ms"] is None:
        assert data["total_instructions"] > 0 and data["total_cycles"] is None
    else:
        assert data["total_ms"] > 0
    assert exe.sizes()["arena"] > 0
    # run agrees with the reference runtime on the same input (bit-exact for int8 targets)
    y = exe.run(*xs)[0]
    y_ref = compile_model(graph).run(*xs)[0]
    if y.dtype == np.int8:
        assert np.array_equal(y, y_ref)
    else:
        np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=1e-5)


def test_bench_cli_prints_every_target_with_one_printer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for target in ("ref", "vta", "cortex-m4"):
        out = tmp_path / f"{target}.json"
        assert main(["bench", str(INT8), "--target", target, "--repeats", "2", "--warmup", "0",
                     "--json", str(out)]) == 0
        printed = capsys.readouterr().out
        data = json.loads(out.read_text())
        assert data["schema"] == SCHEMA and data["target"] == target
        assert data["title"] in printed.replace("\n", "") or data["title"][:40] in printed
        assert f"times: {data['time_basis']}" in printed


def test_bench_json_to_stdout_prints_only_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(INT8), "--target", "ref", "--repeats", "1", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == "ref"
