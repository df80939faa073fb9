"""The table of ONNX operator converters, keyed by ONNX op type.

The converters (``ops/``) register here; this module imports none of them. The loader
imports them all and answers which operators are supported (``supported_onnx_ops``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnx import NodeProto

    from edgenn.frontends.onnx.context import Context

Converter = Callable[["Context", "NodeProto"], None]

CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register ``fn(ctx, node)`` as the converter of the given ONNX op types."""

    def deco(fn: Converter) -> Converter:
        for op in op_types:
            CONVERTERS[op] = fn
        return fn

    return deco

