"""Small helpers the group lowerings share: options tables by name, constant operands."""

from __future__ import annotations

from typing import Any

import tflite

from edgenn.export.flatbuffer import OptionsFn
from edgenn.export.lowering import BO, Lowering


def options(table: str, **fields: Any) -> tuple[int, OptionsFn]:
    """(options type, builder) of the scalar-field options table ``table``
    (``options("LeakyReluOptions", alpha=0.2)``); fields go through the ``tflite`` package's
    generated ``<table>Add<Field>`` functions, so a misspelt field fails loudly."""
    kind = int(getattr(BO, table))
    adders = [(getattr(tflite, f"{table}Add{_camel(key)}"), value)
              for key, value in fields.items()]
    start, end = getattr(tflite, f"{table}Start"), getattr(tflite, f"{table}End")

    def build(bld: Any) -> int:
        start(bld)
        for add, value in adders:
            add(bld, value)
        return int(end(bld))

    return kind, build


def _camel(key: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def node_name(lw: Lowering) -> str:
    assert lw.node is not None
    return lw.node.name


def broadcast_rank_above_4(lw: Lowering) -> bool:
    """Both inputs differ in shape and one has rank 5 or more (a later operator version)."""
    a, b = lw.ir(0), lw.ir(1)
    return a.shape != b.shape and max(len(a.shape), len(b.shape)) > 4
