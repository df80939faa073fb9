"""The four MLPerf Tiny reference models on the emulated Cortex-M4, as a user builds them.

Default build (flash policy on): every output equal to TFLite Micro's Python interpreter on
random inputs, flash within the default budget (int8 parameters + 48 KiB), arena no larger
than TFLite Micro's. The models live outside the repository (../shared, Apache-2.0); the
tests skip only when that folder is absent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models" / "mlperf_tiny"
NAMES = ("ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8")


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
@pytest.mark.parametrize("name", NAMES)
def test_mlperf_model_is_bit_exact_and_within_flash_and_arena(name: str) -> None:
    path = MODELS / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.backends.cortexm.flash_policy import default_budget_bytes
    from edgenn.frontends.tflite import load_tflite
    from edgenn.oracles.tflm import tflm_arena_bytes, tflm_run

    data = path.read_bytes()
    graph = load_tflite(data, path.name)
    exe = compile_cortexm(graph, "cortex-m4")
    inp = graph.inputs[0]
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(3, *graph.external_shape(inp)[1:]), dtype=np.int8)
    ours = exe.run(x)[0]
    for i in range(len(x)):
        want = tflm_run(data, x[i:i + 1])[0]
        np.testing.assert_array_equal(ours[i].reshape(want.shape[1:]), want[0])
    sizes = exe.sizes()
    assert sizes["flash"] <= default_budget_bytes(graph)
    assert sizes["arena"] <= tflm_arena_bytes(data)
