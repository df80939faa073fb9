"""The fusion pass: chain finding, ring geometry and schedule, the rewrite, the planner."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from fusion_graphs import ConvSpec, conv_chain_graph

from edgenn.api import load_model
from edgenn.backends.cortexm.codegen.memory import buffers_with_scratch
from edgenn.errors import GraphValidationError, PlanError
from edgenn.ir import DType, Graph
from edgenn.memory import plan_graph
from edgenn.passes.fusion import (
    apply_fusion,
    find_chains,
    plan_fusion,
    ring_bytes,
    row_schedule,
    segmentations,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tflite"


def fixture(name: str) -> Graph:
    return load_model(FIXTURES / f"{name}.tflite")


def conv_names(graph: Graph) -> list[str]:
    return [n.name for n in graph.nodes if n.op == "Conv2D"]


# -- find_chains ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["model_a_int8", "model_b_int8", "model_c_int8", "conv2_int8"])
def test_two_conv_models_have_one_chain_of_both_convs(name: str) -> None:
    g = fixture(name)
    chains = find_chains(g)
    assert [list(c.names) for c in chains] == [conv_names(g)]
    assert chains[0].intermediates[0].name == g.nodes[0].outputs[0]


def test_dwsep_chain_is_conv_depthwise_pointwise() -> None:
    g = fixture("dwsep_int8")
    (chain,) = find_chains(g)
    assert list(chain.names) == conv_names(g)
    groups = [int(m.attr("groups", 1)) for m in chain.members]
    kernels = [(geom.kh, geom.kw, geom.sh) for geom in chain.geoms]
    assert groups == [1, 8, 1] and kernels == [(3, 3, 2), (3, 3, 1), (1, 1, 1)]


def test_resnet_chains_end_in_their_residual_adds() -> None:
    g = fixture("resnet_int8")
    convs = conv_names(g)
    adds = [n.name for n in g.nodes if n.op == "Add"]
    # the stem and each Add output feed both a conv and the next Add: the two convs inside
    # each block form a chain, and the block's Add (of the chain output and the chain input,
    # an identity shortcut) is its last step
    chains = find_chains(g)
    assert [list(c.names) for c in chains] == [[*convs[1:3], adds[0]], [*convs[3:5], adds[1]]]
    for c in chains:
        assert c.residual is not None and c.output.name == c.residual.outputs[0]
        assert c.conv_output.name == c.members[-1].outputs[0]
        assert set(c.residual.inputs) == {c.input.name, c.conv_output.name}
    # without residuals the chains stop before the Adds, as they used to
    assert [list(c.names) for c in find_chains(g, residuals=False)] == [convs[1:3], convs[3:5]]


def test_long_synthetic_chain_with_strides_5x5_pads_and_depthwise() -> None:
    specs = [ConvSpec(8, 5, 5, (2, 2), (2, 1, 1, 2)),
             ConvSpec(0, 3, 3, (1, 1), (1, 1, 1, 1), depthwise=True),
             ConvSpec(6, 1, 1, (2, 1)), ConvSpec(4, 3, 3, (2, 2), (0, 1, 2, 0))]
    g = conv_chain_graph(23, 19, 3, specs)
    (chain,) = find_chains(g)
    assert len(chain) == 4


def test_an_intermediate_that_is_a_graph_output_breaks_the_chain() -> None:
    specs = [ConvSpec(4, 3, 3), ConvSpec(4, 3, 3), ConvSpec(4, 3, 3)]
    g = conv_chain_graph(12, 12, 1, specs, tail_consumers=1)
    assert [list(c.names) for c in find_chains(g)] == [["conv1", "conv2"]]


def test_float_and_dilated_convolutions_are_not_fused() -> None:
    assert find_chains(fixture("conv2_float")) == []
    g = conv_chain_graph(12, 12, 1, [ConvSpec(4, 3, 3), ConvSpec(4, 3, 3), ConvSpec(4, 3, 3)])
    dilated = g.with_nodes([n.with_attrs(dilations=(2, 2)) if n.name == "conv1" else n
                            for n in g.nodes])
    assert find_chains(dilated) == []
    assert g.tensor("x").dtype is DType.INT8


# -- rings and the schedule -------------------------------------------------------------------
def test_ring_bytes_are_kh_rows_of_each_intermediate() -> None:
    (a,) = find_chains(fixture("model_a_int8"))
    assert ring_bytes(a) == 3 * 26 * 16
    assert ring_bytes(a, element_bytes=2) == 2 * 3 * 26 * 16
    (d,) = find_chains(fixture("dwsep_int8"))
    assert ring_bytes(d) == 3 * 14 * 8 + 1 * 14 * 8  # DW 3x3 ring, then PW 1x1 ring


def _needed_rows(geom: object, out_rows: list[int]) -> list[int]:
    """Plain-integer oracle: input rows inside the map that some output row's window reads."""
    need: set[int] = set()
    for oy in out_rows:
        top = oy * geom.sh - geom.pads[0]  # type: ignore[attr-defined]
        need.update(r for r in range(top, top + geom.kh)  # type: ignore[attr-defined]
                    if 0 <= r < geom.in_hwc[0])  # type: ignore[attr-defined]
    return sorted(need)


