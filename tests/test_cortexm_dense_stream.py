"""The one-pass DSP FullyConnected widened chunk by chunk (kernels/dense.py, ``streamed``).

A layer of at most ROWS output rows reads each widened input word once, so its input is
widened STREAM_WORDS words at a time into a scratch of fixed size instead of all at once
(2 bytes per input byte): the arena of a deep classifier no longer holds a widened copy of
its input. Bit for bit against the reference on the host twin (depths with every tail length,
batches, per-tensor and per-channel, fast and exact requantization, chunked hi rows) and in
the emulated Cortex-M4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.kernels.dense import (
    ROWS,
    STREAM_WORDS,
    DenseFullyConnected,
    dense_chunk,
    dense_pairs,
    streamed,
)
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation
from tests.test_cortexm_dense import M4, _emulated, _host_run, fc_graph, needs_arm

KERNEL = DenseFullyConnected()
DEEP = 2 * STREAM_WORDS + 1  # the shallowest depth that is widened chunk by chunk


def test_scratch_is_bounded_for_one_pass_layers_only() -> None:
    rng = np.random.default_rng(1)
    for depth, cout in ((DEEP, 1), (4000, 4), (4001, ROWS)):
        g = fc_graph(rng, depth, cout)
        call = KERNEL.prepare(g.nodes[0], g, M4)
        assert streamed(cout, dense_pairs(depth))
        assert call.scratch_bytes == 4 * STREAM_WORDS < 2 * depth
        assert "widened one by one" in call.code
    # two passes read every widened word twice: the whole input is widened once, as before
    for depth, cout in ((4000, ROWS + 1), (DEEP - 1, 2)):
        g = fc_graph(rng, depth, cout)
        call = KERNEL.prepare(g.nodes[0], g, M4)
        assert call.scratch_bytes == 4 * dense_pairs(depth)
        assert "widened one by one" not in call.code


STREAM_CASES = [
    # depth (tails of 1..4 bytes past the full chunks), cout, batch, act, per_channel, gain
    (DEEP, 2, 1, Activation.NONE, True, 4.0),
    (1017, 3, 2, Activation.RELU, False, 4.0),
    (1018, 1, 1, Activation.NONE, True, 4.0),
    (4000, 4, 1, Activation.NONE, True, 4.0),
    (1526, 6, 1, Activation.RELU6, True, 100.0),  # act_max < 127: exact requantization
    (1100, 5, 1, Activation.NONE, True, 1e-4),  # multiplier > 1: exact requantization
]


@pytest.mark.parametrize("case", range(len(STREAM_CASES)))
def test_host_matches_reference(case: int, tmp_path: Path) -> None:
    depth, cout, batch, act, per_channel, gain = STREAM_CASES[case]
    rng = np.random.default_rng(300 + case)
    g = fc_graph(rng, depth, cout, batch=batch, act=act, per_channel=per_channel,
                 out_gain=gain)
    assert streamed(cout, dense_pairs(depth))
    x = rng.integers(-128, 128, size=(batch, depth)).astype(np.int8)
    x[0, :3] = -128
    x[-1, -3:] = 127  # the extremes in the first chunk and in the tail
    np.testing.assert_array_equal(_host_run(g, x, tmp_path), compile_ref(g).run(x)[0])


def test_host_extreme_weights_cut_in_safe_chunks(tmp_path: Path) -> None:
    """|w| = 127 over 3,000 inputs: the hi-row dot needs chunks of SAFE_CHUNK words."""
    rng = np.random.default_rng(7)
    depth = 3000
    w = rng.choice(np.array([-127, 127], np.int8), size=(5, depth))
    g = fc_graph(rng, depth, 5, w=w, act=Activation.NONE, out_gain=40.0)
    assert dense_chunk(w) < dense_pairs(depth)
    for val in (-128, 127):
        x = np.full((1, depth), val, np.int8)
        np.testing.assert_array_equal(_host_run(g, x, tmp_path), compile_ref(g).run(x)[0])


@needs_arm
def test_emulator_matches_reference() -> None:
    rng = np.random.default_rng(400)
    g = fc_graph(rng, 4000, 4, act=Activation.NONE)
    x = rng.integers(-128, 128, size=(2, 4000)).astype(np.int8)
    np.testing.assert_array_equal(_emulated(g, x), compile_ref(g).run(x)[0])
