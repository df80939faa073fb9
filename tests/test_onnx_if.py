"""ONNX If whose condition is a constant at import: the taken branch is imported in place
(then and else, branches that read the outer graph's inputs and constants, nested Ifs, a
branch that passes an outer value through, a condition computed from a graph input fixed
with ``input_values``), checked against onnxruntime on the reference runtime; a condition only
known at run time is refused in one line that names the input to fix."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import GraphProto, TensorProto, helper, numpy_helper

from edgenn.backends.ref import compile_ref
from edgenn.errors import EdgennError
from edgenn.frontends.onnx import load_onnx
from tests.onnx_graphs import make_model, ort_run

pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT


def _branch(name: str, nodes: list[object], out: str,
            inits: dict[str, np.ndarray] | None = None) -> GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, F, None)],
                             initializer=[numpy_helper.from_array(a, n)
                                          for n, a in (inits or {}).items()])


def _then_else() -> tuple[GraphProto, GraphProto]:
    # then: x * outer weight + its own bias; else: Relu(x) - outer weight (outer-scope names)
    then = _branch("then", [helper.make_node("Mul", ["x", "w"], ["t0"]),
                            helper.make_node("Add", ["t0", "b"], ["t_out"])], "t_out",
                   {"b": np.asarray([0.5, -1.0, 2.0], np.float32)})
    other = _branch("else", [helper.make_node("Relu", ["x"], ["e0"]),
                             helper.make_node("Sub", ["e0", "w"], ["e_out"])], "e_out")
    return then, other


def _if_model(cond: np.ndarray | None) -> bytes:
    then, other = _then_else()
    inits = {"w": np.asarray([1.5, -2.0, 0.25], np.float32)}
    inputs = [("x", F, [2, 3])]
    if cond is None:  # the condition is a graph input
        inputs.append(("c", TensorProto.BOOL, []))
    else:
        inits["c"] = cond
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
             helper.make_node("Sigmoid", ["y"], ["z"])]
    return make_model(nodes, inputs, ["z"], inits)


@pytest.mark.parametrize("cond", [True, False])
def test_constant_condition_imports_the_taken_branch(cond: bool) -> None:
    data = _if_model(np.asarray(cond))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    want = ort_run(data, {"x": x})
    graph = load_onnx(data, "if.onnx")
    got = compile_ref(graph).run(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    ops = [n.op for n in graph.nodes]
    assert ("Mul" in ops) is cond and ("Relu" in ops) is not cond  # only one branch


def test_condition_from_an_input_fixed_as_a_constant() -> None:
    # the sample-rate pattern: If(Equal(sr, 16000)), sr fixed at load with input_values
    then, other = _then_else()
    nodes = [helper.make_node("Equal", ["sr", "k"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    data = make_model(nodes, [("x", F, [2, 3]), ("sr", TensorProto.INT64, [])], ["y"],
                      {"k": np.asarray(16000, np.int64),
                       "w": np.asarray([1.5, -2.0, 0.25], np.float32)})
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    for sr in (16000, 8000):
        want = ort_run(data, {"x": x, "sr": np.asarray(sr, np.int64)})
        graph = load_onnx(data, "if.onnx", input_values={"sr": sr})
        assert graph.inputs == ("x",)
        np.testing.assert_allclose(compile_ref(graph).run(x)[0], want[0], rtol=1e-6)


def test_nested_if_and_a_branch_passing_an_outer_value_through() -> None:
    inner_then = _branch("it", [helper.make_node("Neg", ["x"], ["n"])], "n")
    inner_else = _branch("ie", [helper.make_node("Abs", ["x"], ["a"])], "a")
    # the outer then-branch holds an If on a condition computed from shapes inside it
    outer_then = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("ReduceProd", ["s"], ["p"], keepdims=0),
         helper.make_node("Equal", ["p", "six"], ["c2"]),
         helper.make_node("If", ["c2"], ["r"], then_branch=inner_then,
                          else_branch=inner_else)],
        "ot", [], [helper.make_tensor_value_info("r", F, None)],
        initializer=[numpy_helper.from_array(np.asarray(6, np.int64), "six")])
    # why the Identity: onnxruntime refuses a branch whose output is an outer name itself
    outer_else = _branch("oe", [helper.make_node("Identity", ["x"], ["ex"])], "ex")
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    for cond in (True, False):
        nodes = [helper.make_node("If", ["c"], ["y"], then_branch=outer_then,
                                  else_branch=outer_else),
                 helper.make_node("Relu", ["y"], ["z"])]
        data = make_model(nodes, [("x", F, [2, 3])], ["z"], {"c": np.asarray(cond)})
        want = ort_run(data, {"x": x})
        graph = load_onnx(data, "if.onnx")
        np.testing.assert_allclose(compile_ref(graph).run(x)[0], want[0], rtol=1e-6)
        assert ("Neg" in [n.op for n in graph.nodes]) is cond


def test_run_time_condition_is_refused_naming_the_input() -> None:
    data = _if_model(None)
    with pytest.raises(EdgennError) as info:
        load_onnx(data, "if.onnx")
    msg = str(info.value)
    assert "\n" not in msg
    assert "If on a condition 'c' computed at run time from graph input 'c'" in msg
    assert "--input-value c=VALUE" in msg


def test_run_time_condition_through_nodes_names_the_graph_input() -> None:
    then, other = _then_else()
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    data = make_model(nodes, [("x", F, [2, 3])], ["y"],
                      {"zero": np.asarray(0, np.float32),
                       "w": np.asarray([1.5, -2.0, 0.25], np.float32)})
    with pytest.raises(EdgennError, match=r"^[^\n]*node 'y': If on a condition 'c' computed at "
                                          r"run time from graph input 'x'"):
        load_onnx(data, "if.onnx")
