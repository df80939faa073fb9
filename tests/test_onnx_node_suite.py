"""ONNX's own operator test suite (``onnx.backend.test.case.node``: 1,800+ single-node models
with inputs) through the ONNX importer and the reference runtime, against onnxruntime.

For every operator type edgenn imports, each node test either runs and matches onnxruntime
within 1e-5 relative (1e-6 absolute), or is refused at import or compile with one of edgenn's
typed errors (an attribute or type edgenn does not support); anything else (a wrong value, a
Python traceback) fails. The number that run is reported per operator, and an operator with
float32 node tests must run at least one of them.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import onnx
import pytest

ort = pytest.importorskip("onnxruntime")

from edgenn.backends.ref import compile_ref  # noqa: E402
from edgenn.errors import EdgennError  # noqa: E402
from edgenn.frontends.onnx import load_onnx  # noqa: E402
from edgenn.frontends.onnx.loader import supported_onnx_ops  # noqa: E402

# Operators that only move shapes or constants: their node tests take int64 tensors or none
# edgenn runs as a graph of its own (they are folded while importing real models).
SHAPE_ONLY = {"Constant", "Shape", "Identity", "Dropout"}


@functools.cache
def _node_tests() -> list[Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generators divide by zero on purpose
        return [c for c in collect_testcases(None) if c.model is not None and c.data_sets]


def _float_io(case: Any) -> bool:
    graph = case.model.graph
    return all(v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
               for v in list(graph.input) + list(graph.output))


def _cases_of(op: str) -> list[Any]:
    return [c for c in _node_tests() if {n.op_type for n in c.model.graph.node} == {op}]


def _ort(model: onnx.ModelProto, xs: list[np.ndarray]) -> list[np.ndarray] | None:
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        return list(sess.run(None, dict(zip(names, xs, strict=True))))
    except Exception:  # noqa: BLE001  (an opset onnxruntime lacks: use the suite's outputs)
        return None


def _frozen(model: onnx.ModelProto, inputs: list[np.ndarray]) -> onnx.ModelProto:
    """``model`` with every graph input but the first made an initializer holding the test's
    value (weights, scales and bounds are constants in the models edgenn compiles)."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    graph = frozen.graph
    keep = graph.input[0]
    for vi, x in zip(list(graph.input)[1:], inputs[1:], strict=True):
        graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(x), vi.name))
    del graph.input[:]
    graph.input.append(keep)
    return frozen


def _compile(model: onnx.ModelProto, name: str) -> Any:
    try:
        return compile_ref(load_onnx(model.SerializeToString(), f"{name}.onnx"))
    except EdgennError as err:
        msg = str(err)
        assert "\n" not in msg, f"{name}: multi-line error {msg!r}"
        return msg


def run_case(case: Any) -> str:
    """"ran", "refused: <one line>", or raises AssertionError on a wrong value.

    A model edgenn refuses as it is (e.g. weights fed as inputs) is retried with its other
    inputs frozen to the data set's values."""
    exe = _compile(case.model, case.name)
    for inputs, expected in case.data_sets:
        inputs = [np.asarray(x) for x in inputs]
        model, run_inputs = case.model, inputs
        if isinstance(exe, str):
            if len(inputs) < 2:
                return f"refused: {exe}"
            model, run_inputs = _frozen(case.model, inputs), inputs[:1]
            frozen = _compile(model, case.name)
            if isinstance(frozen, str):
                return f"refused: {frozen}"
            runner = frozen
        else:
            runner = exe
        want = _ort(model, run_inputs) or list(expected)
        try:
            got = runner.run(*run_inputs)
        except EdgennError as err:
            return f"refused: {err}"
        assert len(got) == len(want), f"{case.name}: {len(got)} outputs, expected {len(want)}"
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.shape == np.shape(w), (f"{case.name}: output {j} shape {g.shape}, "
                                            f"expected {np.shape(w)}")
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{case.name}: output {j}")
    return "ran"


@pytest.mark.parametrize("op", sorted(set(supported_onnx_ops()) - SHAPE_ONLY))
def test_onnx_node_tests(op: str) -> None:
    cases = [c for c in _cases_of(op) if _float_io(c)]
    if not cases:
        pytest.skip(f"ONNX has no float32 single-node test of {op}")
    results = {c.name: run_case(c) for c in cases}
    ran = [n for n, r in results.items() if r == "ran"]
    print(f"{op}: {len(ran)} of {len(cases)} node tests run and match onnxruntime")
    assert ran, f"{op}: every float32 node test was refused: {results}"


# Operators whose node tests carry their data in another element type than float32 (ONNX's
# Pad tests pad int32 tensors, comparisons give bool tensors): those named here run (the
# others are refused in one line: uint / int16 / string element types, Pad's wrap mode).
_COMPARED = ("equal", "less", "greater", "less_equal", "greater_equal")
TYPED = {
    "Pad": {"test_constant_pad", "test_constant_pad_axes", "test_constant_pad_negative_axes",
            "test_edge_pad", "test_reflect_pad"},
    "Equal": {"test_equal", "test_equal_bcast", "test_equal_int8"},
    # why int8: the IR compares int8 (TFLite's comparisons); unquantized ONNX int8 compares
    # its stored values
    **{op: {f"test_{name}", f"test_{name}_bcast", f"test_{name}_int8"} for op, name in
       zip(("Less", "Greater", "LessOrEqual", "GreaterOrEqual"), _COMPARED[1:], strict=True)},
    "Not": {"test_not_2d", "test_not_3d", "test_not_4d"},
    **{op: {f"test_{low}{d}d" for d in (2, 3, 4)}
       | {f"test_{low}_bcast{v}" for v in ("3v1d", "3v2d", "4v2d", "4v3d", "4v4d")}
       for op, low in (("And", "and"), ("Or", "or"), ("Xor", "xor"))},
    "Where": {"test_where_example", "test_where_long_example"},
}


@pytest.mark.parametrize("op", sorted(TYPED))
def test_onnx_node_tests_typed(op: str) -> None:
    cases = [c for c in _cases_of(op) if c.name in TYPED[op]]
    assert {c.name for c in cases} == TYPED[op]
    results = {c.name: run_case(c) for c in cases}
    assert all(r == "ran" for r in results.values()), results
    refused = {c.name: run_case(c) for c in _cases_of(op) if c.name not in TYPED[op]}
    assert all(r.startswith("refused: ") for r in refused.values()), refused
