"""Helpers shared by the reference kernels: operands, windows, requantization, chunking."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier_inplace
from edgenn.backends.ref.layer import Layer
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Activation, QuantParams, Tensor
from edgenn.prepared import quant

# Largest number of elements a kernel materialises at once (im2col patches, accumulators).
CHUNK_ELEMENTS = 1 << 23


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


def windows(
    xp: np.ndarray,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    out_hw: tuple[int, int],
) -> np.ndarray:
    """A read-only strided view ``[N, OH, OW, KH, KW, C]`` of a padded NHWC array."""
    n, _, _, c = xp.shape
    sn, sh_, sw_, sc = xp.strides
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    return np.lib.stride_tricks.as_strided(
        xp,
        shape=(n, oh, ow, kh, kw, c),
        strides=(sn, sh_ * sh, sw_ * sw, sh_ * dh, sw_ * dw, sc),
        writeable=False,
    )


def pad_hw(x: np.ndarray, pads: Sequence[int], value: Any) -> np.ndarray:
    """Pad an NHWC array by (top, left, bottom, right) with a constant."""
    t, left, b, r = (int(p) for p in pads)
    if t == left == b == r == 0:
        return x
    return np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=value)


def batch_chunks(n: int, per_item: int) -> Iterator[slice]:
    """Slices of the batch so that each chunk materialises about ``CHUNK_ELEMENTS`` values."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def requantize(
    acc: npt.NDArray[np.int64],
    multiplier: Any,
    shift: Any,
    zero_point: int,
    lo: int,
    hi: int,
) -> npt.NDArray[np.int8]:
    """int32 accumulator -> int8 output, as every TFLite int8 kernel ends (overwrites acc)."""
    out = multiply_by_quantized_multiplier_inplace(acc, multiplier, shift)
    out += zero_point
    np.clip(out, lo, hi, out=out)
    return out.astype(np.int8)


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
