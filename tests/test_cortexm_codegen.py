"""The generated Cortex-M project: builds warning-free for every core, runs bit-exact with the
reference runtime in the emulator, and fails early and clearly (RAM, toolchain, compile errors).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import edgenn
from edgenn.backends.cortexm.build import build_project
from edgenn.backends.cortexm.codegen.project import generate
from edgenn.backends.cortexm.executable import CortexMExecutable, compile_cortexm
from edgenn.backends.cortexm.targets import CORES, get_core
from edgenn.backends.ref import compile_ref
from edgenn.datasets import dataset_split
from edgenn.errors import PlanError, ToolchainError
from edgenn.evaluate import images_to_input
from edgenn.ir import Graph
from edgenn.models import shipped_model_path

FIXTURES = Path(__file__).parent / "fixtures" / "tflite"
MODELS = ["conv2", "dwsep", "resnet", "ops", "edgenn_mnist_cnn"]
N_DIGITS = 20

needs_toolchain = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                                     reason="arm-none-eabi-gcc is not installed")
pytestmark = needs_toolchain

_GRAPHS: dict[str, Graph] = {}
_EXES: dict[tuple[str, str], CortexMExecutable] = {}


def model_graph(name: str) -> Graph:
    if name not in _GRAPHS:
        if name == "edgenn_mnist_cnn":  # quantized by edgenn itself, not by TensorFlow
            graph = edgenn.load_model(shipped_model_path("mnist_cnn"))
            train, _ = dataset_split("mnist", "train")
            _GRAPHS[name] = edgenn.quantize_model(graph, images_to_input(graph, train[:100]))
        else:
            _GRAPHS[name] = edgenn.load_model(FIXTURES / f"{name}_int8.tflite")
    return _GRAPHS[name]


def executable(name: str, core: str) -> CortexMExecutable:
    if (name, core) not in _EXES:
        # why 64 KiB: conv2's 29 KiB arena plus the default 8 KiB stack exceed the 32 KiB of
        # the reference Cortex-M0+ board
        ram_kb = 64 if core == "cortex-m0plus" else None
        _EXES[name, core] = compile_cortexm(model_graph(name), core, ram_kb=ram_kb)
    return _EXES[name, core]


def digits(graph: Graph, n: int) -> np.ndarray:
    test, _ = dataset_split("mnist", "test")
    if graph.tensor(graph.inputs[0]).size == 28 * 28:
        x = images_to_input(graph, test[:n])
        if x.dtype == np.int8:
            x = x.reshape(n, *graph.external_shape(graph.inputs[0])[1:])
        return x
    # the operator-coverage model takes 8x8x3: real digit pixels, cropped and stacked
    shape = graph.external_shape(graph.inputs[0])
    crop = test[:n, 10:10 + shape[1], 10:10 + shape[2]].astype(np.int16) - 128
    return np.repeat(crop[..., None], shape[3], axis=3).astype(np.int8)


@pytest.mark.parametrize("core", list(CORES))
@pytest.mark.parametrize("model", MODELS)
def test_outputs_identical_to_reference(model: str, core: str) -> None:
    graph = model_graph(model)
    x = digits(graph, N_DIGITS)
    got = executable(model, core).run(x)
    want = compile_ref(graph).run(x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert int(np.count_nonzero(g != w)) == 0


@pytest.mark.parametrize("core", list(CORES))
def test_project_builds_with_wall_wextra_werror(core: str, tmp_path: Path) -> None:
    project = generate(model_graph("ops"), get_core(core), tmp_path)
    assert {"-Wall", "-Wextra", "-Werror"} <= set(project.cflags)
    if shutil.which("make"):  # the Makefile alone builds it too
        res = subprocess.run(["make", "-s"], cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert res.stderr == ""  # not even a warning
    else:
        build_project(project)
    # the build products (objects, ELF, map) are in build/, by make and edgenn alike
    assert (tmp_path / "build" / "model.elf").stat().st_size > 0
    assert (tmp_path / "build" / "model.map").is_file()
    assert not list(tmp_path.glob("*.o"))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["core"] == core and manifest["arena_bytes"] > 0
    assert len(manifest["layers"]) == len(model_graph("ops").nodes)
    model_c = (tmp_path / "model.c").read_text()
    assert len(re.findall(r"EDGENN_MODEL_MARK\(\d+u\);", model_c)) == len(manifest["layers"]) + 1


def test_bench_attributes_cycles_to_layers() -> None:
    exe = executable("conv2", "cortex-m4")
    b = exe.bench(digits(model_graph("conv2"), 1))
    assert b.total_cycles is not None and len(b.layers) == len(model_graph("conv2").nodes)
    layer_sum = sum(layer.cycles or 0 for layer in b.layers)
    assert 0.95 * b.total_cycles <= layer_sum <= b.total_cycles
    assert b.layers[0].macs == 26 * 26 * 16 * 9
    assert b.arena_bytes <= 29824  # CMSIS-NN's layer-by-layer peak for this shape (model A)
    assert b.flash_bytes > 0 and b.ram_bytes >= b.arena_bytes
    m7 = executable("conv2", "cortex-m7").bench(digits(model_graph("conv2"), 1))
    assert m7.total_cycles is None and m7.total_instructions > 0


def test_arena_too_big_for_ram_is_a_plan_error_at_compile_time(tmp_path: Path) -> None:
    with pytest.raises(PlanError) as err:
        compile_cortexm(model_graph("conv2"), "cortex-m4", out_dir=tmp_path, ram_kb=16)
    msg = str(err.value)
    assert "29,824" in msg and "16 KiB" in msg and "\n" not in msg
    assert not (tmp_path / "build" / "model.elf").exists()


def test_missing_toolchain_is_one_line_with_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without arm-none-eabi-gcc
    with pytest.raises(ToolchainError) as err:
        compile_cortexm(model_graph("dwsep"), "cortex-m4", out_dir=tmp_path / "p")
    msg = str(err.value)
    assert "\n" not in msg
    assert "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" in msg


def test_compile_error_names_the_source_location(tmp_path: Path) -> None:
    project = generate(model_graph("dwsep"), get_core("cortex-m4"), tmp_path)
    (tmp_path / "main.c").write_text("int main(void)\n{\n    return undefined_name;\n}\n")
    with pytest.raises(ToolchainError) as err:
        build_project(project)
    assert f"{tmp_path / 'main.c'}:3:" in str(err.value)
