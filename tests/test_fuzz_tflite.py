"""Hostile TFLite files through ``edgenn inspect`` and ``edgenn run``, in process.

Mutants come from the structure-aware mutators (``tools.fuzzing.tflite_mutators``): valid
flatbuffers with hostile content. The contract (issue 16): every command either succeeds or
fails with one line on stderr; no traceback, no hang, no warning line. Also one regression test
per class of bug the campaign found, each on a hostile file built here.

Run a campaign by hand: ``python tests/test_fuzz_tflite.py [N] [SEED]`` prints the outcome
counts and the first findings.
"""

from __future__ import annotations

import contextlib
import io
import random
import signal
import sys
import tempfile
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from edgenn.api import load_model
from edgenn.cli.main import main
from edgenn.frontends.tflite import load_tflite
from edgenn.ir.opdefs.recurrent import LSTM_INDEX
from tools.fuzzing.outcome import FINDINGS, Outcome, classify
from tools.fuzzing.tflite_fb import FbModel, FbTensor, pack, unpack
from tools.fuzzing.tflite_mutators import TFLITE_MUTATORS, mutate

ROOT = Path(__file__).resolve().parents[1]
MLPERF = Path("/work/shared/models/mlperf_tiny")
SEEDS = sorted((ROOT / "tests" / "fixtures").rglob("*.tflite")) + [
    p for p in (MLPERF / "ad01_int8.tflite", MLPERF / "kws_ref_model.tflite") if p.exists()]
TIMEOUT_S = 20.0


