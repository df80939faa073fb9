"""Inverted-residual chains: pointwise -> depthwise -> pointwise with the block's Add folded in.

``find_chains`` gives a chain whose last output feeds an identity-shortcut Add the Add as its
last step (``Chain.residual``). Oracles: the reference runtime on the UNFUSED graph and TFLite
Micro (``tflm_run``) on the original file (the zoo's MobileNetV2 keyword model, 14 identity
blocks) or on ``export_tflite`` of generated blocks (odd sizes, both operand orders, a
stride-2 block without a shortcut between them). Arena: the exact plans (``plan_graph``, the
Cortex-M plan with kernel scratch); cycles: the emulator, fused vs layer by layer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from fusion_graphs import inverted_residual_graph, random_input

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.codegen.memory import firmware_arena_bytes, plan_arena
from edgenn.backends.cortexm.executable import _bench_inputs
from edgenn.backends.cortexm.kernels.fused_rows import plan_rows
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Graph
from edgenn.memory import graph_buffers, plan_graph
from edgenn.passes.fusion import VARIANTS, apply_fusion, find_chains, fused_names

MBV2 = Path(__file__).resolve().parents[1] / "zoo" / "keras" / "mbv2_kws_int8.tflite"
CORE = "cortex-m4"
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="arm-none-eabi-gcc not installed")
# (h, w, cin, blocks (expanded, out, stride), seed): odd sizes; a stride-2 block (no
# shortcut) between residual ones; the Adds alternate their operand order
BLOCKS = [
    (9, 7, 6, [(14, 6, 1), (10, 6, 1), (12, 8, 2), (16, 8, 1)], 3),
    (11, 5, 3, [(9, 3, 1)], 11),  # 15-byte rows (not word multiples)
    (6, 6, 8, [(24, 8, 1), (16, 8, 1)], 5),  # even rows: no last call past the map
]


def _graph(case: int) -> Graph:
    h, w, cin, blocks, seed = BLOCKS[case]
    return inverted_residual_graph(h, w, cin, blocks, seed)


# -- find_chains ------------------------------------------------------------------------------
def test_mbv2_blocks_take_their_adds() -> None:
    g = load_model(MBV2)
    chains = find_chains(g)
    adds = [n for n in g.nodes if n.op == "Add"]
    assert len(adds) == 14 and len(chains) == 14
    ops = {n.name: n for n in g.nodes}
    for chain in chains:
        assert chain.residual is not None
        assert [ops[n].op for n in chain.names] == ["Conv2D"] * 3 + ["Add"]
        groups = [int(m.attr("groups", 1)) for m in chain.members]
        assert groups[0] == groups[2] == 1 and groups[1] > 1  # pw -> dw -> pw
        assert set(chain.residual.inputs) == {chain.input.name, chain.conv_output.name}
        assert chain.output.name == chain.residual.outputs[0]
    assert {c.residual.name for c in chains if c.residual} == {a.name for a in adds}
    # the fused graph has no Add left: every block is one node
    fused = apply_fusion(g, chains)
    assert [n.op for n in fused.nodes].count("FusedConvChain") == 14
    assert "Add" not in [n.op for n in fused.nodes]


def test_stride2_block_fuses_as_a_plain_chain() -> None:
    g = _graph(0)
    chains = find_chains(g)
    assert [(len(c), c.residual is not None) for c in chains] == [
        (3, True), (3, True), (3, False), (3, True)]
    assert chains[2].output.name == chains[2].members[-1].outputs[0]
    # a part of a residual chain has no Add (the Add needs the chain's own input)
    part = chains[0].sub(1, 3)
    assert part.residual is None and part.output.name == chains[0].members[-1].outputs[0]
    assert chains[0].sub(0, 3) is chains[0]


# -- reference runtime ------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(len(BLOCKS)))
def test_ref_fused_blocks_equal_unfused_and_tflite_micro(case: int) -> None:
    from edgenn.export import export_tflite
    from edgenn.oracles.tflm import tflm_run

    g = _graph(case)
    x = random_input(g, 4, seed=case)
    x[0] = -128
    (want,) = compile_ref(g).run(x)
    np.testing.assert_array_equal(tflm_run(export_tflite(g), x)[0], want)
    assert len(np.unique(want)) > 20  # not clamped flat
    for variant in VARIANTS:
        (got,) = compile_ref(apply_fusion(g, find_chains(g), variant)).run(x)
        np.testing.assert_array_equal(got, want, err_msg=variant)


def test_ref_fused_mbv2_equals_tflite_micro() -> None:
    from edgenn.oracles.tflm import tflm_run

    g = load_model(MBV2)
    x = random_input(g, 3, seed=4)
    got = compile_ref(apply_fusion(g, find_chains(g))).run(x)
    want = tflm_run(MBV2.read_bytes(), x)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_memory_plan_keeps_the_block_input_and_drops_the_maps() -> None:
    g = _graph(0)
    chains = find_chains(g)
    fused = apply_fusion(g, chains)
    bufs = {b.name: b for b in graph_buffers(fused)}
    for chain in chains:
        step = next(i for i, n in enumerate(fused.nodes) if fused_names(n) == chain.names)
        # the block input lives until the chain's step (the Add reads it there)
        assert bufs[chain.input.name].first_use <= step <= bufs[chain.input.name].last_use
        for t in chain.intermediates:  # the expanded maps and the projection's output
            assert t.name not in bufs
    assert plan_graph(fused).peak_bytes < plan_graph(g).peak_bytes


# -- Cortex-M ---------------------------------------------------------------------------------
def _in_place_aliases(g: Graph) -> dict[str, str]:
    core = get_core(CORE)
    calls = [select_kernel(n, g, core).prepare(n, g, core) for n in g.nodes]
    plan = plan_arena(g, [c.scratch_bytes for c in calls],
                      in_place=[i for i, c in enumerate(calls) if c.in_place])
    return dict(plan.aliases)


def test_row_plan_writes_the_output_over_the_block_input() -> None:
    """The row path stages the projection's rows and adds them to the input's rows into the
    output, which the memory plan may put over the input (the input dies at the chain)."""
    g = _graph(2)
    fused = apply_fusion(g, find_chains(g))
    core = get_core(CORE)
    for node in fused.nodes:
        plan = plan_rows(node, fused, core)
        assert plan is not None and plan.residual and plan.stage_off >= 0
    aliases = _in_place_aliases(fused)
    first, second = fused.nodes
    # both blocks' outputs in the input's buffer (the input dies at block 1, block 1's
    # output at block 2); layer by layer no Add could, the input lives across its block
    assert aliases.get(first.outputs[0]) == "x" and aliases.get(second.outputs[0]) == "x"


@needs_arm
@pytest.mark.parametrize("case", range(len(BLOCKS)))
def test_emulator_fused_blocks_match_reference(case: int) -> None:
    pytest.importorskip("unicorn")
    g = _graph(case)
    x = random_input(g, 3, seed=20 + case)
    x[0] = -128
    x[1] = 127
    (want,) = compile_ref(g).run(x)
    core = get_core(CORE)
    lbl = compile_model(g, target=CORE)
    lbl_arena = int(lbl.manifest["arena_bytes"])
    assert lbl_arena == firmware_arena_bytes(g, core)
    # the row path and the ring kernel's fallback (its Add runs after the chain, in place)
    for variant in ("ring_hoisted_pair", "ring_hoisted"):
        fg = apply_fusion(g, find_chains(g), variant)
        exe = compile_model(fg, target=CORE)
        np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), want, err_msg=variant)
        assert int(exe.manifest["arena_bytes"]) == firmware_arena_bytes(fg, core)
        assert "edgenn_add" not in " ".join(str(m["kernel"]) for m in exe.manifest["layers"])
        if variant == "ring_hoisted_pair":
            assert int(exe.manifest["arena_bytes"]) < lbl_arena


@needs_arm
def test_emulator_mbv2_fused_is_bit_exact_and_smaller() -> None:
    """The zoo's MobileNetV2 keyword model, all 14 blocks fused with their Adds, against
    TFLite Micro; arena and cycles against layer by layer and the chains without the Adds."""
    pytest.importorskip("unicorn")
    from edgenn.oracles.tflm import tflm_run

    g = load_model(MBV2)
    x = random_input(g, 2, seed=9)
    want = tflm_run(MBV2.read_bytes(), x)
    bench = _bench_inputs(g)
    figures = {}
    for label, graph in (("layer", g), ("plain", apply_fusion(g, find_chains(g, False))),
                         ("residual", apply_fusion(g, find_chains(g)))):
        exe = compile_model(graph, target=CORE)
        if label == "residual":
            for a, b in zip(exe.run(x), want, strict=True):
                np.testing.assert_array_equal(np.asarray(a), b)
        result = exe.emulate(*bench)
        exe.release_emulator()
        figures[label] = (int(result.total_cycles or 0), result.arena_bytes)
    # without the Add the chain's output map (25x5x16) and the Add's exist; with it neither
    assert figures["residual"][1] < figures["plain"][1] < figures["layer"][1]
    # the Add costs what it costs layer by layer (one row a call): no slower than the
    # chains whose Adds run as layers, within 1%
    assert figures["residual"][0] <= figures["plain"][0] * 1.01


# -- the planner ------------------------------------------------------------------------------
def test_auto_counts_the_add_in_the_layer_by_layer_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake builds: the fused chain replaces the members AND the Add, so it is compared with
    their sum; fused only when no slower than that."""
    from test_fusion_auto import fake_builds

    g = inverted_residual_graph(6, 6, 8, [(16, 8, 1)], seed=2)
    cycles = {"conv0": 100, "conv1": 200, "conv2": 100, "add0": 50}
    for fused_cycles, want in ((420, True), (460, False)):
        built = fake_builds(monkeypatch, cycles, fused_cycles, (3000, 2000))
        exe = compile_model(g, target=CORE, fuse="auto")
        assert len(built) == 2
        lines = exe.fusion_report.lines()
        assert any(n.op == "FusedConvChain" for n in exe.graph.nodes) == want, lines
        (chain,) = exe.fusion_report.chains
        assert (chain.unfused_cycles, chain.fused_cycles) == (450, fused_cycles)


