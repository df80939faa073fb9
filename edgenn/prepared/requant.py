"""TFLite Micro's ``Requantize``: one integer tensor's values in another's quantization.

The QUANTIZE operator between two integer tensors, and the epilogue the exporter writes
after an op that moves or compares values in its input's quantization (pooling, reshape,
pad, transpose, resize) when the output is declared with other parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier_inplace,
    quantize_multiplier,
    type_range,
    wrap_int32,
)
from edgenn.ir import DType, Graph, Node, QuantParams
from edgenn.prepared.quant import per_tensor

QUANTIZED = (DType.INT8, DType.INT16)


@dataclass(frozen=True)
class Requant:
    """``MultiplyByQuantizedMultiplier(x - in_zp)`` with the multiplier of ``in_scale /
    out_scale`` (in double), ``+ out_zp``, clamped to the output type. With an int32 side
    (QUANTIZE int32 -> int8 / int16, int8 / int16 -> int32) the two additions are int32
    additions that wrap as they do in TFLite Micro's C++ (``wide``).
    """

    in_zp: int
    out_zp: int
    mult: int
    shift: int
    out_dtype: DType
    wide: bool = False

    @classmethod
    def between(cls, q_in: QuantParams, q_out: QuantParams, in_dtype: DType,
                out_dtype: DType) -> Requant | None:
        """The rescale from ``q_in`` to ``q_out``; None when nothing changes (a copy)."""
        if q_in == q_out and in_dtype is out_dtype:
            return None
        mult, shift = quantize_multiplier(q_in.s / q_out.s)
        wide = DType.INT32 in (in_dtype, out_dtype)
        return cls(q_in.zp, q_out.zp, mult, shift, out_dtype, wide)

    @property
    def act_min(self) -> int:
        return type_range(self.out_dtype)[0]

    @property
    def act_max(self) -> int:
        return type_range(self.out_dtype)[1]

    def __call__(self, x: np.ndarray) -> npt.NDArray[np.signedinteger]:
        v = x.astype(np.int64)
        v -= self.in_zp
        if self.wide:  # why only then: int8 / int16 differences cannot leave int32
            v = wrap_int32(v)
        v = multiply_by_quantized_multiplier_inplace(v, self.mult, self.shift)
        v += self.out_zp
        if self.wide:
            v = wrap_int32(v)
        np.clip(v, self.act_min, self.act_max, out=v)
        return v.astype(self.out_dtype.numpy)


def output_requant(node: Node, graph: Graph,
                   types: Sequence[DType] = QUANTIZED) -> Requant | None:
    """For an op that moves or compares values in its input's quantization, the rescale to
    a differently quantized output of the same integer type (one of ``types``), else None.

    As the exporter writes such a node for TFLM: the op with the input's parameters, then a
    QUANTIZE to the declared output parameters.
    """
    x = graph.tensor(node.inputs[0]) if node.inputs and node.inputs[0] else None
    y = graph.tensor(node.outputs[0])
    if x is None or x.dtype not in types or y.dtype is not x.dtype:
        return None
    if x.quant is None or y.quant is None:  # nothing declared: the values pass unchanged
        return None
    q_in, q_out = per_tensor(node, x, "input"), per_tensor(node, y, "output")
    return Requant.between(q_in, q_out, x.dtype, y.dtype)
