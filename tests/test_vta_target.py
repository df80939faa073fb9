"""``--target vta``: whole int8 networks on the accelerator simulator equal the reference."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from vta_graphs import quantized_zoo_model, random_input

from edgenn.api import TARGETS, compile_model, load_model
from edgenn.backends.ref import compile_ref
from edgenn.cli.main import main
from edgenn.errors import EdgennError
from edgenn.ir import Graph

ROOT = Path(__file__).resolve().parents[1]
CONV2 = ROOT / "tests" / "fixtures" / "tflite" / "conv2_int8.tflite"
DARKNET_LINE = re.compile(r"^conv \d+ : VTA_gemm \d+ \d+ \d+ => \d+\.\d GOPS \(\d+\.\d\d ms\)")


@pytest.fixture(scope="module")
def residual_net(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    """zoo.small_cnn: conv, max pool, conv, a residual conv + Add, global pool, Gemm."""
    return quantized_zoo_model(tmp_path_factory.mktemp("vta"), "small_cnn", 32)


def assert_network_exact(graph: Graph, batch: int, **options: object) -> object:
    x = random_input(graph, batch)
    exe = compile_model(graph, target="vta", **options)
    got = exe.run(x)
    want = compile_ref(graph).run(x)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return exe


def test_vta_is_a_target() -> None:
    assert "vta" in TARGETS


def test_small_residual_network_is_bit_exact(residual_net: Graph) -> None:
    exe = assert_network_exact(residual_net, batch=3)
    placement = exe.placement()
    ops_on_vta = {p["op"] for p in placement if p["where"] == "vta"}
    assert ops_on_vta == {"Conv2D", "FullyConnected"}
    assert all(p["where"] == "cpu" for p in placement if p["op"] not in ops_on_vta)


def test_report_and_darknet_log(residual_net: Graph) -> None:
    exe = compile_model(residual_net, target="vta")
    report = exe.bench(random_input(residual_net, 1))
    data = report.detail.to_json()
    assert data["target"] == "vta" and data["batch"] == 1
    assert data["total_ms"] == pytest.approx(data["vta_ms"] + data["host_ms"])
    gemm_layers = [layer for layer in data["layers"] if layer["where"] == "vta"]
    assert len(gemm_layers) == 4
    for layer in gemm_layers:
        assert layer["cycles"] > 0 and layer["gops"] > 0 and layer["vta_ms"] > 0
        assert set(layer["dram_bytes"]) >= {"uop", "inp", "wgt", "acc", "out"}
        assert 0 < layer["gemm_utilization"] <= 1
        assert layer["dram_bytes"]["out"] >= 4 * layer["m"] * layer["n"]  # int32 read back
    first = gemm_layers[0]
    assert (first["m"], first["k"], first["n"]) == (32 * 32, 27, 8)
    assert data["assumed"], "assumed timing constants must be named in the report"
    log = exe.log()
    assert DARKNET_LINE.match(log[0]), log[0]
    assert log[1].startswith("max 1 : CPU ")
    assert len(log) == len(data["layers"]) + 3 and log[-1].startswith("total ")
    json.dumps(data)  # JSON-ready


def test_batch_matches_single_runs(residual_net: Graph) -> None:
    x = random_input(residual_net, 2, seed=5)
    exe = compile_model(residual_net, target="vta", schedule="optimized", preset="pynq")
    both = exe.run(x)[0]
    assert exe.last.clock_mhz == pytest.approx(100.0)
    assert np.array_equal(both[1:], exe.run(x[1:])[0])


def test_float_graph_asks_for_quantization() -> None:
    graph = load_model(ROOT / "edgenn" / "models" / "mnist_cnn.onnx")
    with pytest.raises(EdgennError, match="quantize"):
        compile_model(graph, target="vta")


def test_bad_options_are_one_line_errors(residual_net: Graph) -> None:
    with pytest.raises(EdgennError, match="schedule"):
        compile_model(residual_net, target="vta", schedule="fastest")
    with pytest.raises(EdgennError, match="unknown option"):
        compile_model(residual_net, target="vta", ram_kb=64)
    with pytest.raises(EdgennError, match="fusion"):
        compile_model(residual_net, target="vta", fuse="all")
    exe = compile_model(residual_net, target="vta")
    with pytest.raises(EdgennError, match="run it"):
        exe.report()


def test_resnet18_64px_is_bit_exact(tmp_path: Path) -> None:
    graph = quantized_zoo_model(tmp_path, "resnet18", 64, calibration=2)
    exe = assert_network_exact(graph, batch=1)
    assert sum(p["where"] == "vta" for p in exe.placement()) == 21


def test_mobilenet_v2_keeps_depthwise_on_the_cpu(tmp_path: Path) -> None:
    graph = quantized_zoo_model(tmp_path, "mobilenet_v2", 32, calibration=2)
    exe = assert_network_exact(graph, batch=1)
    placement = exe.placement()
    depthwise = [p for p in placement if p["why_cpu"]]
    assert len(depthwise) == 17 and all("depthwise" in p["why_cpu"] for p in depthwise)
    assert sum(p["where"] == "vta" for p in placement) == 36  # 1x1 / stem convs and the FC


@pytest.mark.slow
def test_resnet18_224px_is_bit_exact(tmp_path: Path) -> None:
    graph = quantized_zoo_model(tmp_path, "resnet18", 224, calibration=2)
    exe = assert_network_exact(graph, batch=1)
    layers = exe.report()["layers"]
    conv1 = next(layer for layer in layers if layer["where"] == "vta")
    assert (conv1["m"], conv1["k"], conv1["n"]) == (112 * 112, 147, 64)


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_run_with_target_vta_equals_ref(tmp_path: Path) -> None:
    x = np.random.default_rng(0).integers(-128, 128, size=(3, 28, 28, 1), dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    common = ["run", str(CONV2), "--input", str(tmp_path / "x.npy")]
    assert main([*common, "--output", str(tmp_path / "ref.npy")]) == 0
    assert main([*common, "--output", str(tmp_path / "vta.npy"), "--target", "vta",
                 "--vta-schedule", "tiled2", "--vta-preset", "ultra96"]) == 0
    assert np.array_equal(np.load(tmp_path / "vta.npy"), np.load(tmp_path / "ref.npy"))


def test_cli_bench_vta_json_and_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", str(CONV2), "--target", "vta", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "VTA_gemm" in printed and "GOPS" in printed
    report = json.loads(out.read_text())
    extra = report["extra"]  # the accelerator's own figures
    assert {"total_ms", "layers"} <= set(report)
    assert {"gops", "vta_ms", "host_ms", "assumed"} <= set(extra)
    assert extra["preset"] == "zcu102" and extra["schedule"] == "tall_pipelined"
    assert any(layer["where"] == "vta" for layer in report["layers"])


def test_cli_eval_vta_matches_ref(tmp_path: Path) -> None:
    results = {}
    for target in ("ref", "vta"):
        path = tmp_path / f"{target}.json"
        assert main(["eval", str(CONV2), "--target", target, "--limit", "30",
                     "--json", str(path)]) == 0
        results[target] = json.loads(path.read_text())["accuracy"]
    assert results["vta"] == results["ref"]


def test_cli_bad_schedule_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["bench", str(CONV2), "--target", "vta", "--vta-schedule", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nope" in err


def test_skipping_a_block_on_vta_equals_the_skipped_reference() -> None:
    from skip_graphs import int8_inputs, quantized
    from skip_graphs import residual_net as skip_net

    graph = quantized(skip_net(n_blocks=3))
    x = int8_inputs(4)
    got = compile_model(graph, target="vta", skip="block2").run(x)[0]
    want = compile_model(graph, target="ref", skip="block2").run(x)[0]
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, compile_model(graph, target="ref").run(x)[0])


def test_bus_width_is_a_parameter(residual_net: Graph) -> None:
    x = random_input(residual_net, 1)
    cycles = {}
    for bits in (64, 128):
        exe = compile_model(residual_net, target="vta", bus_bits=bits)
        exe.run(x)
        assert exe.last.bus_bits == bits
        cycles[bits] = exe.last.totals()["vta_cycles"]
    assert cycles[64] > cycles[128]