@needs_arm
def test_auto_keeps_slower_residual_chains_unless_ram_asks() -> None:
    """Real builds: without a budget the residual chains (per-layer kernels over int8
    windows, measured slower here) are not built fused; a budget below layer by layer fuses them,
    bit-exact, the arena within the budget; the report's measured cycles are the build's."""
    pytest.importorskip("unicorn")
    g = _graph(2)
    exe = compile_model(g, target=CORE, fuse="auto")
    assert not any(n.op == "FusedConvChain" for n in exe.graph.nodes)
    lbl_arena = int(exe.manifest["arena_bytes"])
    # the smallest arena (every block fused); the fastest plan within it may fuse fewer
    budget = firmware_arena_bytes(apply_fusion(g, find_chains(g)), get_core(CORE))
    assert budget < lbl_arena
    exe = compile_model(g, target=CORE, fuse="auto", ram_budget=budget)
    assert int(exe.manifest["arena_bytes"]) <= budget
    assert "FusedConvChain" in [n.op for n in exe.graph.nodes]
    report = exe.fusion_report
    assert report.decision.arena_bytes == int(exe.manifest["arena_bytes"])
    # fused is slower here: chosen only for the RAM, and only where it is needed
    assert all(c.fused_cycles > c.unfused_cycles for c in report.chains)
    assert 0 < sum(c.fused for c in report.chains) <= len(report.chains)
    x = random_input(g, 2, seed=6)
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])


