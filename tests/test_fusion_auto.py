"""``--fuse auto`` on the Cortex-M4 (edgenn/backends/cortexm/fusion_auto.py).

The decision logic is checked against fake builds whose cycles and arenas the test sets (so
it is checked both ways, whichever of today's kernels is faster); the real builds against
independent measurements of the layer-by-layer and the fused firmware, and the outputs of a
budgeted build against the reference runtime on the unfused graph (itself bit-exact with
TFLite Micro). VWW (the MLPerf Tiny model, when ../shared has it) is slow.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm import fusion_auto
from edgenn.backends.cortexm.codegen.memory import firmware_arena_bytes
from edgenn.backends.cortexm.executable import (
    BenchResult,
    CortexMExecutable,
    LayerBench,
    _bench_inputs,
    compile_cortexm,
)
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.cli.main import main
from edgenn.ir import Graph
from edgenn.ir.sample import random_inputs
from edgenn.passes.fusion import apply_fusion, find_chains
from edgenn.passes.fusion.rewrite import fused_node

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tflite_build import INT8, Op, T, add_options, build  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"
MODEL_A = FIXTURES / "model_a_int8.tflite"
ALEXA = Path(__file__).resolve().parents[1] / "zoo" / "packages" / "pymicro_wakeword" / \
    "alexa.tflite"
VWW = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "mlperf_tiny" / \
    "vww_96_int8.tflite"
CORE = "cortex-m4"


# ----------------------------------------------------------------------------- fake builds
class FakeExe:
    """What compile_auto reads of a build: its manifest, graph and one emulation."""

    def __init__(self, graph: Graph, cycles: dict[str, int], arena: int,
                 flash: int = 1000) -> None:
        self.graph, self.cycles, self.arena, self.flash = graph, cycles, arena, flash
        self.manifest = {"arena_bytes": arena}
        self.fusion_report: Any = None
        self.pending_library: list[Any] = []  # nothing deferred (compile_cortexm's own)

    def emulate(self, *inputs: np.ndarray) -> BenchResult:
        layers = [LayerBench(i, n.name, n.op, "fake", 0, self.cycles[n.name], 0)
                  for i, n in enumerate(self.graph.nodes)]
        return BenchResult(CORE, layers, sum(self.cycles.values()) + 10, 0, self.arena, 0,
                           1000, 0, "fake")

    def release_emulator(self) -> None:
        pass

    def sizes(self) -> dict[str, int]:
        return {"flash": self.flash}


def fake_builds(monkeypatch: pytest.MonkeyPatch, unfused: dict[str, int], fused_cycles: int,
                arenas: tuple[int, int], fast_flash: int = 1000, compact_slowdown: int = 0,
                options: list[dict[str, Any]] | None = None) -> list[Graph]:
    """compile_cortexm replaced: layer-by-layer layers cost ``unfused``, the fused chain
    ``fused_cycles`` (fast code of ``fast_flash`` bytes; ``compact_slowdown`` more cycles
    when the flash policy may compact it); arenas (layer by layer, fused). Returns the graphs
    built (and their options in ``options``)."""
    built: list[Graph] = []

    def fake(graph: Graph, core: str, **opts: Any) -> FakeExe:
        built.append(graph)
        if options is not None:
            options.append(opts)
        fused = [n for n in graph.nodes if n.op == "FusedConvChain"]
        if fused:
            fast = opts.get("compact") is False
            cycles = {n.name: unfused[n.name] for n in graph.nodes if n.op != "FusedConvChain"}
            cycles[fused[0].name] = fused_cycles + (0 if fast else compact_slowdown)
            return FakeExe(graph, cycles, arenas[1], fast_flash if fast else 1000)
        return FakeExe(graph, dict(unfused), arenas[0])

    monkeypatch.setattr(fusion_auto, "compile_cortexm", fake)
    return built


@pytest.mark.parametrize(("fused_cycles", "arenas", "want_fused"), [
    (900, (3000, 2000), True),    # faster and smaller
    (900, (3000, 4000), True),    # faster, larger arena: no budget, speed decides
    (1100, (3000, 2000), False),  # slower though smaller
    (1000, (3000, 2000), True),   # as fast: the smaller arena
    (1000, (3000, 4000), False),  # as fast, larger
])
def test_auto_picks_the_faster_plan(monkeypatch: pytest.MonkeyPatch, fused_cycles: int,
                                    arenas: tuple[int, int], want_fused: bool) -> None:
    g = load_model(MODEL_A)
    built = fake_builds(monkeypatch, {"conv1": 400, "conv2": 600}, fused_cycles, arenas)
    exe = compile_model(g, target=CORE, fuse="auto")
    assert len(built) == 2  # the two measurements; the winner is the result
    fused = any(n.op == "FusedConvChain" for n in exe.graph.nodes)
    assert fused == want_fused
    report = exe.fusion_report
    assert report.builds == 2 and not report.estimated
    assert report.chosen_cycles == (fused_cycles if want_fused else 1000) + 10
    assert report.decision.arena_bytes == arenas[1 if want_fused else 0]
    assert ("fused" if want_fused else "layer by layer") in report.lines()[1]


@pytest.mark.skipif(not ALEXA.is_file(), reason="zoo model missing")
def test_every_chain_is_measured_and_a_faster_one_fused() -> None:
    """Real builds on a streaming wake-word model from a Python package: its depthwise ->
    pointwise chains have no member on an int16 row window, which a former rule took to mean
    "never faster" and left unmeasured; measured, they are faster fused, so auto fuses them,
    and the result equals the reference runtime over consecutive stateful invocations."""
    pytest.importorskip("unicorn")
    g = load_model(ALEXA)
    exe = compile_model(g, target=CORE, fuse="auto")
    report = exe.fusion_report
    assert report.chains and report.builds >= 2, report.lines()
    faster = [c for c in report.chains if c.fused_cycles < c.unfused_cycles]
    assert faster and all(c.fused for c in faster), report.lines()
    assert any(n.op == "FusedConvChain" for n in exe.graph.nodes)
    xs = random_inputs(g, 6, seed=3)
    want = compile_ref(g).run(*xs, stateful=True)
    got = exe.run(*xs, stateful=True)
    for w, o in zip(want, got, strict=True):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(w))


@pytest.mark.parametrize(("fused_cycles", "want_builds", "want_fused"), [
    (1100, 2, False),  # fast code already slower: the policy's build is not needed
    (900, 3, True),    # fast code faster: the policy's build decides (900 + 50: still faster)
    (980, 3, False),   # ... and here its compact code is slower (980 + 50)
])
def test_fused_code_over_the_flash_budget(monkeypatch: pytest.MonkeyPatch, fused_cycles: int,
                                          want_builds: int, want_fused: bool) -> None:
    g = load_model(MODEL_A)
    options: list[dict[str, Any]] = []
    built = fake_builds(monkeypatch, {"conv1": 400, "conv2": 600}, fused_cycles, (3000, 2000),
                        fast_flash=10**7, compact_slowdown=50, options=options)
    exe = compile_model(g, target=CORE, fuse="auto")
    assert len(built) == want_builds
    assert any(n.op == "FusedConvChain" for n in exe.graph.nodes) == want_fused
    if want_builds == 3:  # the third is the fused graph with the flash policy
        assert options[-1].get("compact") is None and built[-1].nodes[0].op == "FusedConvChain"
        assert exe.fusion_report.fused.cycles == fused_cycles + 50 + 10


def test_budget_and_bound_override_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    g = load_model(MODEL_A)
    fake_builds(monkeypatch, {"conv1": 400, "conv2": 600}, 1100, (3000, 2000))
    assert compile_model(g, target=CORE, fuse="auto", ram_budget=2500).graph.nodes[0].op \
        == "FusedConvChain"
    assert compile_model(g, target=CORE, fuse="auto", latency_bound=1200).graph.nodes[0].op \
        == "FusedConvChain"  # the smallest arena within the bound
    assert compile_model(g, target=CORE, fuse="auto", latency_bound=1050).graph.nodes[0].op \
        == "Conv2D"


def test_parts_of_a_long_chain_are_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget only a part of the chain fits: the planner fuses that part, its cycles
    estimated with the whole chain's measured ratio, and builds it (a third build)."""
    from test_cortexm_fused import chain_graph

    from edgenn.ir import Activation

    rng = np.random.default_rng(5)
    member = (8, (3, 3), (1, 1), (1, 1, 1, 1), Activation.RELU, False)
    g = chain_graph(rng, (12, 12), 4, [member] * 4)
    (chain,) = find_chains(g)
    unfused = {n.name: 100 * (i + 1) for i, n in enumerate(g.nodes)}  # 100..400: 1000
    head = fused_node(chain.sub(0, 2), "ring_hoisted_pair").name

    def arena(graph: Graph, core: object, cache: object = None,
              input_buffer: str = "arena") -> int:  # only the head fits
        return 2000 if [n.name for n in graph.nodes][:1] == [head] and \
            len(graph.nodes) == 3 else 3500

    monkeypatch.setattr(fusion_auto, "firmware_arena_bytes", arena)
    budget = 2500
    built = fake_builds(monkeypatch, unfused, 1200, (3000, 4000))
    exe = compile_model(g, target=CORE, fuse="auto", ram_budget=budget)
    report = exe.fusion_report
    assert len(built) == 3 and report.builds == 3 and report.estimated
    assert [c.names for c in report.decision.chains] == [chain.names[:2]]
    assert report.decision.arena_bytes <= budget
    # the part's estimate: the chain's ratio (1200 / 1000) times its members' 100 + 200
    assert report.chosen_cycles == pytest.approx(1.2 * 300 + 300 + 400 + 10)
    assert "estimated" in report.lines()[-1]
    assert report.built_cycles == 1200 + 300 + 400 + 10  # the fake's row for any fused node


