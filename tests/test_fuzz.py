"""Hostile inputs (issue 16): fuzzing campaigns and one regression model per bug class.

The campaigns run mutants of the shipped models through the CLI (``tools.fuzzing``) and
require every command to end in success or one clean error line: no traceback, no hang, no
warning. The regression tests build one hostile model each and check the one-line error names
the node or tensor at fault.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tools.fuzzing import BYTE_MUTATORS, ONNX_MUTATORS, Outcome, classify, run_campaign
from tools.fuzzing.seeds import families, real_seeds, synthetic_onnx_seeds
from tools.fuzzing.worker import command_argv, run_command

# why a size cap in the default run: the big seeds (vww, ad01) cost most of the time and
# exercise the same parsers as the small ones
_SMALL = 120_000


def _assert_clean(report_counts: dict, findings: list) -> None:
    shown = "\n".join(f"#{f.index} {f.seed_file} {f.mutator} {f.command}: {f.outcome.value}: "
                      f"{f.stderr_tail}" for f in findings[:10])
    assert not findings, f"{len(findings)} findings:\n{shown}"
    for counts in report_counts.values():
        assert counts[Outcome.OK] + counts[Outcome.CLEAN_ERROR] > 0


def test_classify_outcomes() -> None:
    assert classify(0, "") is Outcome.OK
    assert classify(2, "edgenn run: error: x.onnx: node 'a': bad\n") is Outcome.CLEAN_ERROR
    assert classify(2, "a\nb\n") is Outcome.EXTRA_LINES
    assert classify(2, "f.py:3: RuntimeWarning: overflow encountered in cast\n  x\nerr\n") \
        is Outcome.EXTRA_LINES
    assert classify(0, "f.py:3: RuntimeWarning: overflow\n") is Outcome.EXTRA_LINES
    assert classify(1, "Traceback (most recent call last):\n  ...\nTypeError: x\n") \
        is Outcome.TRACEBACK
    assert classify(None, "", timed_out=True) is Outcome.HANG
    assert classify(None, "") is Outcome.CRASH


def test_short_campaign_byte_level(tmp_path: Path) -> None:
    files = synthetic_onnx_seeds(tmp_path) + real_seeds(_SMALL)
    report = run_campaign(files, BYTE_MUTATORS, 300, ("inspect", "run"), seed=16, workers=1)
    _assert_clean(report.counts, report.findings)


def test_short_campaign_onnx_structure(tmp_path: Path) -> None:
    files = synthetic_onnx_seeds(tmp_path) + [p for p in real_seeds(_SMALL) if p.suffix == ".onnx"]
    report = run_campaign(files, ONNX_MUTATORS, 300, ("inspect", "run"), seed=16, workers=1)
    _assert_clean(report.counts, report.findings)


@pytest.mark.slow
def test_long_campaign(tmp_path: Path) -> None:
    """10,000 mutants over every family through inspect, run and quantize (compile on a
    sample): the issue's target."""
    fams = families(tmp_path)
    per = 10_000 // len(fams)
    for files, mutators in fams.values():
        report = run_campaign(files, mutators, per, ("inspect", "run", "quantize", "compile"),
                              seed=1616, compile_every=100)
        _assert_clean(report.counts, report.findings)


# -- one hostile model per bug class ------------------------------------------------------------