def test_planner_fits_a_budget_only_every_block_fused_meets() -> None:
    """Seven like blocks: 4^7 candidates, so the planner's coordinate descent; it starts from
    every chain whole (Adds included), the only plan whose peak fits (each block's peak is
    the same, so no single block's change can fit it from another start)."""
    from edgenn.passes.fusion import CostModel, plan_fusion, segmentations

    g = inverted_residual_graph(5, 3, 4, [(8, 4, 1)] * 7, seed=8)
    chains = find_chains(g)
    assert len(chains) == 7 and all(c.residual is not None for c in chains)
    # fused slower than layer by layer, every part too (as measured on the row path)
    layer = {n.name: CostModel().node(g, n) for n in g.nodes}
    cost: dict[object, float] = dict(layer)
    for chain in chains:
        for split in segmentations(chain):
            for part in split:
                cost[part.names] = 1.2 * sum(layer[name] for name in part.names)
    budget = plan_graph(apply_fusion(g, chains)).peak_bytes
    decision = plan_fusion(g, "auto", ram_budget=budget, cost=cost)
    assert decision.arena_bytes <= budget < plan_graph(g).peak_bytes
    assert decision.candidates > 0 and decision.chains


@needs_arm
def test_builds_with_skip_support_keep_the_adds() -> None:
    """``skippable`` finds the blocks by their Adds: fused with it, chains stop before them
    (and every block stays skippable); without it the Adds are folded in."""
    pytest.importorskip("unicorn")
    from edgenn.passes.skip import find_blocks

    g = _graph(2)
    exe = compile_model(g, target=CORE, fuse="all", skippable=True)
    assert [n.op for n in exe.graph.nodes] == ["FusedConvChain", "Add"] * 2
    assert len(find_blocks(exe.graph)) == 2
    x = random_input(g, 2, seed=12)
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])
    plain = compile_model(g, target=CORE, fuse="all")
    assert [n.op for n in plain.graph.nodes] == ["FusedConvChain"] * 2


