"""A node's quantization and fused activation, read once, with one-line errors naming it."""

from __future__ import annotations

import numpy as np

from edgenn.errors import GraphValidationError, UnsupportedOperatorError
from edgenn.ir import Activation, Node, QuantParams, Tensor


def activation_of(node: Node) -> Activation:
    """The node's fused activation as an ``Activation`` (accepts the enum or its value)."""
    act = node.attr("activation", Activation.NONE)
    if act is None:
        return Activation.NONE
    try:
        return act if isinstance(act, Activation) else Activation(act)
    except ValueError:
        raise UnsupportedOperatorError(f"{node}: unknown activation {act!r}") from None


def quant_of(node: Node, t: Tensor | None, what: str) -> QuantParams:
    """The quantization of an integer tensor, or one clear error."""
    if t is None or t.quant is None:
        name = t.name if t is not None else "?"
        raise GraphValidationError(f"{node}: {what} tensor {name!r} has no quantization")
    return t.quant


def per_tensor(node: Node, t: Tensor | None, what: str) -> QuantParams:
    """The quantization of a tensor quantized per tensor, or one clear error."""
    q = quant_of(node, t, what)
    if q.per_channel:
        raise UnsupportedOperatorError(f"{node}: {what} tensor {q!r} must be quantized per tensor")
    return q


def int_bias(node: Node, bias: np.ndarray | None, channels: int) -> np.ndarray:
    """An integer layer's bias as int64 (zeros when absent), or one error when it is not an
    integer tensor: TFLite Micro takes an int32 bias only, and a float one (finite or not)
    has no integer value to add."""
    if bias is None:
        return np.zeros(channels, np.int64)
    if bias.dtype.kind not in "iu":
        raise UnsupportedOperatorError(
            f"{node}: an int8 {node.op} needs an int32 bias, got {bias.dtype}")
    return bias.astype(np.int64)


def const_data(node: Node, t: Tensor | None) -> np.ndarray | None:
    """The constant data of an optional input (None when omitted), or one clear error."""
    if t is None:
        return None
    if t.data is None:
        raise UnsupportedOperatorError(
            f"{node}: input {t.name!r} must be a constant for this operator")
    return t.data
