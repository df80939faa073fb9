"""TFLite IF: both branches inlined, each output selected with Where
(``edgenn/frontends/tflite/converters/control.py``), against TFLite Micro, which runs one
branch. The models are hand-made (``tests/tflite_build.py``): then-branch ADD of a constant,
else-branch MUL by a constant, the condition GREATER(gate, 0) on a second input, so the
inputs take both branches."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import tflite

from edgenn.errors import UnsupportedOperatorError
from edgenn.frontends.tflite import load_tflite
from tests.tflite_build import FLOAT32, INT8, Op, T, add_options, build, if_options

BOOL = 6
OP = tflite.BuiltinOperator
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")
ADD_K = np.array([[0.5, -1.0, 2.0, 0.0]], np.float32)
MUL_K = np.array([[1.5, 2.0, -1.0, 3.0]], np.float32)
Q = {"scale": [0.05], "zero_point": [3]}


def _branch(opcode: int, const: np.ndarray, int8: bool) -> tuple:  # type: ignore[type-arg]
    kind = INT8 if int8 else FLOAT32
    q = Q if int8 else {}
    tensors = [T("arg0", (1, 4), kind, **q), T("k", (1, 4), kind, const, **q),
               T("out", (1, 4), kind, **q)]
    options = add_options() if opcode == OP.ADD else (
        tflite.BuiltinOptions.MulOptions, _mul_options)
    return tensors, [Op(opcode, [0, 1], [2], options)], [0], [2]


def _mul_options(b) -> int:  # type: ignore[no-untyped-def]
    tflite.MulOptionsStart(b)
    return tflite.MulOptionsEnd(b)


def _model(int8: bool, then_ops: tuple | None = None,  # type: ignore[type-arg]
           scalar: bool = False) -> bytes:
    """``scalar``: the condition is RESHAPEd to rank 0 first, as TF's converter writes it (a
    layer that cannot take a batch on ref, a bool Reshape on Cortex-M)."""
    kind = INT8 if int8 else FLOAT32
    q = Q if int8 else {}
    if int8:
        add_k = np.array([[10, -20, 30, 0]], np.int8)
        mul_k = np.array([[23, 43, -17, 63]], np.int8)  # real 1.0, 2.0, -1.0, 3.0
    else:
        add_k, mul_k = ADD_K, MUL_K
    tensors = [T("gate", (1,), FLOAT32), T("x", (1, 4), kind, **q),
               T("zero", (1,), FLOAT32, np.zeros(1, np.float32)), T("cond", (1,), BOOL),
               T("y", (1, 4), kind, **q)]
    ops = [Op(OP.GREATER, [0, 2], [3]), Op(OP.IF, [3, 1], [4], if_options(1, 2))]
    if scalar:
        tensors.append(T("cond0", (), BOOL))
        ops = [ops[0], Op(OP.RESHAPE, [3], [5]), Op(OP.IF, [5, 1], [4], if_options(1, 2))]
    then = then_ops or _branch(OP.ADD, add_k, int8)
    return build(tensors, ops, [0, 1], [4], subgraphs=[then, _branch(OP.MUL, mul_k, int8)])


def _inputs(int8: bool, n: int = 8) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    gate = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) * rng.uniform(0.1, 2, n)
    gate[0] = 0.0  # not greater: the else branch
    if int8:
        x = rng.integers(-128, 128, (n, 1, 4)).astype(np.int8)
    else:
        x = rng.normal(0, 2, (n, 1, 4)).astype(np.float32)
    return [gate.astype(np.float32).reshape(n, 1), x]


def test_if_imports_as_where_over_both_branches() -> None:
    graph = load_tflite(_model(False), "if")
    assert [n.op for n in graph.nodes] == ["Greater", "Add", "Mul", "Where"]


@pytest.mark.parametrize("scalar", [False, True], ids=["cond1", "cond0"])
@pytest.mark.parametrize("int8", [False, True], ids=["float32", "int8"])
@pytest.mark.parametrize("target", ["ref", pytest.param("cortex-m4", marks=needs_arm)])
def test_if_matches_tflm(int8: bool, target: str, scalar: bool) -> None:
    pytest.importorskip("tflite_micro")
    from edgenn.api import compile_model
    from edgenn.oracles.tflm import tflm_run

    data = _model(int8, scalar=scalar)
    xs = _inputs(int8)
    want = tflm_run(data, *xs)[0]
    got = compile_model(load_tflite(data, "if"), target).run(*xs)[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    taken = xs[0][:, 0] > 0
    assert taken.any() and (~taken).any()  # both branches are exercised
    if int8:
        assert np.array_equal(got, want)
    else:
        assert np.allclose(got, want, rtol=0, atol=1e-6)
    if not int8:  # the branches really differ: a model that ran one of them would not match
        x = xs[1]
        assert not np.allclose(want[~taken], (x + ADD_K)[~taken], atol=1e-3)
        assert not np.allclose(want[taken], (x * MUL_K)[taken], atol=1e-3)


def test_if_refuses_nested_control_flow() -> None:
    inner = ([T("arg0", (1, 4)), T("c", (1,), BOOL), T("out", (1, 4))],
             [Op(OP.IF, [1, 0], [2], if_options(2, 2))], [0], [2])
    with pytest.raises(UnsupportedOperatorError, match="nested control flow"):
        load_tflite(_model(False, inner), "nested")


def test_if_refuses_branches_that_disagree() -> None:
    other = ([T("arg0", (1, 4)), T("out", (1, 4), INT8, scale=[0.1], zero_point=[0])],
             [Op(OP.QUANTIZE, [0], [1])], [0], [1])
    with pytest.raises(UnsupportedOperatorError, match="branches must agree"):
        load_tflite(_model(False, other), "disagree")


def test_if_refuses_a_branch_with_resource_variables() -> None:
    """Running an untaken branch that assigns a variable would change the state."""
    side = ([T("arg0", (1, 4)), T("h", (), 13), T("out", (1, 4))],
            [Op(OP.VAR_HANDLE, [], [1]), Op(OP.ASSIGN_VARIABLE, [1, 0], []),
             Op(OP.ABS, [0], [2])], [0], [2])
    with pytest.raises(UnsupportedOperatorError, match="VAR_HANDLE") as err:
        load_tflite(_model(False, side), "stateful_branch")
    assert "\n" not in str(err.value)


def test_if_condition_must_be_one_bool() -> None:
    from edgenn.errors import ModelFormatError

    tensors = [T("gate", (1, 2), FLOAT32), T("x", (1, 4)), T("y", (1, 4))]
    ops = [Op(OP.IF, [0, 1], [2], if_options(1, 2))]
    add = _branch(OP.ADD, ADD_K, False)
    data = build(tensors, ops, [0, 1], [2], subgraphs=[add, add])
    with pytest.raises(ModelFormatError, match="not a one-element bool"):
        load_tflite(data, "cond")
