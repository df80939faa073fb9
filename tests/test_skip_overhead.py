"""benchmarks/skip_overhead.py's core on a small model: skip support taken out ("no blocks")
gives the same plain Cortex-M firmware as shipped, and the check it makes can fail. Also the
unvalidated per-block plan of ``inspect`` (``config_peak``) against the validated one.
No timed assertions: the benchmark measures times, these tests check what it compares."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from onnx import ModelProto
from skip_graphs import nested_net, quantized, residual_net

from edgenn.api import load_model
from edgenn.memory import plan_graph
from edgenn.passes.skip import all_configs, apply_skip, find_blocks
from edgenn.passes.skip.memory import config_peak

ROOT = Path(__file__).resolve().parent.parent
N_BLOCKS = 12  # beyond MAX_ENUMERATED_BLOCKS, as the benchmark's models
FAST = ("--fuse", "none")  # why: no fusion trial builds, the test stays under 20 s


def _benchmark() -> ModuleType:
    name = "skip_overhead"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "skip_overhead.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _has_arm_gcc() -> bool:
    from edgenn.backends.cortexm.build import find_compiler
    from edgenn.errors import ToolchainError

    try:
        find_compiler()
    except ToolchainError:
        return False
    return True


needs_arm = pytest.mark.skipif(not _has_arm_gcc(), reason="arm-none-eabi-gcc is not installed")


def test_without_skip_support_finds_no_block_anywhere_and_is_undone() -> None:
    import edgenn.backends.cortexm.codegen.skip as codegen_skip
    import edgenn.inspection as inspection
    import edgenn.passes.skip as skip

    bench = _benchmark()
    graph = quantized(residual_net(n_blocks=N_BLOCKS))
    with bench.without_skip_support():
        for module in (skip, inspection, codegen_skip):
            assert module.find_blocks(graph) == []
        assert inspection.skippable_blocks(graph) == []
        assert codegen_skip.skip_request(graph, skippable=True).blocks == ()
    for module in (skip, inspection, codegen_skip):
        assert len(module.find_blocks(graph)) == N_BLOCKS


@needs_arm
def test_plain_firmware_is_identical_without_skip_support(tmp_path: Path) -> None:
    pytest.importorskip("unicorn")
    from edgenn.export.tflite_export import save_tflite

    bench = _benchmark()
    path = tmp_path / "res.tflite"
    save_tflite(quantized(residual_net(n_blocks=N_BLOCKS)), path, nhwc_io=True)
    assert len(find_blocks(load_model(path))) == N_BLOCKS
    row = bench.measure("res", path, tmp_path / "work", runs=1,
                        stages=("inspect", "compile", "bench"), in_process=True,
                        build_flags=FAST)
    assert row["blocks"] == N_BLOCKS
    assert row["firmware"]["differences"] == [] and row["firmware"]["identical"]
    assert row["firmware"]["total_cycles"] > 0 and row["firmware"]["files"] > 3
    stages = row["stages"]
    for stage in ("compile", "bench"):  # the plain path looks for no block at all
        assert stages[stage]["shipped"]["detections"] == 0
        assert stages[stage]["shipped"]["plans"] == stages[stage]["without"]["plans"]
    # inspect's one extra figure a block: the arena with that block alone skipped
    assert stages["inspect"]["shipped"]["plans"] == stages["inspect"]["without"]["plans"] + N_BLOCKS

    # the comparison can fail: skip-capable firmware of the same model is told apart
    asked = tmp_path / "asked"
    for stage in ("compile", "bench"):
        bench.run_stage(bench.stage_argv(stage, path, asked, (*FAST, "--skippable")), "shipped")
    diff = bench.differences(bench.firmware_facts(tmp_path / "work" / "shipped"),
                             bench.firmware_facts(asked))
    assert any(d.startswith("file res.c") for d in diff), diff


@pytest.mark.parametrize("make", [lambda: residual_net(n_blocks=3),
                                  lambda: residual_net(n_blocks=3, relu_after_add=False),
                                  nested_net], ids=["relu", "plain-add", "nested"])
@pytest.mark.parametrize("shared_ranges", [True, False], ids=["alias", "requantize"])
def test_unvalidated_config_peak_is_the_validated_plan(make: Callable[[], ModelProto],
                                                       shared_ranges: bool) -> None:
    """``config_peak`` plans ``apply_skip(..., validate=False)``: for every configuration the
    figure is the validated graph's, and that graph is valid (validation changed nothing)."""
    graph = quantized(make(), skippable_blocks=shared_ranges)
    blocks = find_blocks(graph)
    assert blocks
    for config in all_configs(blocks):
        unchecked = apply_skip(graph, config, blocks, validate=False)
        assert unchecked.validate() is unchecked
        want = plan_graph(apply_skip(graph, config, blocks)).peak_bytes
        assert config_peak(graph, config, blocks) == want
