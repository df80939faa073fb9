"""BorderPad (ONNX Pad ``reflect`` / ``edge``): numpy's ``reflect`` and ``edge`` padding are
ONNX's definitions exactly; values are copied, so any element type pads the same way."""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType


@register("BorderPad", DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32)
class BorderPad(Layer):
    def build(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        assert x is not None
        self.pads = tuple((int(b), int(a)) for b, a in self.node.attr("pads"))
        self.mode = str(self.node.attr("mode"))
        if self.pads and self.pads[0] != (0, 0):
            raise UnsupportedOperatorError(f"{self.node}: padding the batch axis")
        if x.quant != y.quant:
            # why: a copied value keeps its integer; other output parameters would need a
            # requantization no importer writes for this operator
            raise UnsupportedOperatorError(f"{self.node}: {self.mode} padding with another "
                                           "output quantization")

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        return [np.pad(xs[0], self.pads, mode=self.mode)]  # type: ignore[call-overload]