# ----------------------------------------------------------------------------- real builds
def test_auto_on_model_a_matches_independent_measurements(tmp_path: Path) -> None:
    g = load_model(MODEL_A)
    chains = find_chains(g)
    x = _bench_inputs(g)
    lbl = compile_cortexm(g, CORE).emulate(*x)
    fused = compile_cortexm(apply_fusion(g, chains), CORE).emulate(*x)
    row = next(layer.cycles for layer in fused.layers
               if layer.name == fused_node(chains[0], "ring_hoisted_pair").name)
    members = sum(layer.cycles or 0 for layer in lbl.layers)  # the chain is the whole model
    want_fused = row < members or (row == members and fused.arena_bytes < lbl.arena_bytes)
    exe = compile_model(g, target=CORE, fuse="auto", out_dir=tmp_path / "fw")
    assert any(n.op == "FusedConvChain" for n in exe.graph.nodes) == want_fused
    report = exe.fusion_report
    assert (report.unfused.cycles, report.unfused.arena_bytes) == (lbl.total_cycles,
                                                                   lbl.arena_bytes)
    assert (report.fused.cycles, report.fused.arena_bytes) == (fused.total_cycles,
                                                               fused.arena_bytes)
    assert (report.chains[0].fused_cycles, report.chains[0].unfused_cycles) == (row, members)
    # the winner was copied into out_dir and runs from there
    assert exe.out_dir == tmp_path / "fw" and exe.elf is not None and exe.elf.is_file()
    assert (tmp_path / "fw" / "libmodel.a").is_file()
    assert exe.bench(*x).detail.total_cycles == report.chosen_cycles


