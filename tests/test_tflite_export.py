"""The TFLite exporter, checked in TFLite Micro; and the int8 reference kernels, bit-exact
against TFLite Micro running the exported files.

Each case is one operator with random weights and realistic quantization: the output scale is
calibrated from the float version of the same graph run in TFLM, so outputs are not all
saturated. TFLM is the oracle for both the exporter (int8 output close to the float output)
and the reference kernels (zero mismatching int8 elements).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tflite_micro import runtime  # noqa: E402  (the oracle: a test dependency)

from edgenn.errors import GraphValidationError, UnsupportedOperatorError
from edgenn.export import export_tflite, save_tflite
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.padding import SAME, pad_1d
from edgenn.ir.shapes import infer
from edgenn.oracles.tflm import tflm_run

BATCH = 32
FIXTURES = Path(__file__).parent / "fixtures" / "tflite"


# -- running --------------------------------------------------------------------------------
def run_tflm(data: bytes, inputs: list[np.ndarray], n_outputs: int = 1) -> list[np.ndarray]:
    """Run every batch item through TFLM one by one; outputs stacked along axis 0."""
    return tflm_run(data, *inputs)[:n_outputs]


def run_ref(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    from edgenn.backends.ref import compile_ref

    return compile_ref(graph).run(*inputs)


def ref_supports(graph: Graph) -> bool:
    from edgenn.backends.ref.layer import layer_class

    try:
        for node in graph.nodes:
            layer_class(node, graph)
    except UnsupportedOperatorError:
        return False
    return True


# -- quantization helpers -------------------------------------------------------------------
def qp(scale: float, zp: int = 0) -> QuantParams:
    return QuantParams.per_tensor(scale, zp)


def range_quant(lo: float, hi: float) -> QuantParams:
    """Asymmetric int8 parameters covering [lo, hi] (widened to contain 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = max(hi - lo, 1e-6) / 255.0
    zp = int(np.clip(round(-128 - lo / scale), -128, 127))
    return qp(scale, zp)


def random_act_quant(rng: np.random.Generator) -> QuantParams:
    return qp(float(rng.uniform(0.01, 0.08)), int(rng.integers(-40, 41)))


def dequant(q: np.ndarray, quant: QuantParams) -> np.ndarray:
    return ((q.astype(np.float32) - quant.zp) * quant.s).astype(np.float32)


def quantize_weights(w: np.ndarray) -> tuple[np.ndarray, QuantParams]:
    """Symmetric per-channel int8 along axis 0, as the TFLite converter makes them."""
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.round(w / scale.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127)
    return q.astype(np.int8), QuantParams(scale, np.zeros_like(scale, np.int64), axis=0)


# -- cases ----------------------------------------------------------------------------------
@dataclass
class Arg:
    """One operator input: an activation (shape) or a float constant (weights, bias, operand)."""

    kind: str  # "act" | "weight" | "bias" | "const"
    shape: tuple[int, ...] = ()
    value: np.ndarray | None = None


@dataclass
class Case:
    id: str
    op: str
    args: list[Callable[[np.random.Generator], Arg]]
    attrs: dict[str, Any] = field(default_factory=dict)
    # output quantization: None = calibrate; "input" = same as input 0; or fixed params
    out_quant: QuantParams | str | None = None
    shared_quant: bool = False  # every activation input gets input 0's parameters


def act(*shape: int) -> Callable[[np.random.Generator], Arg]:
    return lambda rng: Arg("act", shape)


def weight(*shape: int) -> Callable[[np.random.Generator], Arg]:
    return lambda rng: Arg("weight", shape, rng.normal(0, 0.5, shape).astype(np.float32))


def bias(n: int) -> Callable[[np.random.Generator], Arg]:
    return lambda rng: Arg("bias", (n,), rng.normal(0, 1.0, (n,)).astype(np.float32))


def const(*shape: int) -> Callable[[np.random.Generator], Arg]:
    return lambda rng: Arg("const", shape, rng.uniform(-2, 2, shape).astype(np.float32))


def no_input() -> Callable[[np.random.Generator], Arg]:
    return lambda rng: Arg("none")


@dataclass
class Built:
    """Float and int8 graphs of one case, with their input data."""

    float_graph: Graph
    int8_graph: Graph
    int8_inputs: list[np.ndarray]
    float_inputs: list[np.ndarray]


def _graph(
    case: Case,
    inputs: list[Tensor | None],
    out_dtype: DType,
    out_quant: QuantParams | None,
    in_names: list[str],
) -> Graph:
    names = tuple(t.name if t is not None else "" for t in inputs)
    node = Node(case.id, case.op, names, ("y",), dict(case.attrs))
    ((shape, _),) = infer(node, inputs)
    y = Tensor("y", shape, out_dtype, out_quant)
    tensors = {t.name: t for t in inputs if t is not None}
    tensors["y"] = y
    return Graph(case.id, tensors, (node,), tuple(in_names), ("y",)).validate()


def build(case: Case, seed: int) -> Built:
    rng = np.random.default_rng(seed)
    args = [make(rng) for make in case.args]
    in_quants = [random_act_quant(rng) for _ in args]
    if case.shared_quant:
        in_quants = [in_quants[0]] * len(args)

    f_inputs: list[Tensor | None] = []
    q_inputs: list[Tensor | None] = []
    act_names: list[str] = []
    w_quant: QuantParams | None = None
    for i, (arg, aq) in enumerate(zip(args, in_quants, strict=True)):
        name = f"in{i}"
        if arg.kind == "none":
            f_inputs.append(None)
            q_inputs.append(None)
        elif arg.kind == "act":
            act_names.append(name)
            f_inputs.append(Tensor(name, arg.shape, DType.FLOAT32))
            q_inputs.append(Tensor(name, arg.shape, DType.INT8, aq))
        elif arg.kind == "weight":
            assert arg.value is not None
            wq, w_quant = quantize_weights(arg.value)
            deq = wq.astype(np.float32) * w_quant.scale.reshape((-1,) + (1,) * (wq.ndim - 1))
            f_inputs.append(Tensor.const(name, deq.astype(np.float32)))
            q_inputs.append(Tensor.const(name, wq, w_quant))
        elif arg.kind == "bias":
            assert arg.value is not None and w_quant is not None
            scale = (in_quants[0].s * w_quant.scale.astype(np.float64)).astype(np.float32)
            bq = np.round(arg.value / scale).astype(np.int32)
            f_inputs.append(Tensor.const(name, (bq * scale.astype(np.float64)).astype(np.float32)))
            q_inputs.append(Tensor.const(name, bq, QuantParams(scale, np.zeros_like(scale), 0)))
        else:  # an elementwise constant operand, per-tensor quantized
            assert arg.value is not None
            cq = range_quant(float(arg.value.min()), float(arg.value.max()))
            q = np.clip(np.round(arg.value / cq.s) + cq.zp, -128, 127).astype(np.int8)
            f_inputs.append(Tensor.const(name, dequant(q, cq)))
            q_inputs.append(Tensor.const(name, q, cq))

    act_quants = {t.name: t.quant for t in q_inputs if t is not None and not t.is_const}
    int8_x = [
        rng.integers(-128, 128, (BATCH,) + args[int(n[2:])].shape[1:]).astype(np.int8)
        for n in act_names
    ]
    float_x = [dequant(x, act_quants[n]) for x, n in zip(int8_x, act_names, strict=True)]  # type: ignore[arg-type]
    float_graph = _graph(case, f_inputs, DType.FLOAT32, None, act_names)

    if isinstance(case.out_quant, QuantParams):
        out_q = case.out_quant
    elif case.out_quant == "input":
        assert q_inputs[0] is not None
        out_q = q_inputs[0].quant  # type: ignore[assignment]
    else:
        (y,) = run_tflm(export_tflite(float_graph), float_x)
        lo, hi = np.percentile(y, [0.5, 99.5])
        out_q = range_quant(float(lo), float(hi))
    int8_graph = _graph(case, q_inputs, DType.INT8, out_q, act_names)
    return Built(float_graph, int8_graph, int8_x, float_x)


def conv(
    cid: str, x: tuple[int, ...], w: tuple[int, ...], with_bias: bool = True, **attrs: Any
) -> Case:
    attrs.setdefault("strides", (1, 1))
    attrs.setdefault("dilations", (1, 1))
    attrs.setdefault("pads", (0, 0, 0, 0))
    attrs.setdefault("groups", 1)
    attrs.setdefault("activation", Activation.NONE)
    args = [act(*x), weight(*w), bias(w[0]) if with_bias else no_input()]
    return Case(cid, "Conv2D", args, attrs)


def pool(cid: str, op: str, x: tuple[int, ...], **attrs: Any) -> Case:
    attrs.setdefault("strides", (1, 1))
    attrs.setdefault("pads", (0, 0, 0, 0))
    attrs.setdefault("activation", Activation.NONE)
    out_quant = attrs.pop("out_quant", "input")  # the converter keeps pooling's parameters
    return Case(cid, op, [act(*x)], attrs, out_quant)


R = Activation.RELU
CASES: list[Case] = [
    conv("conv3x3_valid", (1, 7, 7, 3), (4, 3, 3, 3)),
    conv("conv3x3_same", (1, 7, 7, 3), (5, 3, 3, 3), pads=(1, 1, 1, 1)),
    conv("conv3x3_s2_same_even", (1, 8, 8, 2), (4, 3, 3, 2), strides=(2, 2), pads=(0, 0, 1, 1)),
    conv("conv3x3_s2_same_odd", (1, 7, 9, 2), (4, 3, 3, 2), strides=(2, 2), pads=(1, 1, 1, 1)),
    conv("conv_explicit_pads", (1, 6, 6, 3), (4, 3, 3, 3), pads=(2, 0, 1, 2)),
    conv("conv_dilated_same", (1, 9, 9, 2), (3, 3, 3, 2), dilations=(2, 2), pads=(2, 2, 2, 2)),
    conv("conv_dilated_valid_s2", (1, 11, 10, 2), (3, 3, 2, 2), dilations=(2, 3), strides=(2, 1)),
    conv("conv1x1_nobias", (1, 5, 5, 8), (6, 1, 1, 8), with_bias=False),
    conv("conv_2x3_s21", (1, 6, 7, 3), (4, 2, 3, 3), strides=(2, 1), pads=(0, 1, 0, 1)),
    conv("conv_relu", (1, 6, 6, 3), (4, 3, 3, 3), pads=(1, 1, 1, 1), activation=Activation.RELU),
    conv("conv_relu6", (1, 6, 6, 3), (4, 3, 3, 3), activation=Activation.RELU6),
    conv("conv_relu_n1_1", (1, 6, 6, 3), (4, 3, 3, 3), activation=Activation.RELU_N1_TO_1),
    conv("dw_m1_same", (1, 7, 7, 4), (4, 3, 3, 1), groups=4, pads=(1, 1, 1, 1)),
    conv("dw_m2_valid", (1, 6, 6, 3), (6, 3, 3, 1), groups=3),
    conv("dw_m3_s2", (1, 8, 8, 2), (6, 3, 3, 1), groups=2, strides=(2, 2), pads=(0, 0, 1, 1)),
    conv("dw_dilated", (1, 9, 9, 3), (3, 3, 3, 1), groups=3, dilations=(2, 2), pads=(2, 2, 2, 2)),
    conv(
        "dw_explicit_relu6",
        (1, 6, 6, 4),
        (4, 3, 3, 1),
        groups=4,
        pads=(1, 2, 0, 0),
        activation=Activation.RELU6,
    ),
    conv("dw_nobias", (1, 5, 5, 4), (8, 2, 2, 1), groups=4, with_bias=False),
    Case("fc", "FullyConnected", [act(1, 16), weight(8, 16), bias(8)], {}),
    Case(
        "fc_nobias_relu",
        "FullyConnected",
        [act(1, 32), weight(10, 32), no_input()],
        {"activation": R},
    ),
    Case(
        "fc_relu6",
        "FullyConnected",
        [act(1, 12), weight(5, 12), bias(5)],
        {"activation": Activation.RELU6},
    ),
    Case("add", "Add", [act(1, 4, 4, 3), act(1, 4, 4, 3)], {}),
    Case("add_relu", "Add", [act(1, 4, 4, 3), act(1, 4, 4, 3)], {"activation": R}),
    Case("add_bcast_c", "Add", [act(1, 4, 4, 3), const(1, 1, 1, 3)], {}),
    Case("add_bcast_hw", "Add", [act(1, 4, 5, 3), act(1, 4, 1, 1)], {}),
    Case("add_bcast_2d", "Add", [act(1, 10), const(1, 10)], {"activation": Activation.RELU6}),
    Case("mul", "Mul", [act(1, 4, 4, 3), act(1, 4, 4, 3)], {}),
    Case("mul_bcast_c", "Mul", [act(1, 4, 4, 3), const(1, 1, 1, 3)], {}),
    Case("mul_bcast_relu", "Mul", [act(1, 3, 4, 2), act(1, 1, 4, 2)], {"activation": R}),
    pool("maxpool_2x2_s2", "MaxPool2D", (1, 8, 8, 3), kernel=(2, 2), strides=(2, 2)),
    pool(
        "maxpool_3x3_s2_same",
        "MaxPool2D",
        (1, 7, 7, 2),
        kernel=(3, 3),
        strides=(2, 2),
        pads=(1, 1, 1, 1),
    ),
    pool("maxpool_3x3_explicit", "MaxPool2D", (1, 6, 6, 2), kernel=(3, 3), pads=(1, 0, 0, 1)),
    pool("maxpool_relu", "MaxPool2D", (1, 6, 6, 2), kernel=(2, 3), strides=(1, 2), activation=R),
    pool("avgpool_2x2_s2", "AvgPool2D", (1, 8, 8, 3), kernel=(2, 2), strides=(2, 2)),
    pool("avgpool_3x3_same", "AvgPool2D", (1, 7, 7, 2), kernel=(3, 3), pads=(1, 1, 1, 1)),
    pool(
        "avgpool_include_pad",
        "AvgPool2D",
        (1, 6, 6, 2),
        kernel=(3, 3),
        strides=(2, 2),
        pads=(1, 1, 1, 1),
        count_include_pad=True,
    ),
    pool(
        "avgpool_include_pad_same",
        "AvgPool2D",
        (1, 5, 5, 3),
        kernel=(3, 3),
        pads=(1, 1, 1, 1),
        count_include_pad=True,
    ),
    pool("avgpool_global", "AvgPool2D", (1, 5, 5, 4), kernel=(5, 5)),
    pool("avgpool_requant", "AvgPool2D", (1, 6, 6, 2), kernel=(2, 2), out_quant=None),
    pool(
        "maxpool_requant", "MaxPool2D", (1, 6, 6, 2), kernel=(3, 3), strides=(2, 2), out_quant=None
    ),
    Case("mean_hw_keep", "Mean", [act(1, 5, 5, 4)], {"axes": (1, 2), "keepdims": True}),
    Case("mean_hw_drop", "Mean", [act(1, 5, 5, 4)], {"axes": (1, 2), "keepdims": False}),
    Case("mean_c", "Mean", [act(1, 3, 3, 6)], {"axes": (3,), "keepdims": True}),
    Case("mean_h_drop", "Mean", [act(1, 4, 3, 2)], {"axes": (1,), "keepdims": False}),
    Case("mean_neg_axis", "Mean", [act(1, 4, 6)], {"axes": (-1,), "keepdims": False}),
    Case("mean_same_quant", "Mean", [act(1, 4, 4, 8)], {"axes": (1, 2)}, "input"),
    Case("softmax_2d", "Softmax", [act(1, 10)], {"beta": 1.0}, qp(1 / 256, -128)),
    Case("softmax_4d", "Softmax", [act(1, 2, 3, 5)], {"beta": 1.0}, qp(1 / 256, -128)),
    Case("softmax_beta", "Softmax", [act(1, 7)], {"beta": 0.5}, qp(1 / 256, -128)),
    Case("concat_c", "Concat", [act(1, 3, 3, 2), act(1, 3, 3, 4)], {"axis": 3}, "input", True),
    Case(
        "concat_h3",
        "Concat",
        [act(1, 2, 3, 2), act(1, 1, 3, 2), act(1, 3, 3, 2)],
        {"axis": 1},
        "input",
        True,
    ),
    Case("concat_2d", "Concat", [act(1, 5), act(1, 3)], {"axis": -1}, "input", True),
    Case("concat_requant", "Concat", [act(1, 2, 2, 3), act(1, 2, 2, 2)], {"axis": 3}),
    Case(
        "pad",
        "Pad",
        [act(1, 3, 4, 2)],
        {"pads": ((0, 0), (1, 2), (0, 1), (0, 0)), "value": 0.0},
        "input",
    ),
    Case(
        "pad_c",
        "Pad",
        [act(1, 2, 2, 3)],
        {"pads": ((0, 0), (0, 0), (0, 0), (1, 2)), "value": 0.0},
        "input",
    ),
    Case(
        "pad_value",
        "Pad",
        [act(1, 3, 3, 2)],
        {"pads": ((0, 0), (1, 1), (2, 0), (0, 0)), "value": 0.75},
        "input",
    ),
    Case(
        "pad_float_value",
        "Pad",
        [act(1, 2, 3)],
        {"pads": ((0, 0), (1, 1), (0, 2)), "value": -1.5},
        "input",
    ),
    Case("reshape", "Reshape", [act(1, 4, 4, 2)], {"shape": (1, 32)}, "input"),
    Case("reshape_4d", "Reshape", [act(1, 12)], {"shape": (1, 2, 3, 2)}, "input"),
    Case("transpose", "Transpose", [act(1, 2, 3, 4)], {"perm": (0, 3, 1, 2)}, "input"),
    Case("relu", "Relu", [act(1, 4, 4, 3)], {}),
    Case("relu6", "Relu6", [act(1, 4, 4, 3)], {}, "input"),
    Case("relu6_requant", "Relu6", [act(1, 4, 4, 3)], {}),
    Case("reshape_requant", "Reshape", [act(1, 2, 3, 2)], {"shape": (1, 12)}),
    Case("transpose_requant", "Transpose", [act(1, 2, 3, 4)], {"perm": (0, 3, 1, 2)}),
    Case(
        "pad_requant",
        "Pad",
        [act(1, 2, 3, 2)],
        {"pads": ((0, 0), (1, 0), (0, 1), (0, 0)), "value": 0.0},
    ),
    Case("sigmoid", "Sigmoid", [act(1, 20)], {}, qp(1 / 256, -128)),
    Case("tanh", "Tanh", [act(1, 20)], {}, qp(1 / 128, 0)),
]
SEEDS = [0, 1, 2]
CASE_IDS = [c.id for c in CASES]


@pytest.fixture(scope="module")
def counts() -> Iterator[dict[str, list[int]]]:
    """Compared cases and elements per operator, printed at the end (-s)."""
    table: dict[str, list[int]] = {}
    yield table
    for op, (n_cases, n_elems) in sorted(table.items()):
        print(f"  {op:16s} {n_cases:3d} cases {n_elems:8d} int8 elements, 0 mismatches")


def _mismatch_report(case: Case, got: np.ndarray, want: np.ndarray) -> str:
    diff = got.astype(np.int32) - want.astype(np.int32)
    bad = np.argwhere(diff != 0)
    first = tuple(int(i) for i in bad[0])
    return (
        f"{case.id}: {len(bad)} of {diff.size} elements differ (ref - tflm in "
        f"{sorted(set(diff[diff != 0].tolist()))[:6]}); first at {first}: "
        f"ref {int(got[first])} tflm {int(want[first])}"
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_int8_export_runs_in_tflm_close_to_float(case: Case, seed: int) -> None:
    """The exporter's int8 file means what the float file means (to ~1 output step)."""
    b = build(case, seed)
    (yq,) = run_tflm(export_tflite(b.int8_graph), b.int8_inputs)
    (yf,) = run_tflm(export_tflite(b.float_graph), b.float_inputs)
    q = b.int8_graph.tensor("y").quant
    assert q is not None
    lo, hi = dequant(np.array([-128, 127]), q)
    err = np.abs(dequant(yq, q) - np.clip(yf, lo, hi))
    assert yq.dtype == np.int8 and yq.shape == yf.shape
    # int8 inputs are exact in float, so only weight/output rounding separates the two
    assert float(err.mean()) <= 1.0 * q.s, f"mean error {err.mean() / q.s:.2f} steps"
    assert len(np.unique(yq)) > 1 or case.op in ("Mean",), "output is constant"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_int8_ref_bit_exact_with_tflm(case: Case, seed: int, counts: dict[str, list[int]]) -> None:
    b = build(case, seed)
    if not ref_supports(b.int8_graph):
        pytest.skip(f"ref runtime has no int8 {case.op} yet")
    (want,) = run_tflm(export_tflite(b.int8_graph), b.int8_inputs)
    (got,) = run_ref(b.int8_graph, b.int8_inputs)
    assert got.dtype == np.int8 and got.shape == want.shape
    assert np.array_equal(got, want), _mismatch_report(case, got, want)
    entry = counts.setdefault(case.op, [0, 0])
    entry[0] += 1
    entry[1] += want.size


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_float_ref_matches_tflm(case: Case) -> None:
    b = build(case, 3)
    if not ref_supports(b.float_graph):
        pytest.skip(f"ref runtime has no float {case.op} yet")
    (want,) = run_tflm(export_tflite(b.float_graph), b.float_inputs)
    (got,) = run_ref(b.float_graph, b.float_inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- Quantize / Dequantize ------------------------------------------------------------------
def _unary_graph(op: str, x: Tensor, y: Tensor, **attrs: Any) -> Graph:
    node = Node(op.lower(), op, (x.name,), (y.name,), attrs)
    return Graph(op, {x.name: x, y.name: y}, (node,), (x.name,), (y.name,)).validate()


def _count(counts: dict[str, list[int]], op: str, n: int) -> None:
    entry = counts.setdefault(op, [0, 0])
    entry[0] += 1
    entry[1] += n


@pytest.mark.parametrize("scale, zp", [(0.125, 0), (0.0625, -7), (0.0371, 13), (0.21, -128)])
def test_quantize_float_to_int8_bit_exact(
    scale: float, zp: int, counts: dict[str, list[int]]
) -> None:
    rng = np.random.default_rng(int(scale * 1e4))
    shape = (1, 3, 4, 5)
    # random values over and beyond the range, plus exact ties (k + 0.5) * scale
    x = rng.uniform(-200 * scale, 200 * scale, (BATCH, *shape[1:])).astype(np.float32)
    ties = ((rng.integers(-140, 140, x.shape) + 0.5) * scale).astype(np.float32)
    x = np.where(rng.random(x.shape) < 0.3, ties, x).astype(np.float32)
    g = _unary_graph(
        "Quantize", Tensor("x", shape, DType.FLOAT32), Tensor("y", shape, DType.INT8, qp(scale, zp))
    )
    (want,) = run_tflm(export_tflite(g), [x])
    (got,) = run_ref(g, [x])
    assert np.array_equal(got, want), _mismatch_report(Case("quantize", "Quantize", []), got, want)
    _count(counts, "Quantize", want.size)


@pytest.mark.parametrize("seed", range(4))
def test_requantize_int8_to_int8_bit_exact(seed: int, counts: dict[str, list[int]]) -> None:
    rng = np.random.default_rng(seed)
    shape = (1, 4, 4, 3)
    qi, qo = random_act_quant(rng), random_act_quant(rng)
    g = _unary_graph(
        "Quantize", Tensor("x", shape, DType.INT8, qi), Tensor("y", shape, DType.INT8, qo)
    )
    x = rng.integers(-128, 128, (BATCH, *shape[1:])).astype(np.int8)
    (want,) = run_tflm(export_tflite(g), [x])
    (got,) = run_ref(g, [x])
    assert np.array_equal(got, want), _mismatch_report(Case("requant", "Quantize", []), got, want)
    assert len(np.unique(want)) > 10
    _count(counts, "Quantize(int8)", want.size)


@pytest.mark.parametrize("seed", range(3))
def test_dequantize_matches_tflm(seed: int, counts: dict[str, list[int]]) -> None:
    rng = np.random.default_rng(seed)
    shape = (1, 2, 3, 7)
    q = random_act_quant(rng)
    g = _unary_graph(
        "Dequantize", Tensor("x", shape, DType.INT8, q), Tensor("y", shape, DType.FLOAT32)
    )
    x = rng.integers(-128, 128, (BATCH, *shape[1:])).astype(np.int8)
    (want,) = run_tflm(export_tflite(g), [x])
    (got,) = run_ref(g, [x])
    assert want.dtype == np.float32
    assert np.array_equal(got, want)  # one multiply: bit-identical floats
    _count(counts, "Dequantize", want.size)


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh"])
@pytest.mark.parametrize(
    "scale, zp",
    # small scales (no input saturates), the usual range, scales where the radius cuts in,
    # a power of two (mantissa exactly 1/2) and a scale above 1
    [(1e-4, 0), (0.0123, -17), (0.0417, 90), (0.0625, 0), (0.1, -128), (0.37, 5), (1.9, -3)],
)
def test_sigmoid_tanh_every_int8_input_bit_exact(
    op: str, scale: float, zp: int, counts: dict[str, list[int]]
) -> None:
    """All 256 int8 inputs through TFLM's fixed-point LOGISTIC / TANH and through ref."""
    shape = (1, 256)
    out = qp(1 / 256, -128) if op == "Sigmoid" else qp(1 / 128, 0)
    g = _unary_graph(
        op, Tensor("x", shape, DType.INT8, qp(scale, zp)), Tensor("y", shape, DType.INT8, out)
    )
    x = np.arange(-128, 128, dtype=np.int8).reshape(shape)
    (want,) = run_tflm(export_tflite(g), [x])
    (got,) = run_ref(g, [x])
    assert np.array_equal(got, want), _mismatch_report(Case(op.lower(), op, []), got, want)
    assert np.all(np.diff(want.astype(np.int32)) >= 0)  # both curves are monotone
    _count(counts, op, want.size)


# -- float-only operators -------------------------------------------------------------------
@pytest.mark.parametrize("radius, bias_, alpha, beta", [(2, 1.0, 1e-4, 0.75), (1, 2.0, 0.1, 0.5)])
def test_float_lrn_export(radius: int, bias_: float, alpha: float, beta: float) -> None:
    """TFLM has no LRN kernel: check the written options, and ref against TFLite's formula."""
    import tflite

    rng = np.random.default_rng(radius)
    shape = (1, 3, 3, 8)
    g = _unary_graph(
        "LRN",
        Tensor("x", shape, DType.FLOAT32),
        Tensor("y", shape, DType.FLOAT32),
        radius=radius,
        bias=bias_,
        alpha=alpha,
        beta=beta,
    )
    model = tflite.Model.GetRootAsModel(export_tflite(g), 0)
    op = model.Subgraphs(0).Operators(0)
    code = model.OperatorCodes(op.OpcodeIndex()).BuiltinCode()
    assert code == tflite.BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION
    assert op.BuiltinOptionsType() == tflite.BuiltinOptions.LocalResponseNormalizationOptions
    opts = tflite.LocalResponseNormalizationOptions()
    table = op.BuiltinOptions()
    opts.Init(table.Bytes, table.Pos)
    assert opts.Radius() == radius
    np.testing.assert_allclose(
        [opts.Bias(), opts.Alpha(), opts.Beta()], [bias_, alpha, beta], rtol=1e-7
    )
    if not ref_supports(g):
        pytest.skip("ref runtime has no float LRN yet")
    x = rng.normal(0, 3, (8, *shape[1:])).astype(np.float32)
    sq = np.pad(x * x, ((0, 0), (0, 0), (0, 0), (radius, radius)))
    window = sum(sq[..., i : i + shape[3]] for i in range(2 * radius + 1))
    (got,) = run_ref(g, [x])
    np.testing.assert_allclose(got, x / (bias_ + alpha * window) ** beta, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "lo, hi", [(0.0, 6.0), (-1.0, 1.0), (0.0, float("inf")), (-2.5, float("inf")), (-3.0, 0.5)]
)
def test_float_clip_exports_as_relu_family(lo: float, hi: float) -> None:
    shape = (1, 2, 8)
    g = _unary_graph(
        "Clip", Tensor("x", shape, DType.FLOAT32), Tensor("y", shape, DType.FLOAT32), min=lo, max=hi
    )
    x = np.random.default_rng(5).normal(0, 4, (6, *shape[1:])).astype(np.float32)
    (want,) = run_tflm(export_tflite(g), [x])
    np.testing.assert_array_equal(want, np.clip(x, lo, hi))


def test_int8_clip_exports_as_maximum_minimum() -> None:
    """An int8 Clip whose output keeps its input's parameters (what the quantizer writes) is
    MAXIMUM / MINIMUM of stored integers; other output parameters cannot be exported."""
    from edgenn.backends.ref import compile_ref

    shape = (1, 4)
    q = qp(0.05, 3)
    g = _unary_graph(
        "Clip", Tensor("x", shape, DType.INT8, q), Tensor("y", shape, DType.INT8, q), min=-2, max=3
    )
    x = np.random.default_rng(6).integers(-128, 128, (16, *shape[1:])).astype(np.int8)
    (want,) = run_tflm(export_tflite(g), [x])
    (ours,) = compile_ref(g).run(x)
    np.testing.assert_array_equal(want, ours)
    assert want.min() == 3 - 40 and want.max() == 3 + 60  # both bounds bite
    other = _unary_graph("Clip", Tensor("x", shape, DType.INT8, q),
                         Tensor("y", shape, DType.INT8, qp(0.1, 0)), min=-2, max=3)
    with pytest.raises(UnsupportedOperatorError, match="clip whose output parameters differ"):
        export_tflite(other)


# -- random convolutions (hypothesis) -------------------------------------------------------
@st.composite
def conv_cases(draw: st.DrawFn) -> Case:
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    eff = [(k[i] - 1) * d[i] + 1 for i in range(2)]
    h = draw(st.integers(eff[0], eff[0] + 6))
    w = draw(st.integers(eff[1], eff[1] + 6))
    ci = draw(st.integers(1, 5))
    depthwise = draw(st.booleans())
    co = ci * draw(st.integers(1, 3)) if depthwise else draw(st.integers(1, 6))
    mode = draw(st.sampled_from(["valid", "same", "explicit"]))
    if mode == "valid":
        pads: tuple[int, ...] = (0, 0, 0, 0)
    elif mode == "same":
        ph, pw = pad_1d(SAME, h, k[0], s[0], d[0]), pad_1d(SAME, w, k[1], s[1], d[1])
        pads = (ph[0], pw[0], ph[1], pw[1])
    else:
        pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    activation = draw(st.sampled_from(list(Activation)))
    return conv(
        "hyp_conv",
        (1, h, w, ci),
        (co, k[0], k[1], 1 if depthwise else ci),
        with_bias=draw(st.booleans()),
        strides=s,
        dilations=d,
        pads=pads,
        groups=ci if depthwise and ci > 1 else 1,
        activation=activation,
    )


@settings(max_examples=100)
@given(case=conv_cases(), seed=st.integers(0, 2**16))
def test_int8_conv_random_params_bit_exact(
    case: Case, seed: int, counts: dict[str, list[int]]
) -> None:
    b = build(case, seed)
    if not ref_supports(b.int8_graph):
        pytest.skip("ref runtime has no int8 Conv2D yet")
    (want,) = run_tflm(export_tflite(b.int8_graph), b.int8_inputs)
    (got,) = run_ref(b.int8_graph, b.int8_inputs)
    assert np.array_equal(got, want), _mismatch_report(case, got, want) + f" attrs={case.attrs}"
    _count(counts, "Conv2D (random)", want.size)


@st.composite
def pool_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(["MaxPool2D", "AvgPool2D"]))
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    h, w = draw(st.integers(k[0], k[0] + 6)), draw(st.integers(k[1], k[1] + 6))
    include_pad = op == "AvgPool2D" and draw(st.booleans())
    modes = ["valid", "same"] + (["explicit"] if op == "MaxPool2D" or include_pad else [])
    mode = draw(st.sampled_from(modes))
    if mode == "valid":
        pads: tuple[int, ...] = (0, 0, 0, 0)
    elif mode == "same":
        ph, pw = pad_1d(SAME, h, k[0], s[0]), pad_1d(SAME, w, k[1], s[1])
        pads = (ph[0], pw[0], ph[1], pw[1])
    else:  # pads smaller than the window, so no window lies wholly in the padding
        pads = tuple(draw(st.integers(0, k[i % 2] - 1)) for i in range(4))
    return pool(
        "hyp_pool",
        op,
        (1, h, w, draw(st.integers(1, 4))),
        kernel=k,
        strides=s,
        pads=pads,
        count_include_pad=include_pad,
        activation=draw(st.sampled_from([Activation.NONE, Activation.RELU, Activation.RELU6])),
    )


@settings(max_examples=60)
@given(case=pool_cases(), seed=st.integers(0, 2**16))
def test_int8_pool_random_params_bit_exact(
    case: Case, seed: int, counts: dict[str, list[int]]
) -> None:
    b = build(case, seed)
    (want,) = run_tflm(export_tflite(b.int8_graph), b.int8_inputs)
    (got,) = run_ref(b.int8_graph, b.int8_inputs)
    assert np.array_equal(got, want), _mismatch_report(case, got, want) + f" attrs={case.attrs}"
    _count(counts, f"{case.op} (random)", want.size)


# -- exporter behaviour ---------------------------------------------------------------------
def _conv_graph(groups: int, ci: int, co: int) -> Graph:
    x = Tensor("x", (1, 5, 5, ci), DType.FLOAT32)
    w = Tensor.const("w", np.ones((co, 3, 3, ci // groups), np.float32))
    y = Tensor("y", (1, 3, 3, co), DType.FLOAT32)
    node = Node("grouped", "Conv2D", ("x", "w"), ("y",), {"groups": groups})
    return Graph("g", {"x": x, "w": w, "y": y}, (node,), ("x",), ("y",))


def test_grouped_conv_is_unsupported_and_named() -> None:
    with pytest.raises(UnsupportedOperatorError, match="'grouped'.*groups=2"):
        export_tflite(_conv_graph(groups=2, ci=4, co=4))


def test_depthwise_graph_uses_depthwise_op() -> None:
    import tflite

    data = export_tflite(_conv_graph(groups=4, ci=4, co=8))
    model = tflite.Model.GetRootAsModel(data, 0)
    assert data[4:8] == b"TFL3" and model.Version() == 3
    code = model.OperatorCodes(model.Subgraphs(0).Operators(0).OpcodeIndex())
    assert code.BuiltinCode() == tflite.BuiltinOperator.DEPTHWISE_CONV_2D
    assert code.DeprecatedBuiltinCode() == tflite.BuiltinOperator.DEPTHWISE_CONV_2D
    assert model.Buffers(0).DataLength() == 0


def test_avgpool_explicit_pads_excluded_from_count_is_unsupported() -> None:
    x = Tensor("x", (1, 6, 6, 2), DType.FLOAT32)
    y = Tensor("y", (1, 5, 5, 2), DType.FLOAT32)
    node = Node("ap", "AvgPool2D", ("x",), ("y",), {"kernel": (3, 3), "pads": (1, 1, 0, 0)})
    g = Graph("g", {"x": x, "y": y}, (node,), ("x",), ("y",))
    with pytest.raises(UnsupportedOperatorError, match="'ap'"):
        export_tflite(g)


def test_operator_without_tflite_builtin_is_unsupported() -> None:
    a = Tensor("a", (2, 3), DType.FLOAT32)
    b = Tensor.const("b", np.ones((3, 4), np.float32))
    y = Tensor("y", (2, 4), DType.FLOAT32)
    g = Graph(
        "g", {"a": a, "b": b, "y": y}, (Node("mm", "MatMul", ("a", "b"), ("y",)),), ("a",), ("y",)
    )
    with pytest.raises(UnsupportedOperatorError, match="MatMul node 'mm'"):
        export_tflite(g)


def test_invalid_graph_is_rejected_before_export() -> None:
    x = Tensor("x", (1, 4), DType.FLOAT32)
    y = Tensor("y", (1, 5), DType.FLOAT32)  # Relu cannot change the shape
    g = Graph("g", {"x": x, "y": y}, (Node("r", "Relu", ("x",), ("y",)),), ("x",), ("y",))
    with pytest.raises(GraphValidationError):
        export_tflite(g)


def test_save_tflite_writes_the_exported_bytes(tmp_path: Path) -> None:
    g = build(CASES[0], 0).int8_graph
    path = tmp_path / "sub" / "m.tflite"
    save_tflite(g, path)
    assert path.read_bytes() == export_tflite(g)
    assert [p.name for p in path.parent.iterdir()] == ["m.tflite"]  # no temporary left


def test_external_nchw_layout_is_kept_with_transposes() -> None:
    """An ONNX-style graph (NCHW at the boundary) exports to a file taking NCHW arrays."""
    b = build(CASES[1], 0)
    g = b.float_graph.replace(external_perm={"in0": (0, 3, 1, 2), "y": (0, 3, 1, 2)})
    x_nhwc = b.float_inputs[0]
    (y_nhwc,) = run_tflm(export_tflite(b.float_graph), [x_nhwc])
    (y_nchw,) = run_tflm(export_tflite(g), [np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))])
    np.testing.assert_array_equal(y_nchw, y_nhwc.transpose(0, 3, 1, 2))
    (y_plain,) = run_tflm(export_tflite(g, nhwc_io=True), [x_nhwc])
    np.testing.assert_array_equal(y_plain, y_nhwc)


# -- round trip of converter-made files -----------------------------------------------------
FIXTURE_FILES = sorted(FIXTURES.glob("*.tflite")) if FIXTURES.is_dir() else []


def _fixture_input(graph: Graph, n: int) -> np.ndarray:
    t = graph.tensor(graph.inputs[0])
    shape = graph.external_shape(t.name)
    rng = np.random.default_rng(0)
    if t.dtype == DType.INT8:
        return rng.integers(-128, 128, (n, *shape[1:])).astype(np.int8)
    return rng.normal(0, 1, (n, *shape[1:])).astype(np.float32)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_fixture_round_trip_gives_identical_tflm_outputs(path: Path) -> None:
    """Converter-made file -> load_tflite -> export_tflite: TFLM gives identical outputs."""
    from edgenn.frontends.tflite import load_tflite

    original = path.read_bytes()
    graph = load_tflite(original, name=str(path))
    exported = export_tflite(graph)
    try:
        runtime.Interpreter.from_bytes(original)
    except RuntimeError:
        pytest.skip(f"TFLM cannot run {path.name} (an op it has no kernel for, e.g. LRN)")
    x = _fixture_input(graph, 8)
    n_out = len(graph.outputs)
    want = run_tflm(original, [x], n_out)
    got = run_tflm(exported, [x], n_out)
    for g_, w_ in zip(got, want, strict=True):
        assert len(np.unique(w_)) > 1
        np.testing.assert_array_equal(g_, w_)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_fixture_round_trip_reimports_to_the_same_graph(path: Path) -> None:
    """Exported then re-imported: same operators, attributes, constants and quantization."""
    from edgenn.frontends.tflite import load_tflite

    first = load_tflite(path.read_bytes(), name=str(path))
    second = load_tflite(export_tflite(first), name="exported")
    assert [n.op for n in second.nodes] == [n.op for n in first.nodes]
    for a, b in zip(first.nodes, second.nodes, strict=True):
        assert set(a.attrs) == set(b.attrs), a
        for key, value in a.attrs.items():
            assert np.array_equal(np.asarray(value), np.asarray(b.attrs[key])), (a, key)
        for ta, tb in zip(first.node_inputs(a), second.node_inputs(b), strict=True):
            if ta is None or tb is None:  # the exporter may write an explicit zero bias
                other = ta if tb is None else tb
                assert other is None or (other.data is not None and not other.data.any())
                continue
            assert (ta.shape, ta.dtype, ta.quant) == (tb.shape, tb.dtype, tb.quant), ta.name
            if ta.data is not None:
                assert tb.data is not None and np.array_equal(ta.data, tb.data), ta.name