def _conv_bn(conv_attrs: dict | None = None, var: np.ndarray | None = None,
             weight: np.ndarray | None = None, conv_name: str = "conv") -> onnx.ModelProto:
    """x[1,2,6,6] -> Conv (no bias) -> BatchNormalization -> y."""
    rng = np.random.default_rng(0)
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], **(conv_attrs or {})}
    w = weight if weight is not None else rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.ones(4, np.float32), "g"),
             numpy_helper.from_array(np.zeros(4, np.float32), "beta"),
             numpy_helper.from_array(np.zeros(4, np.float32), "mean"),
             numpy_helper.from_array(var if var is not None else np.ones(4, np.float32), "var")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name=conv_name, **attrs),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["y"],
                              name="bn")]
    graph = helper.make_graph(nodes, "hostile",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _cli(tmp_path: Path, data: bytes, command: str = "inspect") -> tuple[Outcome, str]:
    """Run one CLI command on the model bytes as a user would see it (warnings shown)."""
    path = tmp_path / "hostile.onnx"
    path.write_bytes(data)
    work = tmp_path / command
    work.mkdir(exist_ok=True)
    rc, err = run_command(command_argv(command, str(path), str(work), 0))
    return classify(rc, err), err.strip()


def test_bytes_node_name_is_a_clean_error(tmp_path: Path) -> None:
    """Was: TypeError: can't concat str to bytes (fold_batchnorm naming the new bias)."""
    data = _conv_bn(conv_name="convXY").SerializeToString().replace(b"convXY", b"conv\xff\xfe")
    assert isinstance(onnx.load_model_from_string(data).graph.node[0].name, bytes)
    for command in ("inspect", "run"):
        outcome, err = _cli(tmp_path, data, command)
        assert outcome is Outcome.CLEAN_ERROR, err
        assert "not UTF-8" in err and "b'conv\\xff\\xfe'" in err


def test_wrong_length_initializer_names_node_and_tensor(tmp_path: Path) -> None:
    """Was: ValueError: operands could not be broadcast together (batch-norm folding)."""
    data = _conv_bn(var=np.ones(5, np.float32)).SerializeToString()
    outcome, err = _cli(tmp_path, data)
    assert outcome is Outcome.CLEAN_ERROR, err
    assert "'bn'" in err and "'var'" in err and "[5]" in err


@pytest.mark.parametrize("attrs", [{"group": 0}, {"strides": [0, 1]}, {"dilations": [1, 0]}])
def test_zero_attribute_names_node(tmp_path: Path, attrs: dict) -> None:
    """Was: ZeroDivisionError: integer modulo by zero (a zero group)."""
    outcome, err = _cli(tmp_path, _conv_bn(attrs).SerializeToString())
    assert outcome is Outcome.CLEAN_ERROR, err
    assert "'conv'" in err or "ONNX" in err  # ours, or ONNX's checker when it catches it first


def test_zero_group_in_ir_names_node() -> None:
    """The IR check itself, which both frontends reach (ONNX's checker is not always run
    first: a TFLite file has none)."""
    from edgenn.errors import GraphValidationError
    from edgenn.ir import DType, Node, Tensor
    from edgenn.ir.shapes import infer

    x = Tensor("x", (1, 6, 6, 2), DType.FLOAT32)
    w = Tensor.const("w", np.ones((4, 3, 3, 2), np.float32))
    for attrs in ({"groups": 0}, {"strides": (0, 1)}, {"dilations": (1, 0)},
                  {"pads": (0, -1, 0, 0)}):
        with pytest.raises(GraphValidationError, match="'bad'"):
            infer(Node("bad", "Conv2D", ("x", "w"), ("y",), attrs), [x, w])
    with pytest.raises(GraphValidationError, match="'pool'.*kernel"):
        infer(Node("pool", "MaxPool2D", ("x",), ("y",), {"kernel": (0, 2)}), [x])
    with pytest.raises(GraphValidationError, match="more than"):
        infer(Node("pad", "Pad", ("x",), ("y",),
                   {"pads": ((0, 0), (0, 1 << 40), (0, 0), (0, 0))}), [x])


def test_negative_variance_names_node(tmp_path: Path) -> None:
    outcome, err = _cli(tmp_path, _conv_bn(var=-np.ones(4, np.float32)).SerializeToString())
    assert outcome is Outcome.CLEAN_ERROR, err
    assert "'bn'" in err and "variance" in err


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nonfinite_weight_runs_like_onnxruntime(tmp_path: Path, value: float) -> None:
    """Was refused ("holds non-finite values"): a NaN or infinite weight is data onnxruntime
    computes with. The tap at the image's corner also falls on the padding, where the sum
    leaves it out (0 * inf would be NaN). Quantizing it is the error, naming the weight."""
    ort = pytest.importorskip("onnxruntime")
    from edgenn.api import compile_model, load_model

    w = np.ones((4, 2, 3, 3), np.float32)
    w[1, 0, 2, 2] = value
    data = _conv_bn(weight=w).SerializeToString()
    for command in ("inspect", "run"):
        outcome, err = _cli(tmp_path, data, command)
        assert outcome is Outcome.OK, err
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    ours = compile_model(load_model(tmp_path / "hostile.onnx")).run(x)[0]
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.isfinite(theirs).any() and not np.isfinite(theirs).all()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, equal_nan=True)
    outcome, err = _cli(tmp_path, data, "quantize")
    assert outcome is Outcome.CLEAN_ERROR, err
    assert "'w'" in err and "non-finite" in err


