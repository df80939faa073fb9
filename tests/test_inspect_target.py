"""`edgenn inspect --target CORE`: the kernel per layer and the unsupported layers, before any
build (the registry's answer, not a guess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgenn.backends.cortexm.kernel import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.cli.main import main
from edgenn.frontends.tflite import load_tflite

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tflite"


def _inspect(capsys: pytest.CaptureFixture[str], name: str, core: str) -> dict:  # type: ignore[type-arg]
    assert main(["inspect", str(FIXTURES / name), "--target", core, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_float_model_on_cortex_m4_lists_what_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    info = _inspect(capsys, "conv2_float.tflite", "cortex-m4")
    assert info["target"] == "cortex-m4"
    assert [layer["kernel"] for layer in info["layers"]] == [None, None, None, "reshape", None]
    assert info["unsupported"].startswith("4 of 5 layers are not supported by cortex-m4: ")
    assert "(Conv2D, float32)" in info["unsupported"]
    assert "(FullyConnected, float32)" in info["unsupported"]


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m0plus"])
def test_int8_model_gets_the_registry_kernels(capsys: pytest.CaptureFixture[str],
                                              core: str) -> None:
    info = _inspect(capsys, "model_a_int8.tflite", core)
    g = load_tflite((FIXTURES / "model_a_int8.tflite").read_bytes(), "a")
    want = [select_kernel(n, g, get_core(core)).name for n in g.nodes]
    assert [layer["kernel"] for layer in info["layers"]] == want
    assert info["unsupported"] is None
