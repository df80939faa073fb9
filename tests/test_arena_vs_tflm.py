"""edgenn's Cortex-M4 arena is no larger than TFLite Micro's on every model of the repository.

For each .tflite file of tests/fixtures/, zoo/ and ../shared/models/mlperf_tiny/ (skipped when
absent) that both runtimes run, the arena the generated Cortex-M4 firmware allocates (its
tensors, each kernel's scratch and in-place layers: ``inspection.target_memory``, the number
``inspect`` prints, planned without building; the build's manifest holds the same unless the
flash policy swaps a layer's kernel, and the last test builds the model that was above) is
compared with the bytes TFLite Micro's recording allocator reports after one inference of the
same file (``oracles.tflm.tflm_arena_bytes``). TFLite Micro's figure also holds its own
records, so edgenn being smaller is the expected outcome, not a tautology: a kernel that keeps
a scratch copy of a large tensor alive beside it (the FullyConnected that widened its whole
4,000-byte input into 8,000 B of int16 did, on TFLite Micro's own micro_speech model) fails it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import load_model
from edgenn.errors import EdgennError
from edgenn.inspection import kernel_calls, target_memory

ROOT = Path(__file__).resolve().parents[1]
MLPERF = ROOT.parent / "shared" / "models" / "mlperf_tiny"
MODELS = sorted((ROOT / "tests" / "fixtures").rglob("*.tflite")) + sorted(
    (ROOT / "zoo").rglob("*.tflite")) + sorted(MLPERF.glob("*.tflite"))


def _label(path: Path) -> str:
    return str(path.relative_to(ROOT.parent if path.is_relative_to(MLPERF) else ROOT))


def test_the_corpus_is_there() -> None:
    """The sweep below cannot pass by finding nothing."""
    names = {p.name for p in MODELS}
    assert {"micro_speech_quantized.tflite", "model_a_int8.tflite"} <= names


@pytest.mark.parametrize("path", MODELS, ids=_label)
def test_cortexm4_arena_at_most_tflite_micros(path: Path) -> None:
    tflm = pytest.importorskip("edgenn.oracles.tflm")
    pytest.importorskip("tflite_micro")
    graph = load_model(path)
    calls = kernel_calls(graph, "cortex-m4")
    if any(c is None for c in calls):
        pytest.skip("a layer has no cortex-m4 kernel")
    _, arena = target_memory(graph, "cortex-m4", calls)
    try:
        theirs = tflm.tflm_arena_bytes(path.read_bytes())
    except EdgennError as err:  # e.g. float16 weights, which TFLite Micro does not load
        pytest.skip(f"TFLite Micro does not run it: {err}")
    assert arena <= theirs, f"{path.name}: edgenn's arena {arena:,} B > TFLite Micro's {theirs:,} B"


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_micro_speech_build_fits_tflite_micros_arena_bit_exactly() -> None:
    """The model that was above, built as a user builds it: the manifest's arena (the one the
    firmware allocates) within TFLite Micro's, outputs equal to TFLite Micro's."""
    tflm = pytest.importorskip("edgenn.oracles.tflm")
    pytest.importorskip("tflite_micro")
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    path = ROOT / "zoo" / "tflm_upstream" / "micro_speech_quantized.tflite"
    data = path.read_bytes()
    graph = load_model(path)
    exe = compile_model(graph, target="cortex-m4")
    assert exe.manifest["arena_bytes"] <= tflm.tflm_arena_bytes(data)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(3, *graph.external_shape(graph.inputs[0])[1:]),
                     dtype=np.int8)
    want = tflm.tflm_run(data, x)[0]
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]).reshape(want.shape), want)
