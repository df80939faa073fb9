"""The concepts every layer shares, checked against what they stand for.

``fold_input_zero_point``: ``sum((x - zp) w) + b == sum(x w) + folded`` for random int8
operands (the identity every kernel that multiplies raw int8 values relies on), with plain
Python integers as the oracle. ``is_depthwise``: TFLite's DEPTHWISE_CONV_2D shapes are
depthwise, a plain or a grouped convolution is not.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.ir.conv import is_depthwise, is_depthwise_conv


@pytest.mark.parametrize("seed", range(5))
def test_folded_bias_gives_the_zero_point_corrected_sum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cout, kh, kw, cin = rng.integers(1, 6, size=4)
    w = rng.integers(-127, 128, size=(cout, kh, kw, cin)).astype(np.int8)
    x = rng.integers(-128, 128, size=(kh, kw, cin)).astype(np.int8)
    zp = int(rng.integers(-128, 128))
    bias = rng.integers(-2**20, 2**20, size=cout)
    folded = fold_input_zero_point(bias, w, zp)
    assert folded.dtype == np.int64
    for c in range(cout):
        xs, ws = [int(v) for v in x.ravel()], [int(v) for v in w[c].ravel()]
        direct = sum((a - zp) * b for a, b in zip(xs, ws, strict=True)) + int(bias[c])
        raw = sum(a * b for a, b in zip(xs, ws, strict=True))
        assert raw + int(folded[c]) == direct


def test_folded_bias_without_bias_and_of_two_dimensional_weights() -> None:
    w = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    assert fold_input_zero_point(0, w, 10).tolist() == [-20, -30]
    assert fold_input_zero_point(np.array([7, 8]), w, -1).tolist() == [9, 11]


def _conv(cin: int, weight: tuple[int, int, int, int], groups: int) -> tuple[Node, Graph]:
    x = Tensor("x", (1, 8, 8, cin), DType.FLOAT32)
    w = Tensor.const("w", np.zeros(weight, np.float32))
    y = Tensor("y", (1, 8, 8, weight[0]), DType.FLOAT32)
    node = Node("c", "Conv2D", ("x", "w"), ("y",),
                {"groups": groups, "pads": (1, 1, 1, 1)})
    return node, Graph("g", {t.name: t for t in (x, w, y)}, (node,), ("x",), ("y",))


@pytest.mark.parametrize(("cin", "weight", "groups", "expected"), [
    (8, (8, 3, 3, 1), 8, True),    # DEPTHWISE_CONV_2D, multiplier 1
    (4, (12, 3, 3, 1), 4, True),   # depth multiplier 3
    (8, (16, 3, 3, 8), 1, False),  # plain convolution
    (1, (16, 3, 3, 1), 1, False),  # one input channel, one group: plain
    (8, (8, 3, 3, 4), 2, False),   # grouped, 4 channels a group
])
def test_depthwise_is_one_input_channel_per_group_of_several(
        cin: int, weight: tuple[int, int, int, int], groups: int, expected: bool) -> None:
    assert is_depthwise_conv(groups, cin, weight) is expected
    node, graph = _conv(cin, weight, groups)
    assert is_depthwise(node, graph) is expected


def test_only_conv2d_is_depthwise() -> None:
    node, graph = _conv(8, (8, 3, 3, 1), 8)
    other = Node("r", "Relu", ("x",), ("y",), {})
    assert is_depthwise(node, graph) and not is_depthwise(other, graph)
