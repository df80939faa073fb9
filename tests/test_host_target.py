"""``--target host``: compile_host, LayerBench, tuned / default / given schedules, emulated
big.LITTLE, the API and the CLI (run, eval, bench --json).

Most tests drive the executable with the stand-in kernel library (``host_standin``: plain C
loops of the same ABI), so they test threads and schedules, not the kernels; the tests marked
``real kernels`` use ``edgenn.backends.host.kernels``.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import host_standin
import numpy as np
import onnx
import pytest

from edgenn.api import TARGETS, compile_model, load_model, quantize_model
from edgenn.backends.bench_report import BenchSettings
from edgenn.backends.host import executable as host_executable
from edgenn.backends.host.executable import HostExecutable, HostLayer, compile_host
from edgenn.backends.host.layer_bench import LayerBench
from edgenn.backends.host.schedule import (
    ClusterWork,
    ThreadSchedule,
    default_schedule,
    parse_schedule,
    single_cluster,
    unpinned,
)
from edgenn.backends.host.topology import detect_topology, parse_emulation, process_cpus
from edgenn.backends.ref import compile_ref
from edgenn.cli.main import main
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.models.zoo import mobilenet_v2, resnet18, small_cnn

CPUS = process_cpus()
two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")
ROOT = Path(__file__).resolve().parents[1]
MNIST_CNN = ROOT / "edgenn" / "models" / "mnist_cnn.onnx"


def model_file(tmp: Path, name: str, proto: onnx.ModelProto) -> Path:
    path = tmp / f"{name}.onnx"
    onnx.save(proto, str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("host_models")
    return {"small_cnn": model_file(tmp, "small_cnn", small_cnn()),
            "mobilenet_v2": model_file(tmp, "mobilenet_v2", mobilenet_v2(size=32, classes=10)),
            "resnet18": model_file(tmp, "resnet18", resnet18(size=32, classes=10))}


@pytest.fixture(scope="module")
def small(models: dict[str, Path]) -> Graph:
    return load_model(models["small_cnn"])


def batch_input(graph: Graph, n: int, seed: int = 1) -> np.ndarray:
    shape = graph.external_shape(graph.inputs[0])[1:]
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


def assert_matches_ref(exe: HostExecutable, graph: Graph, x: np.ndarray) -> None:
    got = exe.run(x)
    want = compile_ref(graph).run(x)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(float(np.abs(w).max()), 1e-6)
        assert float(np.abs(g - w).max()) <= 1e-4 * scale


def standin(graph: Graph, **options: Any) -> HostExecutable:
    return compile_host(graph, kernels=host_standin, **options)


# ---------------------------------------------------------------------- the executable
def test_host_is_a_target() -> None:
    assert "host" in TARGETS


def test_heavy_layers_on_the_pool_the_rest_on_the_reference(small: Graph) -> None:
    exe = standin(small, schedule="default")
    where = {p["op"]: p["where"] for p in exe.placement()}
    assert where["Conv2D"] == where["FullyConnected"] == "host"
    assert where["Add"] == where["MaxPool2D"] == "ref"
    host = [p for p in exe.placement() if p["where"] == "host"]
    assert all(p["source"] == "default" for p in host)
    assert all(p["schedule"] == default_schedule(exe.topology).describe() for p in host)
    assert_matches_ref(exe, small, batch_input(small, 1))


SCHEDULES: list[tuple[str, str | None, Any]] = [
    ("default", None, "default"),
    ("one thread", None, single_cluster(0, 1)),
    ("unpinned 3", None, unpinned(3)),
]
if len(CPUS) >= 2:
    SCHEDULES += [
        ("emulated default", "1+1:0.43", "default"),
        ("emulated LITTLE only", "1+1:0.43", single_cluster(1, 1)),
        ("emulated 70/30", "1+1:0.43", parse_schedule("0:1:0.7+1:1:0.3")),
    ]


@pytest.mark.parametrize("label, emulate, schedule", SCHEDULES, ids=[s[0] for s in SCHEDULES])
@pytest.mark.parametrize("name", ["small_cnn", "mobilenet_v2", "resnet18"])
def test_every_schedule_computes_the_reference(models: dict[str, Path], name: str, label: str,
                                               emulate: str | None, schedule: Any) -> None:
    graph = load_model(models[name])
    exe = standin(graph, schedule=schedule, emulate_hetero=emulate)
    assert exe.topology.emulated == bool(emulate)
    assert_matches_ref(exe, graph, batch_input(graph, 1 if name != "small_cnn" else 3))


def test_outputs_survive_the_next_run(small: Graph) -> None:
    exe = standin(small, schedule="default")
    x = batch_input(small, 1)
    first = exe.run(x)[0]
    kept = first.copy()
    exe.run(batch_input(small, 1, seed=7))
    np.testing.assert_array_equal(first, kept)
    exe.run(x, keep=True)
    assert set(exe.values) >= set(small.outputs)
    kept_values = {k: v.copy() for k, v in exe.values.items()}
    exe.run(batch_input(small, 1, seed=9))
    for k, v in kept_values.items():
        np.testing.assert_array_equal(exe.values[k], v)  # not the host layers' live buffers


def test_bench_reports_median_and_layers(small: Graph) -> None:
    exe = standin(small, schedule="default", threads=2)
    report = exe.bench(settings=BenchSettings(repeats=5, warmup=1)).to_json()
    data, layers = report["extra"], report["layers"]  # the host's own figures in "extra"
    assert report["target"] == "host" and data["median_ms"] > 0
    assert report["total_ms"] == data["median_ms"]
    assert data["min_ms"] <= data["median_ms"] <= data["max_ms"]
    assert data["repeats"] == 5 and data["threads"] == 2 and data["emulated"] is False
    assert data["emulation_note"] is None
    assert [layer["name"] for layer in layers] == [n.name for n in small.nodes]
    assert sum(layer["ms"] for layer in layers) <= data["max_ms"] * 1.5
    assert json.loads(json.dumps(report)) == report
    assert data["cpu_critical_ms"] > 0
    cpu_ms = [layer["extra"]["cpu_ms"] for layer in layers]
    assert all(ms is not None and ms >= 0 for ms in cpu_ms)
    assert data["cpu_critical_ms"] == pytest.approx(sum(cpu_ms))
    assert all(not layer.dispatch.measure_cpu for layer in exe.host_layers())  # switched off
    assert exe.measure(repeats=1, cpu_repeats=0).cpu_critical_ms is None


@two_cpus
def test_emulated_bench_is_labelled(small: Graph) -> None:
    exe = standin(small, schedule="default", emulate_hetero="1+1:0.43")
    data = exe.bench(settings=BenchSettings(repeats=2, warmup=0)).to_json()["extra"]
    assert data["emulated"] is True and "emulated" in data["topology"]
    assert "busy-waits" in data["emulation_note"]
    assert "1x1.00+1x0.43e" in data["fingerprint"]


@two_cpus
def test_emulated_little_cores_really_are_slower(small: Graph) -> None:
    """LITTLE-only runs spin (1/0.43 - 1) x their work; the big core does not spin at all."""
    topo = parse_emulation("1+1:0.43", CPUS[:2])
    little = standin(small, schedule=single_cluster(1, 1), topology=topo)
    big = standin(small, schedule=single_cluster(0, 1), topology=topo)
    x = batch_input(small, 1)
    little.run(x)
    big.run(x)
    for layer in little.host_layers():
        (stats,) = layer.task_stats()
        assert stats.cpu == topo.clusters[1].cpus[0]
        assert stats.emulation_spin_cpu_ms >= 0.99 * (1 / 0.43 - 1) * stats.work_cpu_ms
    assert all(s.emulation_spin_ms == 0 for layer in big.host_layers()
               for s in layer.task_stats())


def test_compile_errors(small: Graph) -> None:
    with pytest.raises(EdgennError, match="unknown schedule 'fast'"):
        standin(small, schedule="fast")
    with pytest.raises(EdgennError, match="--threads must be >= 1"):
        standin(small, threads=0)
    with pytest.raises(EdgennError, match="either emulate_hetero or topology"):
        standin(small, emulate_hetero="1+1", topology=detect_topology())
    with pytest.raises(EdgennError, match="cluster 3"):
        standin(small, schedule=single_cluster(3, 1))
    with pytest.raises(EdgennError, match="uses 3 threads, more than --threads 2"):
        standin(small, schedule=unpinned(3), threads=2)


def test_quantized_graph_is_refused(small: Graph) -> None:
    graph = quantize_model(small, batch_input(small, 4))
    with pytest.raises(EdgennError, match="--target host runs float32 graphs"):
        standin(graph)


# ------------------------------------------------------------------------ tuned schedules
@dataclass(frozen=True)
class FakeRecord:
    config: Any
    schedule: ThreadSchedule
    median_ms: float


@pytest.fixture
def fake_db(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Replace edgenn.tune.database with an in-memory ``best_record``; returns the records."""
    records: dict[tuple[str, str], FakeRecord] = {}
    calls: list[tuple[str, str, str]] = []

    def best_record(db_url: str, workload_key: str, fingerprint: str,
                    max_threads: int | None = None) -> FakeRecord | None:
        calls.append((db_url, workload_key, fingerprint))
        return records.get((workload_key, fingerprint))  # ignores max_threads: we check too

    module = types.ModuleType("edgenn.tune.database")
    module.best_record = best_record  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "edgenn.tune.database", module)
    return {"records": records, "calls": calls}


