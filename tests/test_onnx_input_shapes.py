"""Fixing an ONNX model's dynamic input dimensions (``load_model(input_shapes=...)``,
``--input-shape NAME=D0,D1,...``) and making inputs constants (``input_values``,
``--input-value NAME=V``) at load, against onnxruntime; the one-line errors for a name the
model does not take, a wrong rank or a dimension the file fixes otherwise; unfixed dynamic
dimensions are taken as 1, and an error they cause says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgenn.api import compile_model, load_model
from edgenn.cli.main import main
from edgenn.errors import EdgennError
from tests.cli_errors import error_line
from tests.onnx_graphs import make_model, ort_run

pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT


def _stft_like(path: Path) -> Path:
    """x [batch, sequence] -> reflect pad 8 on the sequence -> * scale -> + bias input."""
    nodes = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
             helper.make_node("Pad", ["u", "pads"], ["p"], mode="reflect"),
             helper.make_node("Mul", ["p", "k"], ["m"]),
             helper.make_node("Cast", ["off"], ["offf"], to=F),
             helper.make_node("Add", ["m", "offf"], ["y"])]
    path.write_bytes(make_model(
        nodes, [("x", F, ["batch", "sequence"]), ("off", TensorProto.INT64, [])], ["y"],
        {"ax": np.asarray([1], np.int64), "pads": np.asarray([0, 0, 0, 0, 0, 8], np.int64),
         "k": np.asarray(0.5, np.float32)}))
    return path


def test_fixed_dimensions_and_value_match_onnxruntime(tmp_path: Path) -> None:
    path = _stft_like(tmp_path / "m.onnx")
    graph = load_model(path, input_shapes={"x": (2, 40)}, input_values={"off": 3})
    assert graph.inputs == ("x",) and graph.tensor("x").shape == (2, 40)
    x = np.random.default_rng(0).standard_normal((2, 40)).astype(np.float32)
    want = ort_run(path.read_bytes(), {"x": x, "off": np.asarray(3, np.int64)})
    np.testing.assert_allclose(compile_model(graph, "ref").run(x)[0], want[0], rtol=1e-6)


def test_unfixed_dimensions_are_one_and_the_error_says_so(tmp_path: Path) -> None:
    path = _stft_like(tmp_path / "m.onnx")
    with pytest.raises(EdgennError) as info:
        load_model(path)
    msg = str(info.value)
    assert "\n" not in msg and "reflect pads" in msg
    assert "dynamic input dimensions taken as 1: x[0] (batch), x[1] (sequence)" in msg
    assert "--input-shape" in msg


@pytest.mark.parametrize("kwargs, match", [
    ({"input_shapes": {"nope": (1, 4)}}, r"--input-shape 'nope': the model's inputs are "
                                         r"\['x', 'off'\]"),
    ({"input_shapes": {"x": (1, 4, 4)}}, r"--input-shape 'x': shape \[1, 4, 4\], the input is "
                                         r"declared \[batch, sequence\] \(rank 2\)"),
    ({"input_shapes": {"x": (0, 4)}}, r"dimension 0 is 0"),
    ({"input_values": {"off": [1, 2]}}, r"--input-value 'off': a value of shape \[2\] for an "
                                        r"input of shape \[\]"),
])
def test_bad_fixes_are_one_line(tmp_path: Path, kwargs: dict[str, object], match: str) -> None:
    path = _stft_like(tmp_path / "m.onnx")
    with pytest.raises(EdgennError, match=r"^[^\n]*" + match):
        load_model(path, **kwargs)  # type: ignore[arg-type]


def test_a_dimension_the_file_fixes_cannot_change(tmp_path: Path) -> None:
    path = tmp_path / "f.onnx"
    path.write_bytes(make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 8])],
                                ["y"]))
    with pytest.raises(EdgennError, match=r"^[^\n]*--input-shape 'x': dimension 1 is 9, the "
                                          r"input is declared \[1, 8\]"):
        load_model(path, input_shapes={"x": (1, 9)})
    assert load_model(path, input_shapes={"x": (1, 8)}).tensor("x").shape == (1, 8)


def test_tflite_refuses_the_fixes_in_one_line(tmp_path: Path) -> None:
    from tflite_build import Op, T, add_options, build

    tfl = tmp_path / "add.tflite"
    tfl.write_bytes(build([T("a", (1, 2), 0), T("b", (1, 2), 0), T("y", (1, 2), 0)],
                          [Op(0, [0, 1], [2], add_options())], [0, 1], [2]))
    with pytest.raises(EdgennError, match=r"^[^\n]*supported for ONNX models"):
        load_model(tfl, input_shapes={"a": (1, 2)})


def test_cli_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _stft_like(tmp_path / "m.onnx")
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    assert main(["run", str(path), "--input-shape", "x=1,16", "--input-value", "off=-2",
                 "--input", str(tmp_path / "x.npy"), "--output", str(out)]) == 0
    want = ort_run(path.read_bytes(), {"x": x, "off": np.asarray(-2, np.int64)})
    np.testing.assert_allclose(np.load(out).reshape(want[0].shape), want[0], rtol=1e-6)
    capsys.readouterr()
    err = error_line(capsys, ["inspect", str(path), "--input-shape", "x=1,a"])
    assert "--input-shape 'x=1,a': expected NAME=D0,D1,... (integers)" in err
    err = error_line(capsys, ["inspect", str(path), "--input-value", "off"])
    assert "--input-value 'off': expected NAME=V[,V...]" in err