def test_float_overflow_runs_like_onnxruntime(tmp_path: Path) -> None:
    """Was: RuntimeWarning: overflow encountered in ... on stderr. Finite weights whose sums
    pass float32's range give inf in the output, as in onnxruntime, silently."""
    ort = pytest.importorskip("onnxruntime")
    from edgenn.api import compile_model, load_model

    w = np.full((4, 2, 3, 3), 1e38, np.float32)
    data = _conv_bn(weight=w).SerializeToString()
    outcome, err = _cli(tmp_path, data, "run")
    assert outcome is Outcome.OK, err
    # positive inputs: every sum overflows whatever the accumulation order
    x = 1 + np.abs(np.random.default_rng(1).standard_normal((1, 2, 6, 6))).astype(np.float32)
    ours = compile_model(load_model(tmp_path / "hostile.onnx")).run(x)[0]
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    theirs = sess.run(None, {"x": x})[0]
    assert np.isposinf(theirs).all()
    np.testing.assert_array_equal(ours, theirs)


def test_quantize_overflow_names_tensor(tmp_path: Path) -> None:
    """Was: ValueError: cannot quantize the range [-inf, inf] (a traceback)."""
    w = np.full((4, 2, 3, 3), 1e38, np.float32)
    outcome, err = _cli(tmp_path, _conv_bn(weight=w).SerializeToString(), "quantize")
    assert outcome is Outcome.CLEAN_ERROR, err
    assert "non-finite range" in err and "tensor 'y'" in err


def test_zero_quantization_scale_names_tensor(tmp_path: Path) -> None:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant")]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    graph = helper.make_graph(nodes, "qdq",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    for command in ("inspect", "run"):
        outcome, err = _cli(tmp_path, model.SerializeToString(), command)
        assert outcome is Outcome.CLEAN_ERROR, err
        assert "quantization scale 0.0" in err and "'q'" in err


def test_batchnorm_fold_overflow_keeps_the_batchnorm(tmp_path: Path) -> None:
    """Was an error (folded weights beyond float32's range), before that a RuntimeWarning.
    3e38 * 2 is inf in folded weights, while the two layers can give a finite number: the
    BatchNorm stays a node and the model runs as onnxruntime runs it."""
    ort = pytest.importorskip("onnxruntime")
    from edgenn.api import compile_model, load_model

    w = np.full((4, 2, 3, 3), 3e38, np.float32)
    data = _conv_bn(weight=w, var=np.full(4, 0.25, np.float32)).SerializeToString()
    outcome, err = _cli(tmp_path, data)
    assert outcome is Outcome.OK, err
    graph = load_model(tmp_path / "hostile.onnx")
    assert [n.op for n in graph.nodes] == ["Conv2D", "BatchNorm"]
    # positive inputs: every sum overflows whatever the accumulation order
    x = 1 + np.abs(np.random.default_rng(1).standard_normal((1, 2, 6, 6))).astype(np.float32)
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.isposinf(theirs).all()
    np.testing.assert_array_equal(compile_model(graph).run(x)[0], theirs)


def test_fuzz_tool_writes_report(tmp_path: Path) -> None:
    """``tools/fuzz.py``: the table, the JSON report and the exit status."""
    import json
    import subprocess
    import sys

    out = tmp_path / "fuzz.json"
    tool = Path(__file__).resolve().parents[1] / "tools" / "fuzz.py"
    proc = subprocess.run([sys.executable, str(tool), "--n", "12", "--seed", "3",
                           "--commands", "inspect", "--json", str(out), "--workers", "1"],
                          capture_output=True, text=True, timeout=300)
    doc = json.loads(out.read_text())
    assert proc.returncode == (1 if any(f["findings"] for f in doc["families"].values()) else 0)
    assert "fuzzing outcomes" in proc.stdout
    total = sum(sum(c.values()) for fam in doc["families"].values()
                for c in fam["counts"].values())
    assert total == 12