def test_tuned_applies_best_records_and_falls_back(small: Graph, fake_db: dict[str, Any]) -> None:
    from edgenn.backends.host.fingerprint import target_fingerprint
    from edgenn.tune.workload import workload_key

    topo = detect_topology()
    fp = target_fingerprint(topo)
    convs = [n for n in small.nodes if n.op == "Conv2D"]
    two = ThreadSchedule((ClusterWork(0, min(2, len(CPUS)), 1.0),))
    fake_db["records"][(workload_key(convs[0], small), fp)] = FakeRecord(
        host_standin.StandinConfig(), two, 0.123)
    fake_db["records"][(workload_key(convs[1], small), fp)] = FakeRecord(
        host_standin.StandinConfig(), single_cluster(7, 1), 0.5)  # not on this machine
    fc = next(n for n in small.nodes if n.op == "FullyConnected")
    fake_db["records"][(workload_key(fc, small), fp)] = FakeRecord(
        host_standin.StandinConfig("gone"), two, 0.5)  # a config this library cannot build
    exe = standin(small, schedule="tuned", db="sqlite:///nowhere.db", topology=topo)
    sources = {p["name"]: p["source"] for p in exe.placement()}
    assert sources[convs[0].name] == "tuned"
    assert sources[convs[1].name].startswith("default: record does not fit this topology")
    assert sources[convs[2].name] == "default: no tuning record"
    assert sources[fc.name].startswith("default: tuned config failed (")
    assert {c[0] for c in fake_db["calls"]} == {"sqlite:///nowhere.db"}
    assert {c[2] for c in fake_db["calls"]} == {fp}
    layer = next(s for s in exe.steps if isinstance(s, HostLayer) and s.node == convs[0])
    assert layer.schedule == two and layer.choice.tuned_ms == 0.123
    assert_matches_ref(exe, small, batch_input(small, 2))
    timing = {t.name: t for t in exe.measure(repeats=1, warmup=0).layers}
    assert timing[convs[0].name].tuned_ms == 0.123
    if len(CPUS) >= 2:  # a 2-thread record does not apply under --threads 1
        capped = standin(small, schedule="tuned", threads=1, db="sqlite:///x", topology=topo)
        assert {p["name"]: p["source"] for p in capped.placement()}[convs[0].name] == (
            "default: record uses 2 threads, more than --threads 1")


