"""State kept across invocations, as TFLite Micro keeps it: streaming models with resource
variables (CALL_ONCE / VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE, int8 and int16), and the
variable tensors of UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF. Against TFLite Micro: 20
consecutive invocations bit-exact, then a reset and 5 more, on ref and cortex-m4; a stateless
run (every row from a reset state) is bit-exact too and differs from the stateful one."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")

from edgenn.api import compile_model  # noqa: E402
from edgenn.data.mnist import mnist_split  # noqa: E402
from edgenn.errors import EdgennError, GraphValidationError, UnsupportedOperatorError  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir import DType  # noqa: E402
from edgenn.ir.state import StateVar  # noqa: E402
from edgenn.oracles.tflm import tflm_interpreter, tflm_run  # noqa: E402
from tests.conformance.cases.recurrent import LstmShape, lstm_quantized, svdf_int8  # noqa: E402
from tests.conformance.spec import model_bytes  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
STREAM, AFTER_RESET = 20, 5


def _model(name: str) -> bytes:
    if name == "svdf_state_int16":
        return model_bytes([svdf_int8("stateful_svdf16", 1, 6, 4, 2, 5)])
    if name == "lstm_int16":  # 16x8 LSTM: int16 hidden and cell state
        return model_bytes([lstm_quantized("stateful_lstm16", LstmShape(1, 3, 4, 5),
                                           int16=True)])
    if name == "svdf_state_int8":
        return model_bytes([svdf_int8("stateful_svdf8", 1, 6, 4, 2, 5, state=DType.INT8,
                                      state_zp=-3)])
    folder = "operators" if name.startswith("lstm_mnist") else "streaming"
    return (FIXTURES / folder / f"{name}.tflite").read_bytes()


def _inputs(name: str, data: bytes, n: int) -> np.ndarray:
    t = load_tflite(data, name).input_tensors()[0]
    if name.startswith("lstm_mnist"):  # real digits: the rows are the time steps
        assert t.quant is not None
        x = mnist_split("test")[0][:n].astype(np.float32) / 255.0
        return np.clip(np.round(x / t.quant.s) + t.quant.zp, -128, 127).astype(np.int8)
    info = np.iinfo(t.dtype.numpy)
    rng = np.random.default_rng(22)
    # why a quarter of the range: the streams' activations stay off the clamps
    return rng.integers(info.min // 4, info.max // 4, (n, *t.shape[1:])).astype(t.dtype.numpy)


MODELS = ["streaming_int8", "streaming_int16", "lstm_mnist_int8", "lstm_int16",
          "svdf_state_int16", "svdf_state_int8"]


def _mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> int:
    assert [g.shape for g in got] == [w.shape for w in want]
    return sum(int((g != w).sum()) for g, w in zip(got, want, strict=True))


def _check_stream(name: str, target: str) -> None:
    data = _model(name)
    xs = _inputs(name, data, STREAM + AFTER_RESET)
    exe = compile_model(load_tflite(data, name), target)
    assert exe.graph.state and exe.sizes()["state"] > 0
    first, rest = xs[:STREAM], xs[STREAM:]
    oracle = tflm_interpreter(data)
    want = tflm_run(data, first, stateful=True, interpreter=oracle)
    assert _mismatches(exe.run(first, stateful=True), want) == 0
    # the same interpreter, reset: TFLite Micro re-runs its initialisation
    oracle.reset()
    exe.reset_state()
    assert _mismatches(exe.run(rest, stateful=True),
                       tflm_run(data, rest, stateful=True, interpreter=oracle)) == 0
    # stateless: every row from a reset state, and the kept state is left as it was
    stateless = tflm_run(data, first[:6])
    assert _mismatches(exe.run(first[:6]), stateless) == 0
    assert _mismatches(exe.run(rest, stateful=True),
                       tflm_run(data, rest, stateful=True, interpreter=oracle)) == 0
    # why: shows the test can fail: state changes what the model computes
    assert _mismatches([w[:6] for w in want], stateless) > 0


@pytest.mark.parametrize("name", MODELS)
def test_stream_ref(name: str) -> None:
    _check_stream(name, "ref")


@needs_arm
@pytest.mark.parametrize("name", MODELS)
def test_stream_cortexm4(name: str) -> None:
    _check_stream(name, "cortex-m4")


def test_resource_variables_import_as_state() -> None:
    data = _model("streaming_int8")
    g = load_tflite(data, "streaming_int8")
    assert sorted(s.name for s in g.state) == ["stream_a/states", "stream_b/states"]
    for s in g.state:
        t = g.tensor(s.read)
        assert t.dtype is DType.INT8 and s.write != s.read
        assert s.init.shape == t.shape
        # the initialisation subgraph assigns real zeros: the zero point
        assert t.quant is not None and np.all(s.init == t.quant.zp)
    assert not any(n.op in ("CALL_ONCE", "VAR_HANDLE") for n in g.nodes)


def test_ref_batch_rows_are_independent_without_stateful() -> None:
    data = _model("streaming_int16")
    xs = _inputs("streaming_int16", data, 8)
    exe = compile_model(load_tflite(data, "s"), "ref")
    whole = exe.run(xs)[0]
    one_by_one = np.concatenate([exe.run(xs[k:k + 1])[0] for k in range(len(xs))])
    assert np.array_equal(whole, one_by_one)


def test_host_runs_rows_from_reset_and_refuses_stateful_runs_in_one_line() -> None:
    data = _model("svdf_state_int16")
    xs = _inputs("svdf_state_int16", data, 4)
    g = load_tflite(data, "svdf")
    exe = compile_model(g, "host")
    assert _mismatches(exe.run(xs), tflm_run(data, xs)) == 0
    with pytest.raises(UnsupportedOperatorError, match="keeps state between invocations") as e:
        exe.run(xs, stateful=True)
    assert "\n" not in str(e.value)


def test_state_validation_names_the_variable() -> None:
    g = load_tflite(_model("streaming_int8"), "streaming_int8")
    s = g.state[0]
    bad = StateVar(s.name, s.read, s.write, np.zeros((2, 2), np.int8))
    with pytest.raises(GraphValidationError, match=s.name):
        g.replace(state=(bad, *g.state[1:])).validate()


@needs_arm
def test_cortexm_header_declares_state(tmp_path: Path) -> None:
    g = load_tflite(_model("streaming_int8"), "streaming_int8")
    exe = compile_model(g, "cortex-m4", out_dir=tmp_path, name="kws")
    header = (tmp_path / "kws.h").read_text()
    assert f"#define KWS_STATE_BYTES {exe.sizes()['state']}" in header
    assert "int kws_reset_state(void);" in header
    assert exe.sizes()["state"] >= g.state_bytes()


def test_tflm_oracle_stateful_differs_from_stateless() -> None:
    data = _model("svdf_state_int16")
    xs = _inputs("svdf_state_int16", data, 6)
    with pytest.raises(EdgennError):
        tflm_run(data, xs, xs)  # one input only: a clear error, not a crash
    assert _mismatches(tflm_run(data, xs, stateful=True), tflm_run(data, xs)) > 0


# -- the CLI: --stateful on run, validate, bench -------------------------------------------------
def test_cli_run_stateful_continues_the_stream_across_batches(tmp_path: Path) -> None:
    from edgenn.cli.main import main

    data = _model("streaming_int8")
    path = FIXTURES / "streaming" / "streaming_int8.tflite"
    xs = _inputs("streaming_int8", data, 12)
    np.save(tmp_path / "x.npy", xs)
    for flag, want in (([], tflm_run(data, xs)), (["--stateful"],
                                                  tflm_run(data, xs, stateful=True))):
        out = tmp_path / f"y{len(flag)}.npy"
        assert main(["run", str(path), "--input", str(tmp_path / "x.npy"), "-o", str(out),
                     "--batch", "5", *flag]) == 0
        assert _mismatches([np.load(out)], want) == 0


def test_cli_validate_and_bench_stateful(tmp_path: Path) -> None:
    from edgenn.cli.main import main

    path = str(FIXTURES / "streaming" / "streaming_int16.tflite")
    assert main(["validate", path, "--target", "ref", "--random", "12", "--stateful"]) == 0
    out = tmp_path / "bench.json"
    assert main(["bench", path, "--target", "ref", "--stateful", "--json", str(out)]) == 0
    assert out.stat().st_size > 0


# -- malformed resource variables: one line naming the node --------------------------------------
def _mutated(change: str) -> bytes:
    from edgenn.ir.tflite_enums import OP
    from tools.fuzzing.tflite_fb import pack, unpack

    model = unpack(_model("streaming_int8"))
    main = model.subgraphs[0]
    code = {k: c.builtin for k, c in enumerate(model.opcodes)}
    ops = {name: [op for op in main.operators if code[op.opcode_index] == getattr(OP, name)]
           for name in ("CALL_ONCE", "READ_VARIABLE", "ASSIGN_VARIABLE")}
    if change == "init_index":
        ops["CALL_ONCE"][0].options["InitSubgraphIndex"] = 7
    elif change == "read_no_handle":
        ops["READ_VARIABLE"][0].inputs = [main.inputs[0]]
    elif change == "init_not_constant":
        init = model.subgraphs[1]
        assign = next(op for op in init.operators
                      if code[op.opcode_index] == OP.ASSIGN_VARIABLE)
        init.tensors[assign.inputs[1]].buffer = 0
    return pack(model)


@pytest.mark.parametrize(("change", "message"), [
    ("init_index", "CALL_ONCE runs subgraph 7 of 2"),
    ("read_no_handle", "not a VAR_HANDLE's output"),
    ("init_not_constant", "is not a constant"),
])
def test_malformed_resource_variables_fail_in_one_line(change: str, message: str) -> None:
    with pytest.raises(EdgennError, match=message) as e:
        load_tflite(_mutated(change), "bad.tflite")
    assert "\n" not in str(e.value) and "bad.tflite" in str(e.value)
