"""Conv2D / FullyConnected lowered to the accelerator's GEMM: bit-exact with the reference."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import vta_standin
from hypothesis import given, settings
from hypothesis import strategies as st
from vta_graphs import conv_graph, fc_graph, random_input

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.ref import compile_ref
from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.conv import VtaConv2D, cpu_reason, weight_matrices
from edgenn.backends.vta.executable import compile_vta
from edgenn.backends.vta.gemm import GemmRun
from edgenn.backends.vta.im2col import ConvGeometry, im2col
from edgenn.backends.vta.offload import OffloadTarget
from edgenn.ir import Activation, Graph

RELU, RELU6 = Activation.RELU, Activation.RELU6


def assert_same_as_ref(graph: Graph, batch: int = 2, schedule: str = "tall_pipelined") -> object:
    x = random_input(graph, batch)
    exe = compile_vta(graph, schedule=schedule)
    got = exe.run(x)[0]
    want = compile_ref(graph).run(x)[0]
    assert got.dtype == np.int8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return exe


# (hw, ci, co, k, strides, pads, dilations, groups, act, per_channel)
CONV_CASES = {
    "1x1": ((8, 8), 16, 32, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, Activation.NONE, True),
    "1x1-stride2-ragged": ((9, 7), 20, 24, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, RELU, True),
    "3x3-same": ((10, 10), 16, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, RELU, True),
    "3x3-stride2": ((11, 11), 32, 48, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, RELU6, True),
    "3x3-ragged-ch": ((6, 9), 5, 7, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, Activation.NONE,
                      True),
    "3x3-per-tensor": ((8, 8), 8, 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, RELU, False),
    "7x7-stride2-rgb": ((23, 23), 3, 64, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1, RELU, True),
    "5x3-asym-pads": ((9, 12), 6, 10, (5, 3), (1, 2), (2, 0, 1, 2), (1, 1), 1, RELU6, True),
    "dilated": ((12, 12), 8, 16, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, Activation.NONE, True),
    "grouped": ((8, 8), 32, 48, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, RELU, True),
    "valid-big-k": ((5, 5), 64, 40, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, RELU, True),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv_bit_exact(case: str) -> None:
    hw, ci, co, k, strides, pads, dil, groups, act, per_channel = CONV_CASES[case]
    graph = conv_graph(sum(map(ord, case)), hw, ci, co, k, strides, pads, dil, groups, act,
                       per_channel)
    exe = assert_same_as_ref(graph)
    assert exe.placement()[0]["where"] == "vta"


@st.composite
def conv_configs(draw: st.DrawFn) -> dict:
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    groups = draw(st.sampled_from([1, 1, 1, 2, 3]))
    return dict(
        hw=(draw(st.integers((k[0] - 1) * dil[0] + 1, 9)),
            draw(st.integers((k[1] - 1) * dil[1] + 1, 9))),
        ci=groups * draw(st.integers(1, 20)), co=groups * draw(st.integers(1, 20)), k=k,
        strides=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        pads=tuple(draw(st.integers(0, 2)) for _ in range(4)), dilations=dil, groups=groups,
        act=draw(st.sampled_from(list(Activation))), per_channel=draw(st.booleans()),
        bias=draw(st.booleans()), seed=draw(st.integers(0, 2**16)),
    )


@given(conv_configs(), st.sampled_from(["tiled2", "optimized", "tall_pipelined"]))
@settings(max_examples=25)
def test_random_conv_shapes_bit_exact(c: dict, schedule: str) -> None:
    seed = c.pop("seed")
    graph = conv_graph(seed, **c)
    assert_same_as_ref(graph, batch=1, schedule=schedule)


@pytest.mark.parametrize("in_zp", [-128, 0, 127])
def test_conv_extreme_zero_points_and_no_bias(in_zp: int) -> None:
    graph = conv_graph(3, (7, 7), 12, 20, (3, 3), (1, 1), (1, 1, 1, 1), bias=False, in_zp=in_zp)
    assert_same_as_ref(graph)


@pytest.mark.parametrize("schedule", ["tiled2", "optimized", "tall_pipelined"])
def test_every_schedule_is_bit_exact(schedule: str) -> None:
    graph = conv_graph(5, (9, 9), 24, 40, (3, 3), (2, 2), (1, 1, 1, 1), act=RELU)
    assert_same_as_ref(graph, schedule=schedule)


@pytest.mark.parametrize(("k", "co", "act", "per_channel"), [
    (512, 1000, Activation.NONE, True), (37, 10, RELU, False), (16, 3, RELU6, True),
])
def test_fully_connected_bit_exact(k: int, co: int, act: Activation, per_channel: bool) -> None:
    assert_same_as_ref(fc_graph(k + co, k, co, act, per_channel), batch=3)


def test_batch_rows_stack_into_one_gemm() -> None:
    graph = conv_graph(9, (6, 6), 16, 16, (3, 3), (1, 1), (1, 1, 1, 1))
    exe = assert_same_as_ref(graph, batch=3)
    (record,) = exe.last.layers
    assert record.mkn == (3 * 36, 144, 16)
    assert [g.m for g in record.gemms] == [108]


def test_depthwise_stays_on_the_cpu_and_is_still_exact() -> None:
    graph = conv_graph(11, (8, 8), 16, 16, (3, 3), (1, 1), (1, 1, 1, 1), groups=16)
    exe = assert_same_as_ref(graph)
    (where,) = exe.placement()
    assert where["where"] == "cpu" and "depthwise" in where["why_cpu"]
    assert "depthwise" in exe.log()[0]


def test_im2col_pads_with_the_zero_point_in_weight_order() -> None:
    x = np.arange(2 * 3 * 3 * 2, dtype=np.int64).reshape(2, 3, 3, 2).astype(np.int8)
    geo = ConvGeometry((2, 2), (1, 1), (1, 1), (1, 1, 0, 0), (3, 3))
    a = im2col(x, geo, pad_value=-7)
    assert a.shape == (2 * 9, 2 * 2 * 2) and a.flags.c_contiguous
    # first output pixel: taps (-1,-1), (-1,0), (0,-1) are padding, (0,0) is x[0,0,0,:]
    np.testing.assert_array_equal(a[0], [-7, -7, -7, -7, -7, -7, 0, 1])
    # last pixel of image 1: taps x[1, 1:3, 1:3, :] in (kh, kw, c) order
    np.testing.assert_array_equal(a[-1], x[1, 1:3, 1:3, :].reshape(-1))


def test_zero_point_is_folded_into_the_bias() -> None:
    graph = conv_graph(13, (5, 5), 4, 6, (3, 3), pads=(1, 1, 1, 1), in_zp=-20)
    ref = compile_ref(graph).layers[0]
    (b,) = weight_matrices(ref)
    folded = fold_input_zero_point(ref.p.bias, b.T, -20)
    np.testing.assert_array_equal(folded, ref.p.bias + 20 * b.astype(np.int64).sum(0))
    x = random_input(graph, 1)
    target = OffloadTarget(VtaConfig.preset(), "tall_pipelined", vta_standin.run_gemm)
    a = im2col(x, VtaConv2D(ref, target).geo, -20)
    # plain int8 x int8 + folded bias == (x - zp) x w + bias, the reference's accumulator
    direct = (a.astype(np.int64) + 20) @ b.astype(np.int64) + ref.p.bias
    np.testing.assert_array_equal(a.astype(np.int64) @ b + folded, direct)


def test_another_gemm_engine_plugs_in() -> None:
    """``gemm=`` swaps the simulator for anything with run_gemm's signature (a board driver)."""
    calls = []

    def engine(a: np.ndarray, b: np.ndarray, **kw: object) -> GemmRun:
        calls.append((a.shape, b.shape, kw["out"], kw["schedule"]))
        return vta_standin.run_gemm(a, b, **kw)

    graph = conv_graph(21, (6, 6), 8, 24, (3, 3), pads=(1, 1, 1, 1), act=RELU)
    x = random_input(graph, 2)
    exe = compile_vta(graph, schedule="tiled2", gemm=engine)
    np.testing.assert_array_equal(exe.run(x)[0], compile_ref(graph).run(x)[0])
    assert calls == [((72, 72), (72, 24), "int32", "tiled2")]


def test_accumulator_overflow_risk_keeps_the_layer_on_the_cpu() -> None:
    graph = conv_graph(17, (3, 3), 3, 4, (1, 1), bias=True)
    assert cpu_reason(compile_ref(graph).layers[0]) is None
    name = graph.nodes[0].inputs[2]
    big = replace(graph.tensor(name), data=np.full(4, 2**31 - 10, np.int32))
    risky = graph.replace(tensors={**graph.tensors, name: big})
    assert "overflow" in (cpu_reason(compile_ref(risky).layers[0]) or "")