def test_tuned_without_the_tuner_runs_the_default(small: Graph,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "edgenn.tune.database", None)  # import now fails
    exe = standin(small, schedule="tuned")
    sources = {p["source"] for p in exe.placement() if p["where"] == "host"}
    assert len(sources) == 1 and sources.pop().startswith("default: tuning database unavailable")


def test_default_mode_never_reads_the_database(small: Graph, fake_db: dict[str, Any]) -> None:
    standin(small, schedule="default")
    standin(small, schedule=single_cluster(0, 1))
    assert fake_db["calls"] == []


def test_layers_lists_workloads_and_candidates(small: Graph) -> None:
    from edgenn.tune.workload import workload_key

    exe = standin(small, schedule="default")
    listed = exe.layers()
    heavy = [n for n in small.nodes if n.op in ("Conv2D", "FullyConnected")]
    assert [name for name, _, _ in listed] == [n.name for n in heavy]
    assert [key for _, key, _ in listed] == [workload_key(n, small) for n in heavy]
    assert all(cands == [host_standin.StandinConfig()] for _, _, cands in listed)


# ---------------------------------------------------------------------------- LayerBench
def bench_for(graph: Graph, op: str, topology: Any = None) -> LayerBench:
    node = next(n for n in graph.nodes if n.op == op)
    return LayerBench(node, graph, topology or detect_topology(), kernels=host_standin)


