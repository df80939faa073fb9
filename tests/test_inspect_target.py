"""`edgenn inspect --target CORE`: the kernel per layer and the unsupported layers, before any
build (the registry's answer, not a guess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.cli.main import main
from edgenn.frontends.tflite import load_tflite

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"


def _inspect(capsys: pytest.CaptureFixture[str], name: str, core: str) -> dict:  # type: ignore[type-arg]
    assert main(["inspect", str(FIXTURES / name), "--target", core, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_float_model_on_cortex_m4_gets_float_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    info = _inspect(capsys, "conv2_float.tflite", "cortex-m4")
    assert info["target"] == "cortex-m4"
    assert [layer["kernel"] for layer in info["layers"]] == [
        "edgenn_conv_f32", "edgenn_conv_f32", "edgenn_maxpool_f32", "edgenn_copy_blocks",
        "edgenn_fc_f32"]
    assert info["unsupported"] is None


def test_inspect_lists_what_cannot_run(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """A float RESIZE_BILINEAR (no Cortex-M kernel) beside a float ADD (one)."""
    from tests.conformance.cases import by_op
    from tests.conformance.spec import model_bytes

    table = {c.id: c for cases in by_op().values() for c in cases}
    cases = [table["RESIZE_BILINEAR:float_up"], table["ADD:float_broadcast"]]
    model = tmp_path / "mixed_support.tflite"
    model.write_bytes(model_bytes(cases))
    assert main(["inspect", str(model), "--target", "cortex-m4", "--json"]) == 0
    info = dict(json.loads(capsys.readouterr().out))
    assert info["unsupported"].startswith("1 of 2 layers are not supported by cortex-m4: ")
    assert "(Resize, " in info["unsupported"]


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m0plus"])
def test_int8_model_gets_the_registry_kernels(capsys: pytest.CaptureFixture[str],
                                              core: str) -> None:
    info = _inspect(capsys, "model_a_int8.tflite", core)
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    # the name manifest.json and ``bench`` show: the call's C symbol
    want = [select_kernel(n, g, get_core(core)).prepare(n, g, get_core(core)).kernel_name
            for n in g.nodes]
    assert [layer["kernel"] for layer in info["layers"]] == want
    assert info["unsupported"] is None


# ------------------------------------------------------------------ per-layer RAM and flash
def test_flash_and_macs_per_layer_are_the_kernels_constants(
        capsys: pytest.CaptureFixture[str]) -> None:
    from edgenn.analysis import node_macs
    from edgenn.backends.cortexm.flash_policy import constant_bytes

    info = _inspect(capsys, "dwsep_int8.tflite", "cortex-m4")
    g = load_tflite((FIXTURES / "dwsep_int8.tflite").read_bytes(), "d")
    core = get_core("cortex-m4")
    want = [constant_bytes(select_kernel(n, g, core).prepare(n, g, core)) for n in g.nodes]
    assert [layer["flash_bytes"] for layer in info["layers"]] == want
    assert info["target_flash_bytes"] == sum(want) > 0
    assert [layer["macs"] for layer in info["layers"]] == [node_macs(g, n) for n in g.nodes]


@pytest.mark.parametrize("name", ["conv2_int8.tflite", "resnet_int8.tflite"])
def test_inspect_predicts_the_build(capsys: pytest.CaptureFixture[str], name: str) -> None:
    """Before any build, the arena and the per-layer constants of the firmware a build with
    int8 weights makes (resnet: skippable blocks, so the skip-capable arena plan)."""
    from edgenn.api import compile_model
    from edgenn.backends.cortexm.flash_policy import constant_bytes

    info = _inspect(capsys, name, "cortex-m4")
    g = load_tflite((FIXTURES / name).read_bytes(), name)
    exe = compile_model(g, target="cortex-m4")
    assert info["target_arena_bytes"] == exe.sizes()["arena"]
    assert [layer["flash_bytes"] for layer in info["layers"]] == \
        [constant_bytes(c) for c in exe.project.calls]


def test_ram_per_layer_is_bounded_by_its_buffers_and_the_arena(
        capsys: pytest.CaptureFixture[str]) -> None:
    info = _inspect(capsys, "resnet_int8.tflite", "cortex-m4")
    g = load_tflite((FIXTURES / "resnet_int8.tflite").read_bytes(), "r")
    for node, layer in zip(g.nodes, info["layers"], strict=True):
        out = g.tensor(node.outputs[0]).nbytes
        assert out <= layer["io_bytes"]
        assert layer["io_bytes"] + layer["scratch_bytes"] <= layer["ram_bytes"]
        assert layer["ram_bytes"] <= info["target_arena_bytes"]
    # the residual Add reads two live tensors and writes a third: all alive at its step
    adds = [layer for layer in info["layers"] if layer["op"] == "Add"]
    assert adds and all(a["io_bytes"] >= 2 * 14 * 14 * 16 for a in adds)


def test_unsupported_layers_have_no_flash_and_the_json_keeps_its_keys(
        capsys: pytest.CaptureFixture[str]) -> None:
    info = _inspect(capsys, "conv2_float.tflite", "cortex-m4")
    assert [layer["flash_bytes"] is None for layer in info["layers"]] == \
        [layer["kernel"] is None for layer in info["layers"]]
    old = {"model", "inputs", "outputs", "layers", "total_macs", "param_bytes", "arena_bytes",
           "planner", "skippable_blocks", "target", "unsupported"}
    assert old <= set(info)
    assert {"name", "op", "shape", "dtype", "macs", "param_bytes", "kernel"} <= \
        set(info["layers"][0])


def test_table_has_ram_flash_and_a_totals_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(FIXTURES / "dwsep_int8.tflite"), "--target", "cortex-m4"]) == 0
    out = capsys.readouterr().out
    assert "RAM B" in out and "flash B" in out and "total" in out and "peak" in out
    assert main(["inspect", str(FIXTURES / "dwsep_int8.tflite")]) == 0
    plain = capsys.readouterr().out
    assert "flash B" not in plain and "total" in plain


def test_inspect_names_a_kernel_as_its_build_does(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """One name per kernel: a plug-in that emits one of several C functions (the SIMD Add's
    table modes, a Relu that requantizes) is shown by the function the build calls, as
    manifest.json and ``bench`` show it, not by the plug-in's registry name."""
    from edgenn.backends.cortexm.codegen.project import generate

    g = load_tflite((FIXTURES / "ops_int8.tflite").read_bytes(), "ops")
    info = _inspect(capsys, "ops_int8.tflite", "cortex-m4")
    shown = [layer["kernel"] for layer in info["layers"]]
    project = generate(g, get_core("cortex-m4"), tmp_path / "p")
    assert shown == [layer["kernel"] for layer in project.manifest["layers"]]
    assert "edgenn_add_s8_gen_dsp" in shown  # the registry calls it edgenn_add_s8_dsp
