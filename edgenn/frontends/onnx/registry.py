"""The table of ONNX operator converters, keyed by ONNX op type."""

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


def supported_onnx_ops() -> list[str]:
    """The ONNX operator types the importer understands (If: its constant-condition form,
    which the loader imports itself, ``control.py``)."""
    import edgenn.frontends.onnx.ops  # noqa: F401  (fills the table)
    from edgenn.frontends.onnx.control import CONTROL_FLOW

    return sorted(set(CONVERTERS) | CONTROL_FLOW)