@pytest.mark.parametrize("op", ["Conv2D", "FullyConnected"])
def test_layer_bench_prepares_runs_and_checks(small: Graph, op: str) -> None:
    bench = bench_for(small, op)
    assert bench.candidate_configs() == [host_standin.StandinConfig()]
    config = bench.default_config()
    for schedule in (single_cluster(0, 1), unpinned(2), unpinned(3)):
        bench.prepare(config, schedule)
        bench.run_once()
        assert bench.check() and bench.max_rel_error is not None
        assert bench.max_rel_error <= 1e-6
        assert sum(s.partitions for s in bench.task_stats()) > 0
    assert len(bench._ops) == 1  # compiled once, bound three times


@two_cpus
def test_layer_bench_on_emulated_big_little(small: Graph) -> None:
    bench = bench_for(small, "Conv2D", parse_emulation("1+1:0.43", CPUS[:2]))
    for spec in ("0:1:0.7+1:1:0.3", "1:1", "any:2"):
        bench.prepare(bench.default_config(), parse_schedule(spec))
        assert bench.check()


@pytest.mark.parametrize("broken", ["skip_last", "off"])
@pytest.mark.parametrize("op", ["Conv2D", "FullyConnected"])
def test_layer_bench_check_catches_broken_kernels(small: Graph, op: str, broken: str) -> None:
    bench = bench_for(small, op)
    bench.prepare(host_standin.StandinConfig(broken), unpinned(2))
    assert not bench.check()
    assert bench.max_rel_error is not None and bench.max_rel_error > 1e-4


def test_layer_bench_needs_prepare(small: Graph) -> None:
    with pytest.raises(EdgennError, match="prepare"):
        bench_for(small, "Conv2D").run_once()


# ---------------------------------------------------------------------------- API and CLI
@pytest.fixture
def standin_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_executable, "kernel_library", lambda: host_standin)


def test_api_compile_model_host(small: Graph, standin_kernels: None) -> None:
    exe = compile_model(small, target="host", schedule="default", threads=1)
    assert isinstance(exe, HostExecutable) and exe.threads == 1
    assert_matches_ref(exe, small, batch_input(small, 2))
    with pytest.raises(EdgennError, match="unknown option.*ram_kb"):
        compile_model(small, target="host", ram_kb=64)
    with pytest.raises(EdgennError, match="--target host runs layer by layer"):
        compile_model(small, target="host", fuse="all")


def test_cli_run_and_bench(models: dict[str, Path], tmp_path: Path, standin_kernels: None,
                           capsys: pytest.CaptureFixture[str]) -> None:
    graph = load_model(models["small_cnn"])
    x = batch_input(graph, 4)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(models["small_cnn"]), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy"), "--target", "host", "--threads", "2",
                 "--schedule", "default"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), compile_ref(graph).run(x)[0],
                               rtol=1e-4, atol=1e-5)
    out = tmp_path / "bench.json"
    assert main(["bench", str(models["small_cnn"]), "--target", "host", "--schedule",
                 "default", "--repeats", "3", "--warmup", "1", "--json", str(out)]) == 0
    data = json.loads(out.read_text())["extra"]
    assert data["median_ms"] > 0 and data["schedule"] == "default" and not data["emulated"]
    printed = capsys.readouterr().out
    assert "median" in printed and "small_cnn on host" in printed


