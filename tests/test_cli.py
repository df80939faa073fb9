"""The CLI contract: outputs, JSON keys, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgenn.cli.main import main
from tests.cli_errors import error_line as _error_line

ROOT = Path(__file__).resolve().parents[1]
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"
CNN = ROOT / "edgenn" / "models" / "mnist_cnn.onnx"


def test_missing_model_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = _error_line(capsys, ["inspect", str(tmp_path / "nope.onnx")])
    assert "nope.onnx" in err


@pytest.mark.parametrize("suffix", [".onnx", ".tflite"])
def test_truncated_model(capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str) -> None:
    source = CNN if suffix == ".onnx" else CONV2
    bad = tmp_path / f"bad{suffix}"
    bad.write_bytes(source.read_bytes()[: len(source.read_bytes()) // 3])
    err = _error_line(capsys, ["inspect", str(bad)])
    assert "bad" in err


def test_run_writes_outputs_equal_to_tflm(tmp_path: Path) -> None:
    from edgenn.oracles.tflm import tflm_run

    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, size=(7, 28, 28, 1), dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(CONV2), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy")]) == 0
    y = np.load(tmp_path / "y.npy")
    expected = tflm_run(CONV2.read_bytes(), x)[0]
    assert y.dtype == np.int8 and y.shape == (7, 10)
    assert np.array_equal(y, expected.reshape(y.shape))


def test_run_rejects_wrong_shape_and_dtype(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((2, 28, 28), np.int8))
    err = _error_line(capsys, ["run", str(CONV2), "--input", str(tmp_path / "x.npy"),
                               "--output", str(tmp_path / "y.npy")])
    assert "shape" in err and "[2, 28, 28]" in err
    assert not (tmp_path / "y.npy").exists()
    np.save(tmp_path / "x.npy", np.zeros((2, 28, 28, 1), np.float32))
    err = _error_line(capsys, ["run", str(CONV2), "--input", str(tmp_path / "x.npy"),
                               "--output", str(tmp_path / "y.npy")])
    assert "int8" in err


def test_inspect_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(CONV2), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {"layers", "total_macs", "param_bytes", "arena_bytes", "inputs", "outputs"} <= set(info)
    convs = [layer for layer in info["layers"] if layer["op"] == "Conv2D"]
    # conv2 fixture: 3x3 convs 1->16 and 16->32; MACs = out pixels * 9 * in channels * out ch.
    first = convs[0]
    h, w, c = first["shape"][1:]
    assert first["macs"] == h * w * c * 9 * 1


def test_unsupported_operator_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Einsum", ["a", "b"], ["y"], name="the_einsum", equation="ij,jk->ik")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
    )
    path = tmp_path / "einsum.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    err = _error_line(capsys, ["inspect", str(path)])
    assert "the_einsum" in err and "Einsum" in err


def test_console_script_exit_code() -> None:
    argv = [sys.executable, "-m", "edgenn.cli.main", "inspect", "/nonexistent.tflite"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "/nonexistent.tflite" in proc.stderr


MODEL_A = ROOT / "tests" / "fixtures" / "tflite" / "model_a_int8.tflite"


def test_bench_json_has_the_documented_keys(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", str(MODEL_A), "--target", "cortex-m4", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["schema"] == "edgenn.bench/1"
    assert {"total_cycles", "layers", "arena_bytes", "stack_bytes", "flash_bytes",
            "ram_bytes"} <= set(report) and {"clock_hz", "cycle_model"} <= set(report["extra"])
    assert report["extra"]["clock_hz"] == 64e6 and report["extra"]["cycle_model"]
    # the default --fuse auto measured both plans and fused the conv1 -> conv2 chain (faster)
    assert [layer["op"] for layer in report["layers"]] == ["FusedConvChain"]
    assert [layer["macs"] for layer in report["layers"]] == [97_344 + 2_654_208]
    assert report["extra"]["fusion_plan"]
    assert sum(layer["cycles"] for layer in report["layers"]) <= report["total_cycles"]
    assert 0 < report["stack_bytes"] < 2048 and report["arena_bytes"] <= 29_824
    assert "cycles" in capsys.readouterr().out


def test_bench_other_cores_report_instructions_not_cycles(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", str(CONV2), "--target", "cortex-m0plus", "--ram-kb", "64",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["total_cycles"] is None and report["total_instructions"] > 0
    assert all(layer["cycles"] is None for layer in report["layers"])


def test_compile_writes_a_project_and_rejects_a_too_small_ram(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(CONV2), "--target", "cortex-m4", "-o", str(tmp_path / "fw")]) == 0
    assert {"conv2_int8.c", "conv2_int8.h", "libconv2_int8.a", "CMakeLists.txt", "Makefile",
            "linker.ld", "manifest.json"} <= {
        p.name for p in (tmp_path / "fw").iterdir()}
    err = _error_line(capsys, ["compile", str(CONV2), "--target", "cortex-m4", "--ram-kb", "16",
                               "-o", str(tmp_path / "small")])
    assert "arena" in err and "16" in err


def test_missing_toolchain_gives_the_install_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no arm-none-eabi-gcc
    err = _error_line(capsys, ["compile", str(CONV2), "--target", "cortex-m4",
                               "-o", str(tmp_path / "fw")])
    assert "apt-get install gcc-arm-none-eabi" in err


def test_run_on_cortex_m4_equals_the_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, size=(3, 28, 28, 1), dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    for target in ("ref", "cortex-m4"):
        assert main(["run", str(CONV2), "--target", target, "--input", str(tmp_path / "x.npy"),
                     "--output", str(tmp_path / f"{target}.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "ref.npy"), np.load(tmp_path / "cortex-m4.npy"))


MODEL_B = ROOT / "tests" / "fixtures" / "tflite" / "model_b_int8.tflite"


def test_bench_fuse_modes_report_cycles_and_arena(tmp_path: Path) -> None:
    reports = {}
    for mode in ("none", "all"):
        out = tmp_path / f"{mode}.json"
        assert main(["bench", str(MODEL_B), "--target", "cortex-m4", "--fuse", mode,
                     "--json", str(out)]) == 0
        reports[mode] = json.loads(out.read_text())
    chains = {mode: report["extra"]["fused_chains"] for mode, report in reports.items()}
    assert chains["none"] == [] and chains["all"] == [["conv1", "conv2"]]
    for report in reports.values():
        assert report["total_cycles"] > 0 and report["arena_bytes"] > 0
    assert reports["all"]["arena_bytes"] < reports["none"]["arena_bytes"]
    # A budget below the fused arena cannot be met: one line naming both numbers.
    budget = reports["all"]["arena_bytes"] - 1000
    assert main(["bench", str(MODEL_B), "--target", "cortex-m4", "--fuse", "auto",
                 "--ram-budget", str(budget)]) == 2


@pytest.mark.parametrize(("model", "variant"), [
    ("a", "ring_hoisted_pair"), ("b", "ring_modulo"), ("b", "ring_hoisted"),
    ("b", "ring_hoisted_pair"), ("c", "ring_hoisted_pair")])
def test_fused_variants_equal_layer_by_layer(tmp_path: Path, model: str, variant: str) -> None:
    """Models A, B, C exercise the hand-written ring_hoisted_pair paths (1-channel producer,
    unrolled rows)."""
    rng = np.random.default_rng(2)
    np.save(tmp_path / "x.npy", rng.integers(-128, 128, size=(2, 28, 28, 1), dtype=np.int8))
    path = ROOT / "tests" / "fixtures" / "tflite" / f"model_{model}_int8.tflite"
    argv = ["run", str(path), "--input", str(tmp_path / "x.npy")]
    assert main([*argv, "--output", str(tmp_path / "ref.npy")]) == 0
    assert main([*argv, "--fusion-variant", variant, "--output", str(tmp_path / "ref_f.npy")]) == 0
    assert main([*argv, "--target", "cortex-m4", "--fusion-variant", variant,
                 "--output", str(tmp_path / "m4_f.npy")]) == 0
    ref = np.load(tmp_path / "ref.npy")
    assert np.array_equal(ref, np.load(tmp_path / "ref_f.npy"))
    assert np.array_equal(ref, np.load(tmp_path / "m4_f.npy"))