def test_budget_below_layer_by_layer_builds_bit_exact() -> None:
    g = load_model(MODEL_A)
    core = get_core(CORE)
    lbl_arena = firmware_arena_bytes(g, core)
    budget = lbl_arena * 3 // 4  # below layer by layer; the fused chain fits it
    exe = compile_model(g, target=CORE, fuse="auto", ram_budget=budget)
    assert int(exe.manifest["arena_bytes"]) <= budget < lbl_arena
    assert [n.op for n in exe.graph.nodes] == ["FusedConvChain"]
    report = exe.fusion_report
    assert report.decision.arena_bytes == int(exe.manifest["arena_bytes"])
    assert f"{report.chosen_cycles:,.0f} cycles" in report.lines()[-1]
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(8, 28, 28, 1), dtype=np.int8)
    (want,) = compile_ref(g).run(x)
    (got,) = exe.run(x)
    assert np.count_nonzero(got != want) == 0


def test_impossible_budget_is_one_line_and_exit_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    g = load_model(MODEL_A)
    core = get_core(CORE)
    smallest = min(firmware_arena_bytes(g, core),
                   firmware_arena_bytes(apply_fusion(g, find_chains(g)), core))
    code = main(["compile", str(MODEL_A), "--target", CORE, "-o", str(tmp_path / "fw"),
                 "--ram-budget", str(smallest - 1)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"RAM budget of {smallest - 1} bytes" in err and f"smallest arena is {smallest}" in err
    assert not (tmp_path / "fw").exists()


def _add_model(path: Path) -> Path:
    """An int8 Add of two maps: no convolution, so no chain to fuse."""
    q = {"scale": [0.05], "zero_point": [0]}
    path.write_bytes(build([T("a", (1, 4, 4, 8), INT8, **q), T("b", (1, 4, 4, 8), INT8, **q),
                            T("y", (1, 4, 4, 8), INT8, **q)],
                           [Op(0, [0, 1], [2], add_options())], [0, 1], [2]))
    return path


def test_default_compile_without_chain_builds_once(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[Graph] = []
    real = fusion_auto.compile_cortexm

    def counted(graph: Graph, core: str, **options: Any) -> CortexMExecutable:
        calls.append(graph)
        return real(graph, core, **options)

    def no_emulation(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the plain path emulated")

    monkeypatch.setattr(fusion_auto, "compile_cortexm", counted)
    monkeypatch.setattr(CortexMExecutable, "emulate", no_emulation)
    model = _add_model(tmp_path / "add.tflite")
    assert main(["compile", str(model), "--target", CORE, "-o", str(tmp_path / "fw")]) == 0
    assert len(calls) == 1
    assert "fuse auto: no fusable chain" in capsys.readouterr().out


def test_command_line_defaults_by_target() -> None:
    import argparse

    from edgenn.cli.compile_cmd import _fusion, add_fusion_options

    p = argparse.ArgumentParser()
    add_fusion_options(p)
    p.add_argument("--target")
    assert _fusion(p.parse_args(["--target", "cortex-m4"]))["fuse"] == "auto"
    assert _fusion(p.parse_args(["--target", "ref"]))["fuse"] == "none"
    assert _fusion(p.parse_args(["--target", "cortex-m0plus"]))["fuse"] == "none"  # no model
    assert _fusion(p.parse_args(["--target", "cortex-m4", "--fusion-variant",
                                 "layer_by_layer"]))["fuse"] == "none"
    assert _fusion(p.parse_args(["--target", "cortex-m4", "--fusion-variant",
                                 "ring_hoisted"]))["fuse"] == "all"


@pytest.mark.slow
@pytest.mark.skipif(not VWW.is_file(), reason="MLPerf Tiny models not in ../shared")
def test_vww_under_a_budget_below_layer_by_layer_is_bit_exact() -> None:
    """VWW (MobileNetV1, one 27-member chain): a budget below the layer-by-layer arena is met
    by fusing the early stages only; the outputs equal TFLite Micro's."""
    from edgenn.oracles.tflm import tflm_run

    g = load_model(VWW)
    lbl_arena = firmware_arena_bytes(g, get_core(CORE))
    budget = lbl_arena * 85 // 100
    exe = compile_model(g, target=CORE, fuse="auto", ram_budget=budget)
    report = exe.fusion_report
    assert int(exe.manifest["arena_bytes"]) == report.decision.arena_bytes <= budget
    (chain,) = find_chains(g)
    assert report.decision.chains and report.decision.chains[0].names[0] == chain.names[0]
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(3, 96, 96, 3), dtype=np.int8)
    (got,) = exe.run(x)
    (want,) = tflm_run(VWW.read_bytes(), x)
    assert np.count_nonzero(got != want.reshape(got.shape)) == 0


def test_cached_candidate_arenas_are_the_exact_ones() -> None:
    """The planner's per-node cache of kernel scratch gives the arena each candidate's own
    plan gives, on every candidate of the dwsep and resnet fixtures and a 4-member chain."""
    import itertools

    from test_cortexm_fused import chain_graph

    from edgenn.ir import Activation
    from edgenn.passes.fusion import segmentations

    core = get_core(CORE)
    member = (8, (3, 3), (2, 2), (1, 1, 1, 1), Activation.RELU, False)
    dw = (8, (3, 3), (1, 1), (1, 1, 1, 1), Activation.RELU, True)
    graphs = [load_model(FIXTURES / f"{m}_int8.tflite") for m in ("dwsep", "resnet")]
    graphs.append(chain_graph(np.random.default_rng(2), (32, 32), 4, [member, dw, member, dw]))
    for g in graphs:
        cache: dict[object, tuple[int, bool]] = {}
        for pick in itertools.product(*(segmentations(c) for c in find_chains(g))):
            fused = apply_fusion(g, [seg for segs in pick for seg in segs])
            assert firmware_arena_bytes(fused, core, cache) == firmware_arena_bytes(fused, core)
