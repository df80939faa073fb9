"""``--input-buffer caller``: the model's inputs read in place from the caller's buffers.

The oracle is TFLite Micro on the same model exported to .tflite (the exporter and the
reference kernels are checked against it in test_tflite_export.py). What is asserted: the
outputs equal TFLM's, the input buffer holds the same bytes after every invoke (a layer that
may run in place, a depthwise convolution with multiplier 1, is the first layer: in the
default build it does write over its input, which shows the check can see a write), the arena
leaves the input out (the caller's build is smaller by the input where the input is at the
peak; the application's RAM holds it instead), the C API checks its arguments, and the
default build's API is unchanged. VWW at half its layer-by-layer arena is slow.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.codegen.memory import firmware_arena_bytes, plan_arena
from edgenn.backends.cortexm.executable import CortexMExecutable
from edgenn.backends.cortexm.targets import get_core
from edgenn.cli.main import main
from edgenn.errors import EdgennError
from edgenn.export import export_tflite
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.memory import reshape_aliases
from edgenn.oracles.tflm import tflm_run
from edgenn.passes.fusion import find_chains

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cortexm_fused import chain_graph  # noqa: E402

CORE = "cortex-m4"
SAME, VALID = (1, 1, 1, 1), (0, 0, 0, 0)
VWW = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "mlperf_tiny" / \
    "vww_96_int8.tflite"


def in_place_model() -> Graph:
    """Depthwise 3x3 (multiplier 1: its kernel may write its output over its input) -> 1x1."""
    return chain_graph(np.random.default_rng(5), (12, 12), 8,
                       [(8, (3, 3), (1, 1), SAME, Activation.RELU, True),
                        (16, (1, 1), (1, 1), VALID, Activation.NONE, False)])


def peak_model() -> Graph:
    """A stride-2 convolution first: the input is at the arena's peak when it is in it."""
    return chain_graph(np.random.default_rng(9), (16, 16), 8,
                       [(8, (3, 3), (2, 2), SAME, Activation.RELU, False),
                        (4, (1, 1), (1, 1), VALID, Activation.RELU6, False)])


def input_bytes_after(exe: CortexMExecutable) -> bytes:
    """The bytes of input 0 where the firmware keeps it, read after the last invoke."""
    spec = exe.manifest["inputs"][0]
    if spec.get("in_arena", True):
        return exe.machine.read(str(exe.manifest["arena_symbol"]), int(spec["bytes"]),
                                int(spec["offset"]))
    return exe.machine.read(str(spec["symbol"]), int(spec["bytes"]))


def status(value: int) -> int:
    return value - (1 << 32) if value >> 31 else value


@pytest.mark.parametrize("fuse", ["none", "all"])
def test_outputs_exact_and_input_untouched(fuse: str) -> None:
    g = in_place_model()
    x = np.random.default_rng(1).integers(-128, 128, size=(3, 12, 12, 8), dtype=np.int8)
    (want,) = tflm_run(export_tflite(g), x)
    exe = compile_model(g, target=CORE, fuse=fuse, input_buffer="caller")
    assert any(n.op == "FusedConvChain" for n in exe.graph.nodes) == (fuse == "all")
    (got,) = exe.run(x)
    assert np.count_nonzero(got != want) == 0
    assert input_bytes_after(exe) == x[-1].tobytes()


def test_the_default_build_writes_over_its_input_the_caller_build_does_not() -> None:
    """Why the check above means something: the same model with its input in the arena runs
    its first layer in place, over the input."""
    g = in_place_model()
    x = np.random.default_rng(2).integers(-128, 128, size=(1, 12, 12, 8), dtype=np.int8)
    (want,) = tflm_run(export_tflite(g), x)
    for buffer, untouched in (("arena", False), ("caller", True)):
        exe = compile_model(g, target=CORE, fuse="none", input_buffer=buffer)
        (got,) = exe.run(x)
        assert np.count_nonzero(got != want) == 0
        assert (input_bytes_after(exe) == x[0].tobytes()) == untouched


def test_the_arena_leaves_the_input_out() -> None:
    g = peak_model()
    core = get_core(CORE)
    x_bytes = g.tensor("x").nbytes
    arena = firmware_arena_bytes(g, core)
    caller = firmware_arena_bytes(g, core, input_buffer="caller")
    assert caller + x_bytes <= arena  # the input was at the peak
    plan = plan_arena(g, [0] * len(g.nodes), external=frozenset({"x"}))
    assert "x" not in plan.offsets and all(b.name != "x" for b in plan.buffers)
    exe = compile_model(g, target=CORE, fuse="none", input_buffer="caller")
    default = compile_model(g, target=CORE, fuse="none")
    assert int(exe.manifest["arena_bytes"]) == caller
    assert int(default.manifest["arena_bytes"]) == arena
    sizes = exe.sizes()
    assert sizes["arena"] == caller and sizes["caller_input"] == x_bytes
    assert "caller_input" not in default.sizes()
    # the application's RAM has the input buffer beside the arena
    assert sizes["ram"] >= caller + x_bytes
    x = np.random.default_rng(4).integers(-128, 128, size=(2, 16, 16, 8), dtype=np.int8)
    (want,) = tflm_run(export_tflite(g), x)
    (got,) = exe.run(x)
    assert np.count_nonzero(got != want) == 0
    report = exe.bench(x[:1])
    assert f"arena {caller:,} B + the caller's input {x_bytes:,} B" in "\n".join(
        report.summary)


