"""``edgenn tune`` end to end on real threads (the host backend with H2's stand-in kernels),
and ``compile_host(schedule="tuned")`` applying what it found."""

from __future__ import annotations

import json
from pathlib import Path

import host_standin
import onnx
import pytest

from edgenn.api import load_model
from edgenn.cli.main import main
from edgenn.models.zoo import small_cnn
from edgenn.tune.database import register_decision_type

register_decision_type(host_standin.StandinConfig)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "small_cnn.onnx"
    onnx.save(small_cnn(size=16), str(path))
    return path


@pytest.fixture
def standin_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """``edgenn tune`` (through ``HostTarget``) on H2's stand-in kernels."""
    # why import first: these modules bind ``kernel_library`` by name when first imported,
    # and must keep the real one after the patch is undone
    import edgenn.backends.host.executable  # noqa: F401
    import edgenn.backends.host.layer_bench  # noqa: F401

    monkeypatch.setattr("edgenn.backends.host.binding.kernel_library", lambda: host_standin)


def _tune(model: Path, tmp_path: Path, *extra: str) -> int:
    return main(["tune", str(model), "--db", str(tmp_path / "t.db"), "--trials", "6",
                 "--warmup", "1", "--repeats", "3", "--emulate-hetero", "1+1:0.43",
                 "--plot", str(tmp_path / "conv.png"), "--json", str(tmp_path / "r.json"),
                 *extra])


def test_tune_writes_table_plot_json_and_resumes(model: Path, tmp_path: Path,
                                                 standin_kernels: None,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _tune(model, tmp_path, "--strategy", "random") == 0
    out = capsys.readouterr().out
    assert "baseline ms" in out and "emulated" in out
    assert (tmp_path / "conv.png").stat().st_size > 1000
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["layers"] and all(layer["trials"] == 6 for layer in report["layers"])
    assert all(layer["measured_this_run"] == 6 for layer in report["layers"])
    assert report["convergence_ms"][0] >= report["convergence_ms"][-1]
    first = report["layers"][0]["trials_detail"][0]
    assert first["schedule"].startswith("default")  # the baseline is measured first

    assert _tune(model, tmp_path, "--strategy", "tpe") == 0  # the studies are full: resumes
    again = json.loads((tmp_path / "r.json").read_text())
    assert all(layer["measured_this_run"] == 0 for layer in again["layers"])


def test_compile_host_applies_the_best_records(model: Path, tmp_path: Path,
                                               standin_kernels: None) -> None:
    from edgenn.backends.host.executable import compile_host

    assert _tune(model, tmp_path, "--strategy", "grid", "--trials", "8") == 0
    report = json.loads((tmp_path / "r.json").read_text())
    graph = load_model(model)
    exe = compile_host(graph, schedule="tuned", db=str(tmp_path / "t.db"),
                       emulate_hetero="1+1:0.43", kernels=host_standin)
    placement = {p["name"]: p for p in exe.placement() if p["where"] == "host"}
    assert placement and all(p["source"] == "tuned" for p in placement.values())
    for layer in report["layers"]:
        for name in layer["nodes"]:
            assert placement[name]["schedule"] == layer["best_schedule"]
    default = compile_host(graph, schedule="default", db=str(tmp_path / "t.db"),
                           emulate_hetero="1+1:0.43", kernels=host_standin)
    assert all(p["source"] == "default" for p in default.placement() if p["where"] == "host")


def test_tune_errors_are_one_line(model: Path, tmp_path: Path, standin_kernels: None,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--only", "no_such_layer"], ["--share-step", "0.3"], ["--trials", "0"],
                  ["--threads", "0"]):
        assert _tune(model, tmp_path, *extra) == 2, extra
        err = capsys.readouterr().err.strip()
        assert err.startswith("edgenn tune: error:") and "\n" not in err, err


def test_real_kernels_tuned_and_applied(model: Path, tmp_path: Path) -> None:
    """The real host kernels: a short search, then the tuned executable agrees with the
    reference runtime and runs every host layer with its record."""
    import numpy as np

    from edgenn.api import compile_model
    from edgenn.backends.host.executable import compile_host

    db = str(tmp_path / "real.db")
    assert main(["tune", str(model), "--db", db, "--trials", "5", "--warmup", "1",
                 "--repeats", "3", "--strategy", "random", "--threads", "2",
                 "--plot", str(tmp_path / "c.png")]) == 0
    graph = load_model(model)
    exe = compile_host(graph, schedule="tuned", db=db)
    sources = {p["source"] for p in exe.placement() if p["where"] == "host"}
    assert sources == {"tuned"}
    x = np.random.default_rng(0).random((1, 3, 16, 16), dtype=np.float32)
    ref = compile_model(graph, target="ref").run(x)[0]
    np.testing.assert_allclose(exe.run(x)[0], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_quantized_model_is_a_clear_error(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    int8 = Path(__file__).parent / "fixtures" / "tflite" / "conv2_int8.tflite"
    assert main(["tune", str(int8), "--db", str(tmp_path / "t.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert "quantized" in err and "\n" not in err
