"""Cortex-M BorderPad (ONNX Pad reflect / edge as strided copies): the copy boxes against
numpy's pad for every small case (no emulator), and one float32 model on cortex-m4 against
onnxruntime, bit-exact (padding only moves values)."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgenn.backends.cortexm.kernels.border_pad import axis_runs
from tests.onnx_graphs import make_model, ort_run

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def _apply_runs(x: np.ndarray, pads: list[tuple[int, int]], mode: str) -> np.ndarray:
    """What the kernel's copies write, computed with the same runs in numpy."""
    out = np.full([n + b + a for n, (b, a) in zip(x.shape, pads, strict=True)], np.nan)
    per_axis = [axis_runs(n, b, a, mode) for n, (b, a) in zip(x.shape, pads, strict=True)]
    for box in itertools.product(*per_axis):
        dst = tuple(slice(o, o + length) for o, length, _, _ in box)
        src = tuple(np.arange(length) * step + start for _, length, start, step in box)
        out[dst] = x[np.ix_(*src)]
    return out


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_runs_equal_numpy_pad(mode: str) -> None:
    x = np.arange(4 * 5, dtype=np.float64).reshape(4, 5)
    for b0, a0, b1, a1 in itertools.product(range(4), range(4), range(5), range(5)):
        pads = [(b0, a0), (b1, a1)]
        got = _apply_runs(x, pads, mode)
        np.testing.assert_array_equal(got, np.pad(x, pads, mode=mode))  # type: ignore[call-overload]


@needs_arm
def test_border_pad_on_cortex_m4_matches_onnxruntime() -> None:
    pytest.importorskip("onnxruntime")
    from edgenn.api import compile_model
    from edgenn.frontends.onnx import load_onnx

    F = TensorProto.FLOAT
    nodes = [helper.make_node("Pad", ["a", "pa"], ["ya"], mode="reflect"),  # audio frames
             helper.make_node("Pad", ["b", "pb"], ["yb"], mode="edge"),
             helper.make_node("Pad", ["c", "pc"], ["yc"], mode="reflect")]  # NCHW H and W
    data = make_model(nodes, [("a", F, [1, 1, 40]), ("b", F, [3, 7]), ("c", F, [1, 2, 5, 6])],
                      ["ya", "yb", "yc"],
                      {"pa": np.asarray([0, 0, 0, 0, 0, 16], np.int64),
                       "pb": np.asarray([1, 2, 2, 3], np.int64),
                       "pc": np.asarray([0, 0, 2, 1, 0, 0, 3, 4], np.int64)})
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 1, 40), (3, 7), (1, 2, 5, 6))]
    want = ort_run(data, dict(zip("abc", xs, strict=True)))
    got = compile_model(load_onnx(data, "pads.onnx"), "cortex-m4").run(*xs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g).reshape(w.shape), w)
