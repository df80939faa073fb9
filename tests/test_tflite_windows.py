"""The cut windows of ``frontends/tflite/converters/window.py`` read exactly what TFLite
Micro's kernels read: for every output, the same input rows with the same (non-zero) taps,
with non-negative padding that gives the same output count, over an exhaustive grid of sizes,
windows, strides and dilations (SAME and VALID, convolution and pooling)."""

from __future__ import annotations

import itertools

from edgenn.frontends.tflite.converters.window import ZERO, tflm_out_fails, window_axis
from edgenn.ir.padding import out_size, pad_1d

DILATIONS = (1, 2, 3, 5, 9, 1000, 2**30)


def _tflm_reads(size: int, out: int, k: int, stride: int, dilation: int,
                before: int) -> list[list[tuple[int, int]]]:
    """Per output, the (tap, input row) pairs TFLite Micro's loops read (in bounds only)."""
    return [[(t, o * stride - before + t * dilation) for t in range(k)
             if 0 <= o * stride - before + t * dilation < size] for o in range(out)]


def test_cut_windows_read_what_tflm_reads() -> None:
    cut = 0
    for size, k, stride, dilation, same, weighted in itertools.product(
            range(1, 8), range(1, 10), range(1, 5), DILATIONS, (True, False), (True, False)):
        if not weighted and dilation != 1:
            continue  # pooling windows have no dilation
        count = out_size(same, size, k, stride, dilation)
        failed = tflm_out_fails(same, size, k, stride, dilation)
        if count >= 1:
            before = pad_1d(same, size, k, stride, dilation)[0]
        else:  # TFLite Micro runs the declared output (1 here) with the padding it leaves
            eff = (k - 1) * dilation + 1
            before = 0 if failed else max(0, ((count - 1) * stride + eff - size) // 2)
            count = 1
        axis = window_axis(same, size, k, stride, dilation, weighted, count, failed)
        b, a = axis.pads
        assert b >= 0 and a >= 0
        eff = (len(axis.taps) - 1) * axis.dilation + 1
        assert (size + b + a - eff) // stride + 1 == count
        got = [[(t, o * stride - b + j * axis.dilation) for j, t in enumerate(axis.taps)
                if t != ZERO and 0 <= o * stride - b + j * axis.dilation < size]
               for o in range(count)]
        assert got == _tflm_reads(size, count, k, stride, dilation, before), (
            size, k, stride, dilation, same, weighted, axis)
        if not weighted:
            assert ZERO not in axis.taps
        if axis.cut:
            cut += 1
            # the point of the cut: padding bounded by the input, whatever the dilation
            assert b + a + len(axis.taps) <= 3 * (size + stride)
    assert cut > 1000