@needs_arm
def test_emulator_resnet_fixture_blocks_with_their_adds() -> None:
    """ResNet basic blocks (3x3 -> 3x3, int16 windows, a fused ReLU in the Add) with the Add
    folded in and the output over the block input: bit-exact with TFLite Micro."""
    pytest.importorskip("unicorn")
    from edgenn.oracles.tflm import tflm_run

    path = Path(__file__).resolve().parent / "fixtures" / "tflite" / "resnet_int8.tflite"
    g = load_model(path)
    chains = find_chains(g)
    assert len(chains) == 2 and all(c.residual is not None for c in chains)
    fg = apply_fusion(g, chains)
    core = get_core(CORE)
    for node in fg.nodes:
        if node.op == "FusedConvChain":
            plan = plan_rows(node, fg, core)
            assert plan is not None and any(m.wide for m in plan.members) and plan.residual
    # both blocks' outputs in the stem's output buffer (block 1's input)
    fused = [n for n in fg.nodes if n.op == "FusedConvChain"]
    aliases = _in_place_aliases(fg)
    assert [aliases.get(n.outputs[0]) for n in fused] == [fused[0].inputs[0]] * 2
    x = random_input(g, 3, seed=14)
    exe = compile_model(fg, target=CORE)
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), tflm_run(path.read_bytes(), x)[0])


@needs_arm
def test_emulator_core_without_dsp_runs_the_ring_kernel_and_the_portable_add() -> None:
    pytest.importorskip("unicorn")
    g = _graph(0)
    x = random_input(g, 2, seed=30)
    exe = compile_model(apply_fusion(g, find_chains(g)), target="cortex-m0plus")
    assert all(str(m["kernel"]) == "edgenn_fused_chain_s8_dsp" for m in exe.manifest["layers"])
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])
