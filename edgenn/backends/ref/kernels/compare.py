"""Comparisons, logical operators and Where (``edgenn/ir/opdefs/compare.py``) with numpy's
broadcasting, ONNX's definitions: the operands' stored values are compared (float32 as IEEE
floats, so NaN is unequal to everything), and Where picks per element.

Quantized int8 operands (TFLite) compare as TFLite Micro's ``ComparisonWithScaling``: each
``(q - zp) * 2**8`` through ``MultiplyByQuantizedMultiplierSmallerThanOneExp`` with the
multiplier of its own scale, then the two int32 results compared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier
from edgenn.backends.ref.kernels.binary import to_output_rank
from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.compare import prepare_compare

F32, I8, I16, I32, I64, BOOL = (DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32,
                                DType.INT64, DType.BOOL)
_FUNCS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "Greater": np.greater,
    "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}


class _Elementwise(Layer):
    """Every operand, constants included, broadcast against the others."""

    def build(self) -> None:
        self.operands = Operands(self.inputs)
        self.rank = len(self.outputs[0].shape)
        self.shapes = [t.shape if t is not None and not t.is_const else None
                       for t in self.inputs if t is not None]

    def gather(self, xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The operands, a computed lower-rank one with its broadcast axes after the batch."""
        return [x if s is None else to_output_rank(x, s, self.rank)
                for x, s in zip(self.operands.gather(xs), self.shapes, strict=True)]


@register("Equal", F32, I8, I32, I64, BOOL)
@register("NotEqual", F32, I8, I32, I64, BOOL)
@register("Less", F32, I8, I32, I64)
@register("Greater", F32, I8, I32, I64)
@register("LessOrEqual", F32, I8, I32, I64)
@register("GreaterOrEqual", F32, I8, I32, I64)
@register("And", BOOL)
@register("Or", BOOL)
@register("Xor", BOOL)
class Compare(_Elementwise):
    def build(self) -> None:
        super().build()
        self.fn = _FUNCS[self.node.op]
        self.scaled = prepare_compare(self.node, self.graph).scaled

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        a, b = self.gather(xs)
        if self.scaled:
            a, b = (multiply_by_quantized_multiplier((x.astype(np.int64) - r.zp) * 256, r.mult,
                                                     r.shift)
                    for x, r in zip((a, b), self.scaled, strict=True))
        return [np.asarray(self.fn(a, b), dtype=np.bool_)]


@register("Not", BOOL)
class Not(Layer):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        return [np.logical_not(xs[0])]


@register("Where", BOOL)
class Where(_Elementwise):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        cond, x, y = self.gather(xs)
        return [np.where(cond, x, y)]