class _Timeout(BaseException):
    """Raised by the alarm inside a command that ran too long (a hang)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    # why an interval timer: in process, a hang is only seen by interrupting the main thread
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str], timeout: float = TIMEOUT_S) -> tuple[Outcome, str]:
    """The outcome of ``edgenn ARGV`` in this process and what it wrote to stderr."""
    err = io.StringIO()
    code: int | None = None
    timed_out = False
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("always")  # why: the default filter shows a warning only once
        try:
            with _time_limit(timeout):
                code = main(argv)
        except _Timeout:
            timed_out = True
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # why: an escaped exception is what we count
            err.write(traceback.format_exc())
            code = 1
    text = err.getvalue()
    return classify(code, text, timed_out), text


def _input_file(path: Path, work: Path) -> Path:
    """A one-sample .npz for the model at ``path`` (placeholder data when it does not load)."""
    arrays: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(0)
    try:
        graph = load_model(path)
        for name in graph.inputs:
            t = graph.tensor(name)
            shape = (1, *graph.external_shape(name)[1:])
            if np.prod(shape, dtype=np.int64) > 1 << 22:
                break
            if t.dtype.numpy.kind == "f":
                arrays[name] = rng.standard_normal(shape).astype(t.dtype.numpy)
            else:
                info = np.iinfo(t.dtype.numpy)
                arrays[name] = rng.integers(max(info.min, -128), min(info.max, 127) + 1, shape,
                                            dtype=t.dtype.numpy)
    except Exception:  # why: the commands below report the failure
        pass
    out = work / "x.npz"
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out


def check_file(data: bytes, work: Path) -> list[tuple[str, Outcome, str]]:
    """Run inspect and run on one model file; (command, outcome, stderr) per command."""
    path = work / "mutant.tflite"
    path.write_bytes(data)
    results = []
    outcome, text = run_cli(["inspect", str(path)])
    results.append(("inspect", outcome, text))
    x = _input_file(path, work)
    outcome, text = run_cli(["run", str(path), "--input", str(x),
                             "--output", str(work / "y.npz")])
    results.append(("run", outcome, text))
    return results


def mutants(n: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """``n`` mutants: a seed file through one to three mutators picked at random."""
    rng = random.Random(seed)
    seeds = [(p.name, p.read_bytes()) for p in SEEDS]
    for _ in range(n):
        name, data = rng.choice(seeds)
        yield name, mutate(data, rng, rounds=rng.choice((1, 1, 2, 3)))


def campaign(n: int, seed: int) -> tuple[Counter[Outcome], list[tuple[str, str, Outcome, str]]]:
    """Outcome counts over ``2 n`` commands and every finding (seed, command, outcome,
    stderr)."""
    counts: Counter[Outcome] = Counter()
    findings = []
    # why /dev/shm: ``run`` writes its outputs with fsync, which costs more than the run
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        for name, data in mutants(n, seed):
            for command, outcome, text in check_file(data, Path(tmp)):
                counts[outcome] += 1
                if outcome in FINDINGS:
                    findings.append((name, command, outcome, text))
    return counts, findings


def _report(findings: list[tuple[str, str, Outcome, str]]) -> str:
    return "\n\n".join(f"{name} {cmd} {outcome.value}:\n{text[-1500:]}"
                       for name, cmd, outcome, text in findings[:5])


# -- the campaigns ----------------------------------------------------------------------------
def test_mutators_change_and_keep_flatbuffers_valid() -> None:
    rng = random.Random(1)
    data = SEEDS[0].read_bytes()
    for mutator in TFLITE_MUTATORS:
        changed = 0
        for _ in range(5):
            out = mutator(data, rng)
            changed += out != data
            unpack(out)  # still a well-formed flatbuffer
        assert changed >= 3, mutator.__name__


def test_unpack_pack_round_trip_imports_the_same_graph() -> None:
    for path in SEEDS:
        data = path.read_bytes()
        a, b = load_tflite(data, path.name), load_tflite(pack(unpack(data)), path.name)
        assert [(n.op, n.inputs, n.attrs) for n in a.nodes] == \
            [(n.op, n.inputs, n.attrs) for n in b.nodes]


def test_short_campaign() -> None:
    counts, findings = campaign(400, seed=16)
    assert sum(counts.values()) == 800
    assert not findings, f"{counts}\n{_report(findings)}"
    # why: a campaign whose mutants all fail in the first check tests little
    assert counts[Outcome.OK] >= 40, counts


@pytest.mark.slow
def test_long_campaign() -> None:
    counts, findings = campaign(5000, seed=1616)
    assert not findings, f"{counts}\n{_report(findings)}"


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    s = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    counts, findings = campaign(n, s)
    print({k.value: v for k, v in counts.items()})
    kinds = Counter((f[2].value, f[3].strip().splitlines()[-1][:150] if f[3].strip() else "")
                    for f in findings)
    for (outcome, line), k in kinds.most_common():
        print(f"{k:5d} {outcome}: {line}")



# -- regressions: one hostile file per class of bug the campaigns found ---------------------
FIXTURES = ROOT / "tests" / "fixtures"


def _seed(name: str) -> FbModel:
    return unpack(next(FIXTURES.rglob(name)).read_bytes())


def _error(tmp_path: Path, model: FbModel, command: str = "inspect") -> str:
    """The one error line ``edgenn COMMAND`` prints for ``model`` (fails on any other
    outcome)."""
    results = dict((cmd, (o, t)) for cmd, o, t in check_file(pack(model), tmp_path))
    outcome, text = results[command]
    assert outcome is Outcome.CLEAN_ERROR, text
    return text.strip()


def _first_const(model: FbModel, type_code: int) -> int:
    sg = model.subgraphs[0]
    return next(i for i, t in enumerate(sg.tensors)
                if t.type == type_code and 0 < t.buffer < len(model.buffers)
                and model.buffers[t.buffer])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_run_as_tflite_micro(tmp_path: Path, value: float) -> None:
    # was: numpy "RuntimeWarning: invalid value encountered in matmul", then a refusal
    # ("holds non-finite values"); +-inf and NaN are float data TFLite Micro computes with
    pytest.importorskip("tflite_micro")
    from edgenn.api import compile_model
    from edgenn.oracles.tflm import tflm_run

    model = _seed("lstm_mnist_float.tflite")
    index = _first_const(model, 0)
    t = model.subgraphs[0].tensors[index]
    data = np.frombuffer(model.buffers[t.buffer], np.float32).copy()
    data[len(data) // 2] = value
    model.buffers[t.buffer] = data.tobytes()
    results = {cmd: (o, text) for cmd, o, text in check_file(pack(model), tmp_path)}
    assert all(o is Outcome.OK for o, _ in results.values()), results  # no warning line
    graph = load_tflite(pack(model), "mutant")
    x = np.random.default_rng(0).standard_normal(
        (2, *graph.tensor(graph.inputs[0]).shape[1:])).astype(np.float32)
    want = tflm_run(pack(model), x)[0]
    np.testing.assert_allclose(compile_model(graph).run(x)[0], want, rtol=1e-5, atol=1e-6,
                               equal_nan=True)


@pytest.mark.parametrize("seed", ["conv2_int8.tflite", "mbv3_int16.tflite"])
def test_operator_on_constants_only_is_an_error(tmp_path: Path, seed: str) -> None:
    # was: IndexError in the reference conv layer at run time (it is given no non-constant
    # operand); inspect said nothing
    model = _seed(seed)
    sg = model.subgraphs[0]
    op = sg.operators[0]
    x = sg.tensors[op.inputs[0]]
    # the first convolution reads a constant shaped like its input instead of the input
    model.buffers.append(bytes(int(np.prod(x.shape)) * (2 if x.type == 7 else 1)))
    sg.tensors.append(FbTensor("c", list(x.shape), x.type, len(model.buffers) - 1, x.quant))
    op.inputs[0] = len(sg.tensors) - 1
    for command in ("inspect", "run"):
        err = _error(tmp_path, model, command)
        assert "every input is a constant" in err and "mutant.tflite" in err, err


def test_constant_graph_output_is_an_error(tmp_path: Path) -> None:
    # was: KeyError in the reference runtime when collecting the outputs
    model = _seed("conv2_int8.tflite")
    index = _first_const(model, 9)
    model.subgraphs[0].outputs = [index]
    name = model.subgraphs[0].tensors[index].name
    err = _error(tmp_path, model, "run")
    assert f"graph input/output {name!r} is a constant" in err, err


def test_valid_file_with_empty_optional_operands_is_clean(tmp_path: Path) -> None:
    # the TFLite converter writes omitted LSTM operands as shape-[0] tensors: not corrupt
    model = _seed("lstm_mnist_int8.tflite")
    assert any(0 in t.shape for t in model.subgraphs[0].tensors)
    for command, outcome, text in check_file(pack(model), tmp_path):
        assert outcome is Outcome.OK, (command, text)


@pytest.mark.parametrize("scale", [1e-45, 1e-30, 1e30, 3e38])
def test_extreme_scale_is_an_error(tmp_path: Path, scale: float) -> None:
    # was: OverflowError (float infinity to integer) quantizing a ReLU6 bound with scale 1e-45
    model = _seed("ops_int8.tflite")
    sg = model.subgraphs[0]
    t = sg.tensors[sg.operators[0].outputs[0]]
    assert t.quant is not None
    t.quant.scale = [scale] * len(t.quant.scale)
    err = _error(tmp_path, model, "run")
    assert f"tensor {t.name!r} has the scale" in err and "outside [2^-64, 2^64]" in err, err


def test_state_tensor_zero_point_out_of_range_is_an_error(tmp_path: Path) -> None:
    # was: OverflowError filling an int8 LSTM state with a zero point of 2^40
    model = _seed("lstm_mnist_int8.tflite")
    state = next(t for t in model.subgraphs[0].tensors if t.is_variable and t.quant is not None
                 and t.type == 9)
    assert state.quant is not None
    state.quant.zero_point = [1 << 40]
    err = _error(tmp_path, model)
    assert f"tensor {state.name!r} has a zero point outside int8" in err, err


def test_transpose_conv_huge_stride_is_an_error(tmp_path: Path) -> None:
    # was: numpy MemoryError (a 3.87 TiB scatter buffer) for a stride of 2^31 - 1
    model = _seed("seanet_int16.tflite")
    op = next(op for op in model.subgraphs[0].operators
              if op.options_class == "TransposeConvOptions")
    op.options["StrideW"] = (1 << 31) - 1
    err = _error(tmp_path, model, "run")
    assert "strides" in err and "far past the declared output" in err, err


@pytest.mark.parametrize("value", [np.nan, 1.5])
def test_float_bias_of_an_int8_conv_is_an_error(tmp_path: Path, value: float) -> None:
    # was: "RuntimeWarning: invalid value encountered in cast" (a NaN bias cast to int64)
    # once non-finite float data imported; TFLite Micro takes an int32 bias only
    model = _seed("conv2_int8.tflite")
    sg = model.subgraphs[0]
    op = next(o for o in sg.operators if len(o.inputs) > 2 and o.inputs[2] >= 0)
    bias = sg.tensors[op.inputs[2]]
    count = len(model.buffers[bias.buffer]) // 4
    model.buffers[bias.buffer] = np.full(count, value, np.float32).tobytes()
    bias.type = 0  # FLOAT32
    err = _error(tmp_path, model, "run")
    assert "needs an int32 bias, got float32" in err, err


@pytest.mark.parametrize("what", ["output", "weights"])
def test_lstm_output_or_weights_of_wrong_rank_is_an_error(tmp_path: Path, what: str) -> None:
    # was: IndexError (recurrent.py) reading the state outputs' shapes off an LSTM output
    # or input_to_forget_weights whose rank a mutant changed
    model = _seed("lstm_mnist_int8.tflite")
    sg = model.subgraphs[0]
    op = next(o for o in sg.operators if o.options_class == "UnidirectionalSequenceLSTMOptions")
    slot = LSTM_INDEX["input_to_forget_weights"]
    t = sg.tensors[op.outputs[0] if what == "output" else op.inputs[slot]]
    t.shape = [int(np.prod(t.shape))]  # why flat: a constant keeps its byte count
    for command in ("inspect", "run"):
        err = _error(tmp_path, model, command)
        assert "mutant.tflite" in err and "must be 3-D" in err and "2-D" in err, err
        assert f"{t.name!r} [{t.shape[0]}]" in err, err


@pytest.mark.parametrize(("drop", "message"), [
    ("recurrent_to_input_weights", "recurrent_to_input_weights missing"),
    ("input_to_input_weights", "input_gate_bias given but input_to_input_weights missing"),
    ("recurrent_to_forget_weights", "operand recurrent_to_forget_weights is missing"),
    ("output_gate_bias", "operand output_gate_bias is missing"),
])
def test_lstm_inconsistent_optional_operands_are_an_import_error(tmp_path: Path, drop: str,
                                                                 message: str) -> None:
    # was: inspect accepted the file and run failed in the reference kernel, without the
    # file's name; TFLite's LSTM takes each gate's operands all together or not at all
    model = _seed("lstm_mnist_int8.tflite")
    op = next(o for o in model.subgraphs[0].operators
              if o.options_class == "UnidirectionalSequenceLSTMOptions")
    op.inputs[LSTM_INDEX[drop]] = -1
    for command in ("inspect", "run"):
        err = _error(tmp_path, model, command)
        assert "mutant.tflite" in err and "'tfl.unidirectional_sequence_lstm'" in err, err
        assert message in err, err


def test_mutated_string_option_packs_and_is_an_error(tmp_path: Path) -> None:
    # was: flatbuffers' OffsetArithmeticError in the fuzzer's own packer (campaign seed 78) for
    # a VAR_HANDLE shared_name a mutator had made an int; the field is now left out
    model = _seed("streaming_int8.tflite")
    op = next(o for o in model.subgraphs[0].operators if o.options_class == "VarHandleOptions")
    op.options["SharedName"] = 123456789
    op.options["Container"] = b""
    err = _error(tmp_path, model)
    assert "VAR_HANDLE names no variable" in err and "mutant.tflite" in err, err


@pytest.mark.parametrize("count", [1, 4, 6])
def test_svdf_operand_count_is_checked(tmp_path: Path, count: int) -> None:
    # was: a sixth operand was ignored, and four gave "input 4 is missing"
    from tests.conformance.cases.recurrent import svdf_int8
    from tests.conformance.spec import model_bytes

    model = unpack(model_bytes([svdf_int8("svdf", 1, 4, 3, 2, 5)]))
    op = model.subgraphs[0].operators[0]
    op.inputs = (op.inputs + [op.inputs[3]])[:count]
    for command in ("inspect", "run"):
        err = _error(tmp_path, model, command)
        assert f"mutant.tflite: node 'c0_out0': SVDF takes 5 operands, got {count}" in err, err
