"""The epilogue record of TFLite's 16x8 layers (int16 activations, int8 weights).

TFLite Micro's 16x8 kernels (``ConvPerChannel``, ``DepthwiseConvPerChannel``,
``FullyConnected`` and ``TransposeConv`` with int16 data) pick the accumulator from the bias
they are given: an int64 bias, or none, gives the int64 accumulator and the 64-bit
``MultiplyByQuantizedMultiplier`` (``edgenn.arith.fixed_point_s16``); an int32 bias the
wrapping int32 accumulator and the usual 32-bit one. :class:`S16Requant` holds one layer's
choice; the scheme's tensors are symmetric (:func:`symmetric`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    activation_range,
    multiply_by_quantized_multiplier_inplace,
    wrap_int32,
)
from edgenn.arith.fixed_point_s16 import MAX_SHIFT_64, multiply_by_quantized_multiplier_64
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Node, QuantParams, Tensor
from edgenn.prepared.quant import activation_of, quant_of


def symmetric(node: Node, t: Tensor | None, what: str) -> QuantParams:
    """The quantization of an int16 activation or int8 weight of the 16x8 scheme (zero
    points 0, as TFLite requires and its 16x8 kernels assume)."""
    q = quant_of(node, t, what)
    if np.any(q.zero_point != 0):
        raise UnsupportedOperatorError(
            f"{node}: {what} tensor {t.name if t is not None else '?'!r} of a 16x8 "
            f"{node.op} has a non-zero zero point (the scheme is symmetric)")
    return q


def int8_weights_s16(node: Node, w: Tensor) -> np.ndarray:
    """The constant int8 weights of a 16x8 layer (symmetric), as int64."""
    if w.data is None:
        raise UnsupportedOperatorError(
            f"{node}: input {w.name!r} must be a constant for this operator")
    if w.data.dtype != np.int8:
        raise UnsupportedOperatorError(
            f"{node}: a 16x8 {node.op} needs int8 weights, got {w.data.dtype}")
    symmetric(node, w, "weight")
    return w.data.astype(np.int64)


@dataclass(frozen=True)
class S16Requant:
    """One 16x8 layer's epilogue: ``acc + bias``, rescale, clamp to ``[act_min, act_max]``.

    ``wide`` is TFLite Micro's int64 accumulator (int64 bias or none); otherwise the int32
    one. ``bias`` is int64 (zeros when the layer has none); ``mult``/``shift`` per channel.
    """

    wide: bool
    bias: npt.NDArray[np.int64]
    mult: Any
    shift: Any
    act_min: int
    act_max: int

    @classmethod
    def build(cls, node: Node, bias: np.ndarray | None, channels: int, mult: Any,
              shift: Any, out: Tensor, *, allow_narrow: bool = True) -> S16Requant:
        """The epilogue of ``node`` from its bias constant (None when omitted)."""
        wide = bias is None or bias.dtype != np.int32
        if bias is not None and bias.dtype not in (np.int16, np.int32, np.int64):
            raise UnsupportedOperatorError(
                f"{node}: a 16x8 {node.op} needs an int64 or int32 bias, got {bias.dtype}")
        if not wide and not allow_narrow:
            raise UnsupportedOperatorError(
                f"{node}: a 16x8 {node.op} needs an int64 bias, got int32")
        if wide and np.any(np.asarray(shift) > MAX_SHIFT_64):
            raise UnsupportedOperatorError(
                f"{node}: the output rescale of this 16x8 {node.op} is too large "
                "for TFLite's 64-bit MultiplyByQuantizedMultiplier (scale ratio >= 2^14)")
        values = np.zeros(channels, np.int64) if bias is None else bias.astype(np.int64)
        lo, hi = activation_range(activation_of(node), symmetric(node, out, "output"),
                                  DType.INT16)
        return cls(wide, values, mult, shift, lo, hi)

    def __call__(self, acc: npt.NDArray[np.int64]) -> npt.NDArray[np.int16]:
        """Exact sums of ``x * w`` (int64, channels last) -> int16 outputs (overwrites acc)."""
        acc += self.bias
        if self.wide:
            out = multiply_by_quantized_multiplier_64(acc, self.mult, self.shift)
        else:
            # why wrap: TFLite Micro sums in int32, which wraps; the exact sum mod 2^32 is
            # the same whatever the order of the additions
            out = multiply_by_quantized_multiplier_inplace(
                wrap_int32(acc), self.mult, self.shift)
        np.clip(out, self.act_min, self.act_max, out=out)
        return out.astype(np.int16)
