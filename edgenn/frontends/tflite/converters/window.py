"""Windows as TFLite Micro reads them: the taps of a convolution or pooling window that can
ever read the input, and an equivalent window without the rest.

TFLite's SAME padding accepts any window, however much wider than its input (a 9-tap
temporal depthwise over 2 rows, a 512-wide filter over 1 column): TFLite Micro skips the taps
that fall outside the input. The IR pads explicitly, so such a window would be padded to its
full (dilated) width; here it is cut to the taps that read the input, which computes the same
values and keeps the padding within the input's size whatever the file's window or dilation
(a corrupt dilation cannot make a runtime pad to gigabytes). VALID windows are left to shape
inference: one larger than its input gives no output, an error TFLite Micro raises too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgenn.ir.padding import out_size, pad_1d, reachable_taps, trimmed_window

ZERO = -1  # a tap of the cut window with weight zero (reads nothing TFLite Micro reads)


@dataclass(frozen=True)
class Axis:
    """One spatial axis of the window: its taps (the original tap index each new tap takes
    its weights from, or ZERO), its dilation and its (before, after) padding; ``cut`` when
    the taps are not the file's."""

    taps: Sequence[int]  # why a range when possible: a corrupt filter size may be 2**31
    dilation: int
    pads: tuple[int, int]
    cut: bool = True


def window_axis(same: bool, size: int, k: int, stride: int, dilation: int, weighted: bool,
                declared: int, failed: bool = False) -> Axis:
    """The axis as TFLite Micro reads it for ``declared`` outputs. ``weighted`` (a
    convolution): taps may get zero weights and the dilation may change; a pooling window
    keeps its unit spacing. ``failed``: TFLite's output size check failed on some axis of
    the window (``tflm_out_fails``), which leaves every padding 0."""
    pads = pad_1d(same, size, k, stride, dilation)
    out = out_size(same, size, k, stride, dilation)
    if out < 1:
        # why: a VALID window wider than its input has no output by TFLite's arithmetic, but
        # TFLite Micro runs the declared outputs (a dynamic-length input written with length
        # 1 is such a file), padded as TFLite's ComputePaddingHeightWidth leaves it
        eff = (k - 1) * dilation + 1
        before = 0 if failed else max(0, ((out - 1) * stride + eff - size) // 2)
        out, pads = declared, (before, (declared - 1) * stride + eff - size - before)
        if out < 1 or pads[1] < 0:
            return Axis(range(k), dilation, pad_1d(same, size, k, stride, dilation),
                        cut=False)
    whole = Axis(range(k), dilation, pads, cut=False)
    reach = reachable_taps(size, out, k, stride, dilation, pads[0])
    if weighted and (reach is None or reach[0] == reach[1]) and k > 1:
        # why: at most one tap reads the input, so the spacing does not matter; a unit-
        # spaced window with that tap last keeps the padding below the input's size
        one = _one_tap(size, out, stride, dilation, pads[0], reach)
        if len(one.taps) == k and list(one.taps) == list(whole.taps) and one.pads == pads:
            return whole
        return one
    cut = trimmed_window(size, out, k, stride, dilation, pads)
    if cut is None or cut[1] == 0:
        return whole  # nothing to cut, or a pooling window over padding only (an error)
    first, count, new_pads = cut
    return Axis(range(first, first + count), dilation, new_pads)


def tflm_out_fails(same: bool, size: int, k: int, stride: int, dilation: int) -> bool:
    """TFLite's ``ComputeOutSizeChecked`` fails: a VALID window leaves a negative count
    (C division), and ``ComputePaddingHeightWidth`` then sets no padding on either axis."""
    return out_size(same, size, k, stride, dilation) < 0


def _one_tap(size: int, out: int, stride: int, dilation: int, before: int,
             reach: tuple[int, int] | None) -> Axis:
    if reach is None:  # every output is the bias: zero taps over the input
        return _unit(size, out, stride, (ZERO,), 0)
    tap = reach[0]
    offset = tap * dilation - before  # the input row output 0 reads with it
    if offset <= 0:
        return _unit(size, out, stride, (tap,), -offset)
    return _unit(size, out, stride, (ZERO,) * offset + (tap,), 0)


def _unit(size: int, out: int, stride: int, taps: tuple[int, ...], before: int) -> Axis:
    """A unit-spaced window of ``taps`` (zero taps added after them where the input extends
    past the last output's window) with the padding that gives ``out`` outputs."""
    extra = max(0, size + before - (out - 1) * stride - len(taps))
    taps = taps + (ZERO,) * extra
    after = max(0, (out - 1) * stride + len(taps) - size - before)
    assert (size + before + after - len(taps)) // stride + 1 == out
    return Axis(taps, 1, (before, after))
