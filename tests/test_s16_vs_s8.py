"""benchmarks/s16_vs_s8.py's core on a few small shapes: the int8 and 16x8 twins share their
weights and shape, run the kernels of their dtype, and are bit-exact against the reference
runtime on the emulated Cortex-M4 (the timing is the benchmark's to report, not asserted)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from edgenn.ir import DType

ROOT = Path(__file__).resolve().parent.parent


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("s16_vs_s8", ROOT / "benchmarks" / "s16_vs_s8.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["s16_vs_s8"] = mod  # why: dataclasses resolve their module by name
    spec.loader.exec_module(mod)
    return mod


def _small(b):  # type: ignore[no-untyped-def]
    return [b.conv(6, 6, 3, 8, s=2), b.conv(5, 7, 8, 8, kind="dw"), b.pw(4, 4, 16, 8),
            b.tconv(3, 4, 8, 4, 3, 3, (2, 2))]


def test_twins_share_shape_weights_and_bias_values() -> None:
    b = _bench()
    shapes = _small(b)
    (g8, x8), (g16, x16) = b.build(shapes, DType.INT8), b.build(shapes, DType.INT16)
    for n8, n16 in zip(g8.nodes, g16.nodes, strict=True):
        assert n8.op == n16.op and n8.attrs == n16.attrs
        x, w, bias = (g8.tensors[t] for t in n8.inputs)
        x2, w2, bias2 = (g16.tensors[t] for t in n16.inputs)
        assert (x.dtype, x2.dtype, bias.dtype, bias2.dtype) == (
            DType.INT8, DType.INT16, DType.INT32, DType.INT64)
        assert x.shape == x2.shape and g8.tensors[n8.outputs[0]].shape == \
            g16.tensors[n16.outputs[0]].shape
        assert np.array_equal(w.data, w2.data) and np.array_equal(bias.data, bias2.data)
    assert [a.dtype for a in x8] == [np.int8] * 4 and [a.dtype for a in x16] == [np.int16] * 4


def test_mismatches_counts_changed_elements() -> None:
    b = _bench()
    want = np.arange(12, dtype=np.int16).reshape(3, 4)
    got = want.copy()
    assert b.mismatches(got, want) == 0
    got[1, 2] += 1
    got[2, 0] -= 1
    assert b.mismatches(got, want) == 2
    assert b.mismatches(want.astype(np.int8), want) == 12
    assert b.mismatches(want[:2], want) == 12


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_small_twins_are_bit_exact_on_cortex_m4() -> None:
    b = _bench()
    rows = b.measure(_small(b))
    assert len(rows) == 4
    for r in rows:
        a, c = r["int8"], r["int16"]
        assert "_s8_" in a["kernel"] and "_s16_" in c["kernel"], r  # each twin's own kernel
        assert a["macs"] == c["macs"] > 0 and a["cycles"] > 0 and c["cycles"] > 0
        assert a["values"] == c["values"] > 0
        assert a["mismatches"] == 0 and c["mismatches"] == 0, r
