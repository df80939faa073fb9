"""Skipping is optional: a network with many skippable residual blocks compiles, runs and is
inspected exactly like one without, and skip support is planned without enumerating 2**N
configurations (issue 22, item 2; docs/skipping.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from skip_graphs import int8_inputs, quantized, residual_net

from edgenn.api import load_model
from edgenn.backends.ref import compile_ref
from edgenn.export.tflite_export import save_tflite
from edgenn.ir import Graph
from edgenn.memory.greedy import GreedyPlanner
from edgenn.passes.skip import (
    MAX_ENUMERATED_BLOCKS,
    all_configs,
    apply_skip,
    configs_up_to,
    default_configs,
    find_blocks,
    plan_for_configs,
)

MANY = (12, 20)  # both beyond MAX_ENUMERATED_BLOCKS: 2**20 plans would never finish


def _model(tmp_path: Path, n_blocks: int) -> tuple[Path, Graph]:
    """An int8 residual network of ``n_blocks`` identity blocks as a .tflite file, and the
    graph edgenn imports from that file (what a user's model goes through)."""
    path = tmp_path / f"res{n_blocks}.tflite"
    save_tflite(quantized(residual_net(n_blocks=n_blocks)), path, nhwc_io=True)
    graph = load_model(path)
    assert len(find_blocks(graph)) == n_blocks
    return path, graph


class PlanCounter:
    """Counts arena plans (every planner call of edgenn.memory's greedy planner) and fails
    fast past ``limit``, so an enumeration of 2**N configurations is an error, not a hang."""

    def __init__(self, limit: int) -> None:
        self.calls = 0
        self.limit = limit

    def wrap(self, plan: Callable[..., Any]) -> Callable[..., Any]:
        def counted(planner: GreedyPlanner, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls > self.limit:
                raise AssertionError(f"more than {self.limit} arena plans")
            return plan(planner, *args, **kwargs)
        return counted


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], PlanCounter]]:
    def start(limit: int) -> PlanCounter:
        counter = PlanCounter(limit)
        monkeypatch.setattr(GreedyPlanner, "plan", counter.wrap(GreedyPlanner.plan))
        return counter
    yield start


# ---------------------------------------------------------------------- configurations
def test_default_configurations_are_linear_beyond_the_bound() -> None:
    few = find_blocks(quantized(residual_net(n_blocks=3)))
    assert default_configs(few) == all_configs(few)  # small networks: every combination
    many = find_blocks(quantized(residual_net(n_blocks=MAX_ENUMERATED_BLOCKS + 1)))
    configs = default_configs(many)
    assert configs == configs_up_to(many, 1)
    assert len(configs) == len(many) + 1 and configs[0] == frozenset()


def test_plan_for_configs_of_twenty_blocks_plans_each_one_once(
        plans: Callable[[int], PlanCounter]) -> None:
    graph = quantized(residual_net(n_blocks=20))
    counter = plans(100)
    plan = plan_for_configs(graph)  # checked configuration by configuration inside
    assert len(plan.peak_bytes_per_config) == 21
    assert counter.calls == 21 + 1  # each configuration alone, then the union


# ----------------------------------------------------------------------------- inspect
@pytest.mark.parametrize("target", [None, "cortex-m4"])
def test_inspect_of_twenty_blocks_plans_linearly(
        tmp_path: Path, target: str | None, plans: Callable[[int], PlanCounter],
        capsys: pytest.CaptureFixture[str]) -> None:
    from edgenn.cli.main import main
    from edgenn.memory import plan_graph

    path, graph = _model(tmp_path, 20)
    counter = plans(4 * 21)
    argv = ["inspect", str(path), "--json", *(["--target", target] if target else [])]
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out)
    # one plan of the network, one per block skipped alone, one of the firmware's arena
    assert counter.calls <= 20 + 3
    blocks = info["skippable_blocks"]
    assert [b["name"] for b in blocks] == [f"block{i}" for i in range(1, 21)]
    for b in blocks:  # each block's figure is the plan of the network without that block
        skipped = apply_skip(graph, {b["name"]})
        assert b["arena_bytes_when_skipped"] == plan_graph(skipped).peak_bytes


# -------------------------------------------------------------- the Cortex-M plain path
def _has_arm_gcc() -> bool:
    from edgenn.backends.cortexm.build import find_compiler
    from edgenn.errors import ToolchainError

    try:
        find_compiler()
    except ToolchainError:
        return False
    return True


needs_arm = pytest.mark.skipif(not _has_arm_gcc(), reason="arm-none-eabi-gcc is not installed")