@two_cpus
def test_cli_bench_emulated_with_explicit_schedule(models: dict[str, Path], tmp_path: Path,
                                                   standin_kernels: None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", str(models["small_cnn"]), "--target", "host", "--emulate-hetero",
                 "1+1:0.43", "--schedule", "0:1:0.7+1:1:0.3", "--repeats", "2",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    data = report["extra"]
    assert data["emulated"] is True and data["schedule"] == "given"
    host = [layer for layer in report["layers"] if layer["where"] == "host"]
    assert {layer["extra"]["schedule"] for layer in host} == {"big 1t 70% + LITTLE 1t 30%"}
    printed = capsys.readouterr().out
    assert "(emulated)" in printed and "note: emulated heterogeneity" in printed


def test_cli_errors_are_one_line(models: dict[str, Path], standin_kernels: None,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for extra, message in ((["--emulate-hetero", "big"], "bad --emulate-hetero"),
                           (["--schedule", "0:1:0.5+1:1:0.4"], "add up to 0.9"),
                           (["--schedule", "0:9"], "which has")):
        assert main(["bench", str(models["small_cnn"]), "--target", "host", *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_cli_eval_mnist_on_host(standin_kernels: None,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(MNIST_CNN), "--target", "host", "--limit", "40"]) == 0
    host_line = capsys.readouterr().out
    assert main(["eval", str(MNIST_CNN), "--limit", "40"]) == 0
    ref_line = capsys.readouterr().out
    assert host_line.split("accuracy")[1].split("%")[0] == ref_line.split("accuracy")[1].split(
        "%")[0]
    assert "target host" in host_line


# ------------------------------------------------------------------------- real kernels
REAL_SCHEDULES: list[tuple[str, str | None, Any]] = [("default", None, "default"),
                                                     ("one thread", None, single_cluster(0, 1))]
if len(CPUS) >= 2:
    REAL_SCHEDULES += [("emulated 70/30", "1+1:0.43", parse_schedule("0:1:0.7+1:1:0.3")),
                       ("emulated default", "1+1:0.43", "default")]


@pytest.mark.parametrize("label, emulate, schedule", REAL_SCHEDULES,
                         ids=[s[0] for s in REAL_SCHEDULES])
@pytest.mark.parametrize("name", ["small_cnn", "mobilenet_v2", "resnet18"])
def test_real_kernels_compute_the_reference(models: dict[str, Path], name: str, label: str,
                                            emulate: str | None, schedule: Any) -> None:
    graph = load_model(models[name])
    exe = compile_host(graph, schedule=schedule, emulate_hetero=emulate)
    assert {p["where"] for p in exe.placement() if p["op"] == "Conv2D"} == {"host"}
    assert_matches_ref(exe, graph, batch_input(graph, 2))


def test_real_kernels_every_candidate_under_split_schedules(small: Graph) -> None:
    topo = parse_emulation("1+1:0.43", CPUS[:2]) if len(CPUS) >= 2 else detect_topology()
    schedules = [unpinned(2), unpinned(3)]
    if len(CPUS) >= 2:
        schedules += [parse_schedule("0:1:0.7+1:1:0.3"), parse_schedule("0:1:0.25+1:1:0.75")]
    for node in small.nodes:
        if node.op not in ("Conv2D", "FullyConnected"):
            continue
        bench = LayerBench(node, small, topo)
        for config in bench.candidate_configs():
            for schedule in schedules:
                bench.prepare(config, schedule)
                assert bench.check(), (node.name, config, schedule, bench.max_rel_error)


def test_cli_bench_with_real_kernels(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", str(models["mobilenet_v2"]), "--target", "host", "--threads", "1",
                 "--schedule", "default", "--repeats", "3", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    data = report["extra"]
    assert data["median_ms"] > 0 and data["threads"] == 1
    kernels = {layer["kernel"] for layer in report["layers"] if layer["where"] == "host"}
    assert any(k.startswith("depthwise") for k in kernels)
