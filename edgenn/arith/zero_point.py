"""The input zero point folded into the bias: ``sum((x - zp) * w) + b == sum(x * w) + (b - zp *
sum(w))``, exact in integers, so a kernel multiplies the stored int8 values as they are and
adds one per-channel constant. Every integer backend (the reference LSTM, the Cortex-M
kernels, the VTA offload) computes that constant here."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def fold_input_zero_point(bias: Any, weights: Any, in_zp: int) -> npt.NDArray[np.int64]:
    """``bias - in_zp * sum(weights[c])`` for each output channel ``c`` (int64, exact).

    ``weights`` has the output channel first (``[Cout, ...]``, as IR Conv2D, FullyConnected
    and LSTM weights); ``bias`` is a per-channel array or a scalar (``0`` for no bias). The
    caller decides how an int32 kernel stores it (C's wrap-around or a range check).
    """
    w = np.asarray(weights)
    sums = w.reshape(w.shape[0], -1).astype(np.int64).sum(axis=1)
    return np.asarray(bias, np.int64) - np.int64(in_zp) * sums
