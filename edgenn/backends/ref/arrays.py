"""Array helpers of the reference runtime's layers (and the layers other backends plug into
it, VTA's offload): strided windows over a padded NHWC array, constant padding, batch chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

# Largest number of elements a kernel materialises at once (im2col patches, accumulators).
CHUNK_ELEMENTS = 1 << 23


def windows(
    xp: np.ndarray,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    out_hw: tuple[int, int],
) -> np.ndarray:
    """A read-only strided view ``[N, OH, OW, KH, KW, C]`` of a padded NHWC array."""
    n, _, _, c = xp.shape
    sn, sh_, sw_, sc = xp.strides
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    return np.lib.stride_tricks.as_strided(
        xp,
        shape=(n, oh, ow, kh, kw, c),
        strides=(sn, sh_ * sh, sw_ * sw, sh_ * dh, sw_ * dw, sc),
        writeable=False,
    )


def pad_hw(x: np.ndarray, pads: Sequence[int], value: Any) -> np.ndarray:
    """Pad an NHWC array by (top, left, bottom, right) with a constant."""
    t, left, b, r = (int(p) for p in pads)
    if t == left == b == r == 0:
        return x
    return np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=value)


def batch_chunks(n: int, per_item: int) -> Iterator[slice]:
    """Slices of the batch so that each chunk materialises about ``CHUNK_ELEMENTS`` values."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))
