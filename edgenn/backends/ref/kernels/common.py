"""Helpers shared by the reference kernels: operands, windows, requantization, chunking."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    multiply_by_quantized_multiplier_inplace,
    quantize_multiplier,
)
from edgenn.backends.ref.layer import Layer
from edgenn.errors import GraphValidationError, UnsupportedOperatorError
from edgenn.ir import Activation, DType, QuantParams, Tensor

# Largest number of elements a kernel materialises at once (im2col patches, accumulators).
CHUNK_ELEMENTS = 1 << 23


def activation_of(layer: Layer) -> Activation:
    """The node's fused activation as an ``Activation`` (accepts the enum or its value)."""
    act = layer.node.attr("activation", Activation.NONE)
    if act is None:
        return Activation.NONE
    try:
        return act if isinstance(act, Activation) else Activation(act)
    except ValueError:
        raise UnsupportedOperatorError(f"{layer.node}: unknown activation {act!r}") from None


def int_bias(layer: Layer, bias: np.ndarray | None, channels: int) -> np.ndarray:
    """An int8 layer's bias as int64 (zeros when absent), or one error when it is not an
    integer tensor: TFLite Micro takes an int32 bias only, and a float one (finite or not)
    has no integer value to add."""
    if bias is None:
        return np.zeros(channels, np.int64)
    if bias.dtype.kind not in "iu":
        raise UnsupportedOperatorError(
            f"{layer.node}: an int8 {layer.node.op} needs an int32 bias, got {bias.dtype}")
    return bias.astype(np.int64)


def quant_of(layer: Layer, t: Tensor | None, what: str) -> QuantParams:
    """The quantization of an int8 tensor, or one clear error."""
    if t is None or t.quant is None:
        name = t.name if t is not None else "?"
        raise GraphValidationError(f"{layer.node}: {what} tensor {name!r} has no quantization")
    return t.quant


def per_tensor(layer: Layer, t: Tensor | None, what: str) -> QuantParams:
    q = quant_of(layer, t, what)
    if q.per_channel:
        raise UnsupportedOperatorError(
            f"{layer.node}: {what} tensor {q!r} must be quantized per tensor"
        )
    return q


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


@dataclass(frozen=True)
class Int8Requant:
    """TFLM's int8 -> int8 ``Requantize`` (the QUANTIZE operator between two int8 tensors).

    ``MultiplyByQuantizedMultiplier(x - zp_in)`` with the multiplier of ``in_scale /
    out_scale`` (in double), ``+ zp_out``, clamped to int8.
    """

    zp_in: int
    zp_out: int
    multiplier: int
    shift: int

    @classmethod
    def between(cls, q_in: QuantParams, q_out: QuantParams) -> Int8Requant | None:
        """The rescale from ``q_in`` to ``q_out``, or None when they are equal (a no-op)."""
        if q_in == q_out:
            return None
        multiplier, shift = quantize_multiplier(q_in.s / q_out.s)
        return cls(q_in.zp, q_out.zp, multiplier, shift)

    def __call__(self, x: np.ndarray) -> npt.NDArray[np.int8]:
        v = x.astype(np.int64)
        v -= self.zp_in
        return requantize(v, self.multiplier, self.shift, self.zp_out, -128, 127)


def output_requant(layer: Layer) -> Int8Requant | None:
    """For an int8 op that moves or compares values in its input's quantization (pooling,
    reshape, pad, transpose), the rescale to a differently quantized output, else None.

    As the exporter writes such a node for TFLM: the op with the input's parameters, then an
    int8 -> int8 QUANTIZE to the declared output parameters.
    """
    x, y = layer.inputs[0], layer.outputs[0]
    if x is None or x.dtype is not DType.INT8 or y.dtype is not DType.INT8:
        return None
    if x.quant is None or y.quant is None:  # nothing declared: the bytes pass unchanged
        return None
    return Int8Requant.between(per_tensor(layer, x, "input"), per_tensor(layer, y, "output"))


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