@pytest.mark.parametrize("specs", [
    [ConvSpec(8, 5, 5, (2, 2), (2, 1, 1, 2)), ConvSpec(0, 3, 3, (1, 1), (1, 1, 1, 1), True),
     ConvSpec(6, 1, 1, (2, 1)), ConvSpec(4, 3, 3, (2, 2), (0, 1, 2, 0))],
    [ConvSpec(4, 3, 3), ConvSpec(4, 5, 5, (1, 1), (2, 2, 2, 2)), ConvSpec(2, 1, 1, (3, 3))],
    [ConvSpec(4, 1, 1, (2, 2)), ConvSpec(4, 3, 3, (2, 2), (1, 0, 0, 1))],
])
def test_schedule_produces_exactly_the_needed_rows_in_order(specs: list[ConvSpec]) -> None:
    g = conv_chain_graph(23, 19, 2, specs)
    (chain,) = find_chains(g)
    steps = row_schedule(chain)
    per_member = [[s.row for s in steps if s.member == k] for k in range(len(chain))]
    assert per_member[-1] == list(range(chain.geoms[-1].out_hwc[0]))
    for k in range(len(chain) - 1, 0, -1):
        assert per_member[k - 1] == _needed_rows(chain.geoms[k], per_member[k])
    for step in steps:  # the hoisted source rows/slots of each step
        geom = chain.geoms[step.member]
        top = step.row * geom.sh - geom.pads[0]
        for ky, src in enumerate(step.sources):
            r = top + ky
            if not 0 <= r < geom.in_hwc[0]:
                assert src == -1
            elif step.member == 0:
                assert src == r
            else:
                assert src == r % min(geom.kh, geom.in_hwc[0])


# -- apply_fusion and the arena ---------------------------------------------------------------
def test_fused_graph_validates_and_hides_the_intermediates() -> None:
    g = fixture("conv2_int8")
    (chain,) = find_chains(g)
    fg = apply_fusion(g, [chain], "ring_hoisted")
    node = fg.nodes[0]
    assert node.op == "FusedConvChain" and len(fg.nodes) == len(g.nodes) - 1
    assert node.inputs[0] == g.inputs[0] and node.outputs == chain.members[-1].outputs
    assert chain.intermediates[0].name not in fg.tensors
    plan = plan_graph(fg)
    assert chain.intermediates[0].name not in plan.offsets
    assert plan.offsets.keys() >= {f"scratch:{node.name}"}
    # the Cortex-M generator's kernels report their own scratch: no double counting there
    assert all(not b.name.startswith("scratch:") for b in buffers_with_scratch(fg, []))
    with pytest.raises(GraphValidationError, match="unknown fusion variant"):
        apply_fusion(g, [chain], "ring_magic")


ARENAS = {  # model: (unfused, fused) bytes, greedy planner, 16-byte alignment
    # rings are int16 (RING_ELEMENT_BYTES): 2 bytes per element
    "model_a_int8": (29248, 784 + 24 * 24 * 32 + 2 * 3 * 26 * 16),
    "model_b_int8": (40064, 784 + 24 * 24 * 32 + 2 * 3 * 26 * 32),
    "model_c_int8": (18816, 784 + 28 * 28 * 16 + 2 * 3 * 28 * 8),
    "conv2_int8": (29248, 24 * 24 * 32 + 12 * 12 * 32),  # now the MaxPool step is the peak
    "dwsep_int8": (4704, 4816),  # int16 rings: fusing dwsep costs RAM (see the planner)
}


@pytest.mark.parametrize("name", sorted(ARENAS))
def test_fused_arena(name: str) -> None:
    g = fixture(name)
    unfused, fused = ARENAS[name]
    assert plan_graph(g).peak_bytes == unfused
    assert plan_graph(apply_fusion(g, find_chains(g))).peak_bytes == fused


def test_model_b_reference_plan_is_39_6_percent_below_layer_by_layer() -> None:
    g = fixture("model_b_int8")
    unfused = plan_graph(g).peak_bytes
    fused = plan_graph(apply_fusion(g, find_chains(g))).peak_bytes
    # docs/fusion.md's reference-plan table states -39.6% for B (int16 rings: 24,208 B of
    # 40,064 B); the Cortex-M arena's -40.5% is fusion_variants.json's, with kernel scratch
    assert f"{100 * (fused / unfused - 1):+.1f}%" == "-39.6%"


