"""The table of shape and dtype inference functions, one per operator, and the helpers they
share (one error naming the node).

Why apart from ``shapes.py``: the operator definitions (``opdefs/``) register here, and
``shapes.py``, which infers through the table, imports them all; this module imports none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from edgenn.errors import GraphValidationError
from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.tensor import Tensor

Shape = tuple[int, ...]
Inferred = list[tuple[Shape, DType]]
InferFn = Callable[[Node, list[Tensor | None]], Inferred]

RULES: dict[str, InferFn] = {}


def register_shape(*ops: str) -> Callable[[InferFn], InferFn]:
    def deco(fn: InferFn) -> InferFn:
        for op in ops:
            RULES[op] = fn
        return fn

    return deco


def need(node: Node, inputs: Sequence[Tensor | None], index: int) -> Tensor:
    """Input ``index`` of ``node`` or one error naming the node."""
    if index >= len(inputs) or inputs[index] is None:
        raise fail(node, f"input {index} is missing")
    t = inputs[index]
    assert t is not None
    return t


def fail(node: Node, msg: str) -> GraphValidationError:
    """A validation error naming ``node``."""
    return GraphValidationError(f"{node}: {msg}")


def need_rank(node: Node, t: Tensor, rank: int) -> None:
    if len(t.shape) != rank:
        raise fail(node, f"expects a rank-{rank} input, got {t.name!r} of shape {list(t.shape)}")
