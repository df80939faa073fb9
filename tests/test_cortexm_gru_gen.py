"""The generated float32 GRU of FPU cores (kernels/gru_f32_gen.py) against onnxruntime and
the reference runtime, within float tolerance: both ``linear_before_reset`` forms, clip,
no bias, time- and batch-major layouts, several batch rows, hidden sizes that leave partial
blocks in both phases (4 and 8 units per block), the initial state as a constant or a graph
input. Every case is checked to run the generated kernel.
"""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("onnxruntime")

from edgenn.api import compile_model  # noqa: E402
from edgenn.backends.cortexm.kernels.gru_f32_gen import GeneratedGruF32  # noqa: E402
from edgenn.backends.cortexm.selection import select_kernel  # noqa: E402
from edgenn.backends.cortexm.targets import CORES  # noqa: E402
from edgenn.frontends.onnx import load_onnx  # noqa: E402
from tests.test_recurrent_onnx import Rnn, _assert_close, _onnxruntime  # noqa: E402

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")

GRUS = [
    Rnn("GRU", 5, 1, 3, 4, outputs=(True, True)),
    Rnn("GRU", 6, 2, 9, 11, initial="const", outputs=(True, True), seed=11),
    Rnn("GRU", 5, 1, 17, 13, outputs=(True, True), seed=12,
        attrs=(("linear_before_reset", 1),)),
    Rnn("GRU", 4, 1, 3, 5, layout=1, initial="input", outputs=(True, True), seed=13),
    Rnn("GRU", 6, 1, 8, 1, bias=False, outputs=(False, True), seed=14,
        attrs=(("clip", 0.5),)),
    Rnn("GRU", 5, 3, 24, 20, outputs=(True, True), initial="const", seed=15,
        attrs=(("linear_before_reset", 1), ("clip", 0.9))),
]


def test_no_fpu_has_no_generated_gru() -> None:
    model, _ = GRUS[0].model()
    graph = load_onnx(model.SerializeToString(), name="gru.onnx")
    node = graph.nodes[0]
    assert not GeneratedGruF32().matches(node, graph, CORES["cortex-m0plus"])
    assert select_kernel(node, graph, CORES["cortex-m4"]).name == GeneratedGruF32.name


@needs_arm
@pytest.mark.parametrize("rnn", GRUS, ids=lambda r: f"gru-{r.seed}")
def test_m4_gru_matches_onnxruntime_and_reference(rnn: Rnn) -> None:
    model, feeds = rnn.model()
    graph = load_onnx(model.SerializeToString(), name="gru.onnx")
    gru = [n for n in graph.nodes if n.op == "GRU"]
    assert gru and all(select_kernel(n, graph, CORES["cortex-m4"]).name
                       == GeneratedGruF32.name for n in gru)
    got = compile_model(graph, "cortex-m4").run(*feeds.values())
    _assert_close(got, _onnxruntime(rnn, feeds))
    _assert_close(got, compile_model(graph, "ref").run(*feeds.values()))