def test_model_a_fused_arena_is_only_what_must_exist() -> None:
    # A's output map alone (18,432 B) is 63% of its unfused arena, so 40% below cannot be
    # reached while the output lives in the arena; fused, the arena is input + output + ring.
    g = fixture("model_a_int8")
    (chain,) = find_chains(g)
    fused = plan_graph(apply_fusion(g, [chain])).peak_bytes
    assert fused == chain.input.nbytes + chain.output.nbytes + ring_bytes(chain, 2)


# -- the planner ------------------------------------------------------------------------------
def test_planner_none_and_all() -> None:
    g = fixture("model_a_int8")
    none = plan_fusion(g, "none")
    assert none.chains == () and none.graph is g and none.arena_bytes == 29248
    every = plan_fusion(g, "all")
    assert [c.names for c in every.chains] == [("conv1", "conv2")]
    assert every.arena_bytes == plan_graph(every.graph).peak_bytes == 21712
    with pytest.raises(PlanError, match=r"21712 bytes.*20000 bytes"):
        plan_fusion(g, "all", ram_budget=20000)


def test_auto_prefers_speed_and_fuses_only_when_the_budget_needs_it() -> None:
    g = fixture("model_a_int8")
    slow_fusion = {"conv1": 1000, "conv2": 9000, ("conv1", "conv2"): 12000}
    free = plan_fusion(g, "auto", cost=slow_fusion)
    assert free.chains == () and free.cycles == 10000
    tight = plan_fusion(g, "auto", ram_budget=25000, cost=slow_fusion)
    assert [c.names for c in tight.chains] == [("conv1", "conv2")] and tight.cycles == 12000
    assert plan_graph(tight.graph).peak_bytes <= 25000
    # analytic costs: the pair variant is assumed faster, so auto fuses without a budget
    assert [c.names for c in plan_fusion(g, "auto").chains] == [("conv1", "conv2")]


def test_impossible_budget_names_both_numbers() -> None:
    g = fixture("model_a_int8")
    with pytest.raises(PlanError, match=r"budget of 1000 bytes; the smallest arena is 21712"):
        plan_fusion(g, "auto", ram_budget=1000)
    with pytest.raises(PlanError, match=r"bound of 10 cycles; the fastest takes"):
        plan_fusion(g, "auto", latency_bound=10)


def _long_graph() -> Graph:
    specs = [ConvSpec(8, 3, 3, (1, 1), (1, 1, 1, 1)), ConvSpec(16, 3, 3, (1, 1), (1, 1, 1, 1)),
             ConvSpec(16, 3, 3, (1, 1), (1, 1, 1, 1)), ConvSpec(8, 3, 3, (1, 1), (1, 1, 1, 1)),
             ConvSpec(4, 3, 3, (1, 1), (1, 1, 1, 1))]
    return conv_chain_graph(16, 16, 1, specs)


@pytest.mark.parametrize("budget", [None, 8000, 6900, 5900])
def test_auto_is_optimal_over_every_sub_chain_split(budget: int | None) -> None:
    g = _long_graph()
    (chain,) = find_chains(g)
    # fusing costs 5% extra per chain: auto must fuse the least it can within the budget
    cost: dict[object, float] = {m.name: 1000.0 * (i + 1) for i, m in enumerate(chain.members)}
    for a, b in itertools.combinations(range(len(chain) + 1), 2):
        if b - a >= 2:
            sub = chain.sub(a, b)
            cost[sub.names] = 1.05 * sum(cost[n] for n in sub.names) + 100

    def cycles(segs: tuple) -> float:
        fused = {n for s in segs for n in s.names}
        return (sum(v for k, v in cost.items() if isinstance(k, str) and k not in fused)
                + sum(cost[s.names] for s in segs))

    # independent brute force over every split, each arena planned from scratch
    feasible = []
    for segs in segmentations(chain):
        arena = plan_graph(apply_fusion(g, segs)).peak_bytes
        if budget is None or arena <= budget:
            feasible.append((cycles(segs), arena))
    decision = plan_fusion(g, "auto", ram_budget=budget, cost=cost)
    assert (decision.cycles, decision.arena_bytes) == min(feasible)
    assert decision.candidates == 2 ** (len(chain) - 1)
    assert plan_graph(decision.graph).peak_bytes == decision.arena_bytes
    if budget is not None:
        assert decision.arena_bytes <= budget


def test_latency_bound_minimises_the_arena() -> None:
    g = _long_graph()
    (chain,) = find_chains(g)
    cost = {m.name: 1000.0 for m in chain.members}
    unfused = plan_fusion(g, "none", cost=cost)
    loose = plan_fusion(g, "auto", latency_bound=1e9, cost=cost)
    smallest = min(plan_graph(apply_fusion(g, s)).peak_bytes for s in segmentations(chain))
    assert loose.arena_bytes == smallest < unfused.arena_bytes
    exact = plan_fusion(g, "auto", latency_bound=unfused.cycles, cost={
        **cost, **{c.names: 1e6 for s in segmentations(chain) for c in s}})
    assert exact.chains == ()
