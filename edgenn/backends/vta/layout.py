"""Host-side packing between numpy matrices and the accelerator's tiled DRAM layouts.

B as TVM lays it out: (N/16, K/16, 16, 16) int8 weight tiles stored transposed
(``tile[j][k] = B[k, j]``); C as TVM: (M, N/16, 16) int8 output vectors; bias (N/16, 16) int32
accumulator vectors. A in 16-row tiles, (M/16, K/16, 16, 16) with ``tile[mt, kb][r] =
A[16 mt + r, 16 kb : 16 kb + 16]``: TVM's (M, K/16, 16) row layout cut into 16-row groups, so a
16 x 16 sub-tile of A, or a 16 x kblock panel, is one contiguous DMA row (TVM's layout would need
one DMA row, and one latency, per row of A). M, K and N are zero-padded to multiples of 16 here,
on the host: those zeros are real DRAM bytes and count as traffic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BLOCK = 16


def blocks(x: int) -> int:
    """Number of 16-wide blocks covering ``x``."""
    return -(-x // BLOCK)


def pack_a(a: npt.NDArray[np.int8]) -> npt.NDArray[np.int8]:
    """(M, K) -> (MT, KB, 16, 16) row tiles, M and K zero-padded."""
    m, k = a.shape
    mt, kb = blocks(m), blocks(k)
    out = np.zeros((mt * BLOCK, kb * BLOCK), np.int8)
    out[:m, :k] = a
    return np.ascontiguousarray(out.reshape(mt, BLOCK, kb, BLOCK).transpose(0, 2, 1, 3))


def pack_b(b: npt.NDArray[np.int8]) -> npt.NDArray[np.int8]:
    """(K, N) -> (NB, KB, 16, 16) tiles with ``tile[nb, kb][j, k] = B[16 kb + k, 16 nb + j]``:
    the row tiles of B transposed (``pack_a(B.T)``), as TVM stores weight tiles."""
    return pack_a(b.T)


def pack_bias(bias: npt.NDArray[np.int32], n: int) -> npt.NDArray[np.int32]:
    """(N,) -> (NB, 16), zero-padded."""
    out = np.zeros(blocks(n) * BLOCK, np.int32)
    out[:n] = bias
    return out.reshape(blocks(n), BLOCK)


def unpack_c(c: npt.NDArray[np.int8], m: int, n: int) -> npt.NDArray[np.int8]:
    """(M, NB, 16) -> (M, N)."""
    return c.reshape(m, -1)[:, :n]


def join_planes(planes: list[npt.NDArray[np.int8]]) -> npt.NDArray[np.int32]:
    """Four int8 byte planes (low byte first) -> the int32 values they slice."""
    low = [p.view(np.uint8).astype(np.uint32) for p in planes[:3]]
    high = planes[3].astype(np.int32).view(np.uint32)  # sign-carrying top byte
    total = low[0] | (low[1] << 8) | (low[2] << 16) | (high << 24)
    return total.view(np.int32)
