"""What an ONNX tensor name stands for while a model is being imported."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgenn.ir import QuantParams

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)
# where ONNX axis (N, C, L) of a rank-3 tensor lives in its [N, 1, L, C] channels-last copy
NCL_AXIS_TO_IR = (0, 3, 2)
# the boundary permutation of a 1-D graph input / output: IR [N, L, C] -> ONNX [N, C, L]
NLC_TO_NCL = (0, 2, 1)


def nchw_axis_to_nhwc(axis: int) -> int:
    """Where ONNX axis ``axis`` of a rank-4 NCHW tensor lives in its NHWC copy."""
    return NCHW_TO_NHWC.index(axis % 4)


@dataclass(frozen=True)
class Value:
    """A computed tensor: its IR name and the layout the IR array has.

    ``nhwc``: a rank-4 NCHW tensor stored NHWC. ``ncl``: a rank-3 NCL tensor (1-D signal)
    stored [N, 1, L, C], which is also the NHWC array of the NCHW view [N, C, 1, L], so
    2-D operators run on it with H = 1 and no data movement. Neither: ONNX axis order.
    """

    ir: str
    nhwc: bool = False
    ncl: bool = False

    @property
    def channels_last(self) -> bool:
        return self.nhwc or self.ncl


@dataclass(frozen=True)
class ConstVal:
    """A constant in ONNX axis order; quantized (int8 / int32 with ``quant``) or plain."""

    data: np.ndarray
    quant: QuantParams | None = None

    def transpose(self, perm: Sequence[int]) -> ConstVal:
        q = self.quant
        if q is not None and q.axis is not None:
            q = QuantParams(q.scale, q.zero_point, list(perm).index(q.axis))
        return ConstVal(np.ascontiguousarray(self.data.transpose(perm)), q)

    def dequantized(self) -> np.ndarray:
        """The real values (float32) this constant stands for."""
        if self.quant is None:
            return self.data
        q = self.quant
        shape = [1] * self.data.ndim
        if q.axis is not None:
            shape[q.axis] = -1
        scale = q.scale.astype(np.float32).reshape(shape)
        zp = q.zero_point.reshape(shape)
        return ((self.data.astype(np.int64) - zp).astype(np.float32) * scale).astype(np.float32)
