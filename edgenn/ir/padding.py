"""SAME / VALID padding: the explicit pads that a padding mode gives one window axis.

One piece of arithmetic serves every place a mode meets the IR's explicit pads: the TFLite
importer turns TFLite's ``Padding`` into pads, the exporter recognises a node's pads as SAME
or VALID (and TRANSPOSE_CONV's leading crop), and the ONNX importer resolves ``auto_pad``
SAME_UPPER / SAME_LOWER (SAME_LOWER swaps the two sides). It follows TFLite's
``ComputeOutSize`` and ``ComputePaddingWithOffset`` (``tensorflow/lite/kernels/padding.h``):
SAME keeps ``ceil(size / stride)`` outputs, VALID only whole windows; the total padding is
split ``total // 2`` before and the odd pixel after (bottom / right).
"""

from __future__ import annotations

# The ``same`` argument by name: ``pad_1d(SAME, ...)`` reads as TFLite's enum does.
SAME, VALID = True, False


def _c_div(a: int, b: int) -> int:
    """C++'s integer division, which truncates toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def out_size(same: bool, size: int, k: int, stride: int, dilation: int = 1) -> int:
    """Output length along one axis, as TFLite's ``ComputeOutSize``.

    why C division: for a window wider than the input TFLite (and TFLite Micro's
    TRANSPOSE_CONV, which pads its *output* this way) gets 0 where ``//`` would give -1.
    """
    eff = (k - 1) * dilation + 1
    return _c_div(size + stride - 1 if same else size + stride - eff, stride)


def pad_1d(same: bool, size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """(before, after) padding of one axis of length ``size``, as TFLite's
    ``ComputePaddingWithOffset``: ``total // 2`` before, the odd pixel after."""
    eff = (k - 1) * dilation + 1
    total = max((out_size(same, size, k, stride, dilation) - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def explicit_pads(
    same: bool,
    hw: tuple[int, int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int] = (1, 1),
) -> tuple[int, int, int, int]:
    """(top, left, bottom, right), the IR's order, for an NHWC input of spatial size ``hw``."""
    top, bottom = pad_1d(same, hw[0], kernel[0], strides[0], dilations[0])
    left, right = pad_1d(same, hw[1], kernel[1], strides[1], dilations[1])
    return top, left, bottom, right


def reachable_taps(size: int, out: int, k: int, stride: int, dilation: int,
                   before: int) -> tuple[int, int] | None:
    """The first and last window taps that read the input for some output along one axis
    (output ``o``, tap ``t`` reads ``o * stride - before + t * dilation``), None when no tap
    ever does.

    why: a SAME window may be wider than its input (TFLite Micro then skips the taps that
    fall outside it); the taps that never reach the input are padding for every output, and
    a window cut to the others computes the same values without that padding.
    """
    # tap t is reached iff t * dilation - before lies in [-(out - 1) * stride, size - 1]:
    # the outputs' positions step by ``stride`` <= the span they cover, so none is skipped
    lo = max(0, -((before - (out - 1) * stride) // -dilation))  # ceil, floored at 0
    hi = min(k - 1, (size - 1 + before) // dilation)
    return (lo, hi) if lo <= hi else None


def trimmed_window(size: int, out: int, k: int, stride: int, dilation: int,
                   pads: tuple[int, int]) -> tuple[int, int, tuple[int, int]] | None:
    """(first tap, tap count, (before, after)) of the window cut to the taps that read the
    input, with the same ``out`` outputs and the same reads; None when nothing is cut. A
    count of 0: no tap ever reads the input (only SAME padding allows it).

    The cut keeps a tap that reads only padding where dropping it would need a negative pad
    (a crop), so the pads stay non-negative.
    """
    taps = reachable_taps(size, out, k, stride, dilation, pads[0])
    if taps is None:
        return 0, 0, (0, 0)
    lo = min(taps[0], pads[0] // dilation)
    hi = max(taps[1], k - 1 - pads[1] // dilation)
    if (lo, hi) == (0, k - 1):
        return None
    return lo, hi - lo + 1, (pads[0] - lo * dilation, pads[1] - (k - 1 - hi) * dilation)
