"""The records of QUANTIZE and DEQUANTIZE, as TFLite Micro's prepare checks and computes them.

float32 -> int8 / int16 divides by the output scale and rounds; between two integer tensors
QUANTIZE is ``Requantize`` (``edgenn.prepared.requant``, None when nothing changes).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import per_tensor
from edgenn.prepared.requant import QUANTIZED, Requant

# why these pairs: QUANTIZE's prepare in TFLite Micro (quantize_common.cc) refuses the others
_REQUANTIZED = {(DType.INT8, DType.INT8), (DType.INT8, DType.INT16), (DType.INT8, DType.INT32),
                (DType.INT16, DType.INT8), (DType.INT16, DType.INT16),
                (DType.INT16, DType.INT32), (DType.INT32, DType.INT8),
                (DType.INT32, DType.INT16), (DType.INT8, DType.UINT8)}


@dataclass(frozen=True)
class QuantizeParams:
    """QUANTIZE from ``in_dtype`` to ``out_dtype``: ``out_scale`` / ``out_zp`` for float32
    input, else ``requant`` (None: the values are copied)."""

    in_dtype: DType
    out_dtype: DType
    out_scale: float
    out_zp: int
    requant: Requant | None

    @property
    def from_float(self) -> bool:
        return self.in_dtype is DType.FLOAT32


def prepare_quantize(node: Node, graph: Graph) -> QuantizeParams:
    """The record of a Quantize node (one error for the type pairs TFLM has no kernel for)."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    pair = (x.dtype, y.dtype)
    if (x.dtype is DType.FLOAT32 and y.dtype not in QUANTIZED) or (
            x.dtype is not DType.FLOAT32 and pair not in _REQUANTIZED):
        raise UnsupportedOperatorError(f"{node}: QUANTIZE from {x.dtype.value} to "
                                       f"{y.dtype.value} is not supported (TFLite Micro "
                                       "has no kernel for it)")
    qo = per_tensor(node, y, "output")
    requant = None
    if x.dtype is not DType.FLOAT32:
        requant = Requant.between(per_tensor(node, x, "input"), qo, x.dtype, y.dtype)
    return QuantizeParams(x.dtype, y.dtype, qo.s, qo.zp, requant)


@dataclass(frozen=True)
class DequantizeParams:
    """DEQUANTIZE: ``real = in_scale * (q - in_zp)``."""

    in_scale: float
    in_zp: int


def prepare_dequantize(node: Node, graph: Graph) -> DequantizeParams:
    """The record of a Dequantize node."""
    q = per_tensor(node, graph.tensor(node.inputs[0]), "input")
    return DequantizeParams(float(q.s), q.zp)
