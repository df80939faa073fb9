"""Helpers shared by the reference kernels: operands, windows, requantization, chunking."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgenn.backends.ref.layer import Layer
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Activation, QuantParams, Tensor
from edgenn.prepared import quant
from edgenn.prepared.linear import Int8Linear


def activation_of(layer: Layer) -> Activation:
    """The node's fused activation (``edgenn.prepared.quant.activation_of``)."""
    return quant.activation_of(layer.node)


def int_bias(layer: Layer, bias: np.ndarray | None, channels: int) -> np.ndarray:
    """An int8 layer's bias as int64 (``edgenn.prepared.quant.int_bias``)."""
    return quant.int_bias(layer.node, bias, channels)


def quant_of(layer: Layer, t: Tensor | None, what: str) -> QuantParams:
    """The quantization of an int8 tensor, or one clear error."""
    return quant.quant_of(layer.node, t, what)


def per_tensor(layer: Layer, t: Tensor | None, what: str) -> QuantParams:
    return quant.per_tensor(layer.node, t, what)


class Operands:
    """Rebuilds the full input list from constants and the runtime's non-constant arrays."""

    def __init__(self, inputs: Sequence[Tensor | None]) -> None:
        self.slots: list[np.ndarray | None] = [
            t.data if t is not None and t.is_const else None for t in inputs
        ]
        self.present = [t is not None for t in inputs]

    def gather(self, xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        it = iter(xs)
        out: list[np.ndarray] = []
        for slot, present in zip(self.slots, self.present, strict=True):
            if not present:
                continue
            out.append(slot if slot is not None else next(it))
        return out


def exact_matmul_dtype(k: int, max_a: int, max_b: int) -> type[np.floating[Any]]:
    """A float type in which an integer matmul of this size is exact (BLAS speed, no rounding).

    Every product and partial sum is an integer of magnitude <= k * max_a * max_b; float32
    holds such integers exactly below 2**24, float64 below 2**53.
    """
    bound = k * max_a * max_b
    if bound < 2**24:
        return np.float32
    if bound < 2**53:
        return np.float64
    raise UnsupportedOperatorError(f"integer matmul of depth {k} may overflow the accumulator")


def int8_matmul_dtype(p: Int8Linear, depth: int) -> type[np.floating[Any]]:
    """The exact float type of an int8 layer's sums of ``depth`` products ``(x - in_zp) * w``."""
    max_x = max(127 - p.in_zp, p.in_zp + 128)
    return exact_matmul_dtype(depth, max_x, int(np.abs(p.w.astype(np.int64)).max(initial=0)))
