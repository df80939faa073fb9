"""Comparisons, logical operators and Where (``edgenn/ir/opdefs/compare.py``) with numpy's
broadcasting, ONNX's definitions: the operands' stored values are compared (float32 as IEEE
floats, so NaN is unequal to everything), and Where picks per element."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType

F32, I8, I16, I32, I64, BOOL = (DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32,
                                DType.INT64, DType.BOOL)
_FUNCS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Equal": np.equal, "Less": np.less, "Greater": np.greater,
    "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}


class _Elementwise(Layer):
    """Every operand, constants included, broadcast against the others."""

    def build(self) -> None:
        self.operands = Operands(self.inputs)


@register("Equal", F32, I32, I64, BOOL)
@register("Less", F32, I32, I64)
@register("Greater", F32, I32, I64)
@register("LessOrEqual", F32, I32, I64)
@register("GreaterOrEqual", F32, I32, I64)
@register("And", BOOL)
@register("Or", BOOL)
@register("Xor", BOOL)
class Compare(_Elementwise):
    def build(self) -> None:
        super().build()
        self.fn = _FUNCS[self.node.op]

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        a, b = self.operands.gather(xs)
        return [np.asarray(self.fn(a, b), dtype=np.bool_)]


@register("Not", BOOL)
class Not(Layer):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        return [np.logical_not(xs[0])]


@register("Where", BOOL)
class Where(_Elementwise):
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        cond, x, y = self.operands.gather(xs)
        return [np.where(cond, x, y)]