@needs_arm
@pytest.mark.parametrize("n_blocks", MANY)
def test_many_blocks_compile_plain_by_default_and_match_ref_and_tflm(
        tmp_path: Path, n_blocks: int, plans: Callable[[int], PlanCounter]) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model
    from edgenn.oracles.tflm import tflm_run

    path, graph = _model(tmp_path, n_blocks)
    counter = plans(10**6)  # counted, not bounded: the flash policy builds several trials
    exe = compile_model(graph, "cortex-m4", out_dir=tmp_path / "fw")
    assert "blocks" not in exe.manifest and "skip_configs" not in exe.manifest
    c_source = (tmp_path / "fw" / "model.c").read_text()
    header = (tmp_path / "fw" / "model.h").read_text()
    assert "skip_mask" not in c_source and "skip_mask" not in header
    assert "mask" not in c_source  # no mask read, no per-block test in edgenn_invoke
    # one plain arena plan per (trial) build, none per block: no skip layout was planned
    assert counter.calls < n_blocks
    x = int8_inputs(4)
    got = exe.run(x)[0]
    np.testing.assert_array_equal(got, compile_ref(graph).run(x)[0])
    np.testing.assert_array_equal(got, tflm_run(path.read_bytes(), x)[0])


@needs_arm
def test_cli_compile_of_many_blocks_is_plain_unless_asked(tmp_path: Path) -> None:
    from edgenn.cli.main import main

    path, _ = _model(tmp_path, 12)
    assert main(["compile", str(path), "--target", "cortex-m4", "-o", str(tmp_path / "a")]) == 0
    assert "skip_mask" not in (tmp_path / "a" / "res12.c").read_text()
    assert main(["compile", str(path), "--target", "cortex-m4", "-o", str(tmp_path / "b"),
                 "--skippable"]) == 0
    assert "res12_set_skip_mask" in (tmp_path / "b" / "res12.c").read_text()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["skip_configs"] == ["full", *(f"block{i}" for i in range(1, 13))]


# ------------------------------------------------------ skipping asked for on many blocks
@needs_arm
def test_skippable_many_blocks_is_a_bounded_plan(tmp_path: Path) -> None:
    """``skippable=True`` on 12 blocks plans the full network and each block alone; another
    combination is planned when named (``skip``), and refused in one line when not."""
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model
    from edgenn.errors import EdgennError

    _, graph = _model(tmp_path, 12)
    x = int8_inputs(3)
    exe = compile_model(graph, "cortex-m4", skippable=True, out_dir=tmp_path / "any")
    assert len(exe.manifest["skip_configs"]) == 13
    assert "model_set_skip_mask" in (tmp_path / "any" / "model.c").read_text()
    for config in ({"block7"}, set()):
        np.testing.assert_array_equal(exe.run(x, skip=config)[0],
                                      compile_ref(apply_skip(graph, config)).run(x)[0])
    with pytest.raises(EdgennError, match="'block2,block5' was not planned") as err:
        exe.run(x, skip="block2,block5")
    assert "\n" not in str(err.value)

    named = compile_model(graph, "cortex-m4", skip="block2,block5")
    assert "block2,block5" in named.manifest["skip_configs"]
    assert len(named.manifest["skip_configs"]) == 14
    want = compile_ref(apply_skip(graph, {"block2", "block5"})).run(x)[0]
    np.testing.assert_array_equal(named.run(x)[0], want)  # the configuration run by default


def test_skip_layout_of_twenty_blocks_plans_linearly(
        plans: Callable[[int], PlanCounter]) -> None:
    """The generator's union arena for 20 blocks, without gcc: O(N) plans, each checked."""
    from edgenn.backends.cortexm.codegen.skip import plan_skip_layout
    from edgenn.backends.cortexm.selection import select_kernel
    from edgenn.backends.cortexm.targets import get_core

    graph = quantized(residual_net(n_blocks=20))
    core = get_core("cortex-m4")
    scratch = [select_kernel(n, graph, core).prepare(n, graph, core).scratch_bytes
               for n in graph.nodes]
    counter = plans(10 * 21)
    layout = plan_skip_layout(graph, core, find_blocks(graph), scratch)
    assert len(layout.configs) == 21
    assert counter.calls <= 2 * (21 + 1) * 2  # alias and copy plans: configs + union each
    assert set(layout.peak_bytes_per_config) == set(layout.configs)


# ------------------------------------------------------------- what a build was asked for
def test_skip_support_only_when_asked() -> None:
    from edgenn.backends.cortexm.codegen.skip import skip_request
    from edgenn.errors import EdgennError

    graph = quantized(residual_net(n_blocks=12))
    for plain in (skip_request(graph), skip_request(graph, skip="none"),
                  skip_request(graph, skip=())):
        assert plain.blocks == () and plain.configs is None and plain.default == frozenset()
    asked = skip_request(graph, skippable=True)
    assert len(asked.blocks) == 12 and asked.configs is None  # default_configs, at plan time
    named = skip_request(graph, skip="block2,block5")
    assert named.default == {"block2", "block5"}
    assert named.configs == (*configs_up_to(find_blocks(graph), 1), named.default)
    listed = skip_request(graph, skip="block3", configs=[["block1", "block2"]])
    assert listed.configs == (frozenset({"block1", "block2"}), frozenset({"block3"}))
    with pytest.raises(EdgennError, match="unknown block 'block13'.*block1, block2") as err:
        skip_request(graph, skip="block13")
    assert "\n" not in str(err.value)
