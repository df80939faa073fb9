"""Weight packing, done once when a layer is prepared (numpy).

B panels: the GEMM's ``B[K][N]`` (weights, one column per output channel) is cut into
``nr``-column panels stored ``[N/nr][K][nr]`` so a micro-kernel streams one panel linearly;
the last panel is zero-padded to ``nr`` columns. Buffers are 64-byte aligned.
"""

from __future__ import annotations

import numpy as np


def aligned_zeros(n: int, align: int = 64) -> np.ndarray:
    """A zeroed float32 vector of ``n`` elements whose data starts on an ``align`` boundary."""
    raw = np.zeros(n + align // 4, np.float32)
    offset = (-raw.ctypes.data % align) // 4
    return raw[offset:offset + n]


def padded(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def pack_b(bmat: np.ndarray, nr: int) -> np.ndarray:
    """``[K][N]`` -> flat ``[ceil(N/nr)][K][nr]`` panels (zero columns past N)."""
    k, n = bmat.shape
    npad = padded(n, nr)
    full = np.zeros((k, npad), np.float32)
    full[:, :n] = bmat
    out = aligned_zeros(npad * k)
    out[:] = full.reshape(k, npad // nr, nr).transpose(1, 0, 2).reshape(-1)
    return out


def conv_b(weights: np.ndarray) -> np.ndarray:
    """Conv weights ``[Cout, KH, KW, Cin]`` -> ``B[K][Cout]`` with k = (ky*KW + kx)*Cin + ci,
    the order im2col, indirect and direct convolutions walk the window in."""
    return np.ascontiguousarray(weights.reshape(weights.shape[0], -1).T)


def padded_bias(bias: np.ndarray | None, n: int, multiple: int) -> np.ndarray:
    """The bias (zeros when absent) padded so that whole-vector loads stay inside it."""
    out = aligned_zeros(padded(n, multiple) + multiple)
    if bias is not None:
        out[:n] = bias
    return out


def concat_aligned(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenate float32 vectors into one 64-byte aligned buffer."""
    out = aligned_zeros(sum(p.size for p in parts))
    out[:] = np.concatenate(parts)
    return out