def test_two_inputs_in_caller_buffers_with_an_external_arena(tmp_path: Path) -> None:
    """An int8 Add (its kernel may write over input 0) of two caller inputs, the arena
    passed in: the arena holds the output alone, both inputs keep their bytes."""
    from test_fusion_auto import _add_model

    model = _add_model(tmp_path / "add.tflite")
    g = load_model(model)
    rng = np.random.default_rng(6)
    a, b = (rng.integers(-128, 128, size=(2, 4, 4, 8), dtype=np.int8) for _ in range(2))
    (want,) = tflm_run(model.read_bytes(), a, b)
    exe = compile_model(g, target=CORE, input_buffer="caller", arena="external")
    (got,) = exe.run(a, b)
    assert np.count_nonzero(got != want) == 0
    assert int(exe.manifest["arena_bytes"]) == g.tensor(g.outputs[0]).nbytes
    for k, x in enumerate((a, b)):
        spec = exe.manifest["inputs"][k]
        assert exe.machine.read(str(spec["symbol"]), int(spec["bytes"])) == x[-1].tobytes()


def test_a_reshape_of_a_caller_input_gets_bytes_of_its_own() -> None:
    """A Reshape kernel may rewrite its bytes (a requantizing copy works in place): an output
    aliasing the caller's buffer would be written."""
    q = QuantParams.per_tensor(0.05, 3)
    x = Tensor("x", (1, 4, 4, 8), DType.INT8, q)
    y = Tensor("y", (1, 128), DType.INT8, q)
    g = Graph("r", {"x": x, "y": y}, (Node("flat", "Reshape", ("x",), ("y",),
                                            {"shape": (1, 128)}),), ("x",), ("y",)).validate()
    assert reshape_aliases(g) == {"y": "x"}
    assert reshape_aliases(g, frozenset({"x"})) == {}
    plan = plan_arena(g, [0], external=frozenset({"x"}))
    assert set(plan.offsets) == {"y"} and not plan.aliases


def test_c_api_of_a_caller_build(tmp_path: Path) -> None:
    g = in_place_model()
    exe = compile_model(g, target=CORE, fuse="none", input_buffer="caller",
                        out_dir=tmp_path / "fw", name="cam")
    header = (tmp_path / "fw" / "cam.h").read_text()
    assert "int cam_set_input(int index, const void *buffer);" in header
    assert "#define CAM_INPUT_IN_ARENA 0" in header and "CAM_ERROR_INPUT_NULL (-6)" in header
    assert exe.manifest["input_buffer"] == "caller"
    assert exe.manifest["inputs"][0]["in_arena"] is False
    m = exe.machine
    good = m.address(str(exe.manifest["inputs"][0]["symbol"]))
    assert status(m.call("cam_set_input", 0, 0).value) == -6  # NULL
    assert status(m.call("cam_set_input", 0, good + 4).value) == -7  # misaligned
    assert status(m.call("cam_set_input", 1, good).value) == -8  # no input 1
    assert status(m.call("cam_set_input", 0, good).value) == 0
    default = compile_model(g, target=CORE, fuse="none", out_dir=tmp_path / "plain",
                            name="cam")
    plain = (tmp_path / "plain" / "cam.h").read_text()
    assert "set_input" not in plain and "INPUT_NULL" not in plain
    assert "input_buffer" not in default.manifest


def test_what_a_caller_build_refuses_is_one_line() -> None:
    g = chain_graph(np.random.default_rng(3), (8, 8), 4,
                    [(4, (3, 3), (1, 1), SAME, Activation.RELU, False)])
    with pytest.raises(EdgennError, match="--board mps2-an386"):
        compile_model(g, target=CORE, fuse="none", input_buffer="caller", board="mps2-an386")
    with pytest.raises(EdgennError, match="unknown input_buffer"):
        compile_model(g, target=CORE, fuse="none", input_buffer="flash")


def test_cli_reports_both_buffers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = peak_model()
    model = tmp_path / "peak.tflite"
    model.write_bytes(export_tflite(g))
    assert main(["compile", str(model), "--target", CORE, "-o", str(tmp_path / "fw"),
                 "--fuse", "none", "--input-buffer", "caller"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    caller = firmware_arena_bytes(load_model(model), get_core(CORE), input_buffer="caller")
    assert f"arena {caller:,} B + the caller's input {g.tensor('x').nbytes:,} B" in out


@pytest.mark.slow
@pytest.mark.skipif(not VWW.is_file(), reason="MLPerf Tiny models not in ../shared")
def test_vww_at_half_the_layer_by_layer_arena() -> None:
    """VWW (96x96x3 input, 27,648 B) at half its layer-by-layer arena: only with the input in
    the caller's buffer; the first stages fused until the 48x48 and 24x24 maps never exist
    whole. Outputs equal TFLite Micro's, the input is untouched."""
    g = load_model(VWW)
    budget = firmware_arena_bytes(g, get_core(CORE)) // 2
    with pytest.raises(EdgennError, match="--input-buffer caller"):
        compile_model(g, target=CORE, fuse="auto", ram_budget=budget)
    exe = compile_model(g, target=CORE, fuse="auto", ram_budget=budget, input_buffer="caller")
    report = exe.fusion_report
    assert int(exe.manifest["arena_bytes"]) == report.decision.arena_bytes <= budget
    (chain,) = find_chains(g)
    (part,) = report.decision.chains
    assert part.names[0] == chain.names[0]
    assert report.built_cycles is not None and report.caller_input_bytes == 96 * 96 * 3
    x = np.random.default_rng(3).integers(-128, 128, size=(3, 96, 96, 3), dtype=np.int8)
    (got,) = exe.run(x)
    (want,) = tflm_run(VWW.read_bytes(), x)
    assert np.count_nonzero(got != want.reshape(got.shape)) == 0
    assert input_bytes_after(exe) == x[-1].tobytes()
