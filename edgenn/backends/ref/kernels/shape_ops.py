"""Data movement: Reshape, Transpose, Concat, Pad (any dtype).

Tensor shapes in the IR carry batch 1; these kernels treat axis 0 as the batch, so Reshape
keeps the batch of its input and only the trailing dimensions come from the ``shape``
attribute. int8 and int16 Pad fill with the quantized pad value (the zero point for 0.0).

int8 Reshape, Transpose and Pad move values in the input's quantization; an output declared
with other parameters is then requantized as TFLM's int8 -> int8 QUANTIZE (the exporter
writes such a node as the op followed by that QUANTIZE). Equal parameters cost nothing.
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import ShapeError
from edgenn.ir import DType
from edgenn.prepared.movement import move_requant, prepare_concat, prepare_pad

_ALL = (DType.FLOAT32, DType.INT8, DType.UINT8, DType.INT16, DType.INT32, DType.INT64)
_ANY = (*_ALL, DType.BOOL)  # Reshape and Transpose also move comparison results


@register("Reshape", *_ANY)
class Reshape(Layer):
    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.shape = tuple(int(d) for d in self.node.attr("shape"))
        # why: only when both sides start with the batch can a larger batch pass through.
        self.batched = bool(x.shape) and x.shape[0] == 1 and bool(self.shape) and self.shape[0] == 1
        self.in_shape = tuple(x.shape)
        self.requant = move_requant(self.node, self.graph)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if self.batched:
            y = x.reshape((x.shape[0], *self.shape[1:]))
        elif x.shape != self.in_shape:
            # why: an input whose axis 0 is not 1 in the file (ONNX Gemm's transA on a
            # (6, 1) input) runs at its declared shape only; axis 0 is then no batch.
            raise ShapeError(
                f"{self.node}: reshape to {list(self.shape)} does not keep the batch axis, "
                f"so it runs only on its declared input shape {list(self.in_shape)} "
                f"(got {list(x.shape)})"
            )
        else:
            y = x.reshape(self.shape)
        return [y if self.requant is None else self.requant(y)]


@register("Transpose", *_ANY)
class Transpose(Layer):
    def build(self) -> None:
        self.perm = tuple(int(p) for p in self.node.attr("perm"))
        self.requant = move_requant(self.node, self.graph)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        y = np.ascontiguousarray(xs[0].transpose(self.perm))
        return [y if self.requant is None else self.requant(y)]


@register("Concat", *_ALL)
class Concat(Layer):
    """Concatenation; int8 inputs whose quantization differs from the output's are requantized
    unless the node says ``requantize=False`` (then, as int16 always, the values are copied)."""

    def build(self) -> None:
        self.operands = Operands(self.inputs)
        self.axis = prepare_concat(self.node, self.graph).axis
        self.rescale = prepare_concat(self.node, self.graph).rescale

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        parts = self.operands.gather(xs)
        n = max(p.shape[0] for p in parts)
        if self.axis != 0:  # constants carry batch 1
            parts = [np.broadcast_to(p, (n, *p.shape[1:])) for p in parts]
        if self.rescale:
            parts = [p if r is None else r(p) for p, r in zip(parts, self.rescale, strict=True)]
        return [np.concatenate(parts, axis=self.axis)]


@register("Pad", *_ALL)
class Pad(Layer):
    def build(self) -> None:
        p = prepare_pad(self.node, self.graph)
        self.pads, self.value, self.requant = p.pads, p.value, p.requant

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        y = np.pad(x, self.pads, constant_values=np.asarray(self.value).astype(x.dtype))
        return [y if self.requant is None else self.requant(y)]
