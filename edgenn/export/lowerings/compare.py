"""Comparisons, logical operators, Where and Cast: EQUAL, NOT_EQUAL, LESS, LESS_EQUAL,
GREATER, GREATER_EQUAL, LOGICAL_AND / OR / NOT, SELECT_V2, CAST.

Each IR node is one builtin with the same operands (the importer's converters in reverse);
Xor has no TFLite builtin and is refused by the exporter's unknown-operator rule.
"""

from __future__ import annotations

from edgenn.export.lowering import OP, Lowering
from edgenn.export.lowerings.common import options
from edgenn.export.ops import lowers

_BUILTIN: dict[str, tuple[int, str | None]] = {
    "Equal": (OP.EQUAL, "EqualOptions"),
    "NotEqual": (OP.NOT_EQUAL, "NotEqualOptions"),
    "Less": (OP.LESS, "LessOptions"),
    "LessOrEqual": (OP.LESS_EQUAL, "LessEqualOptions"),
    "Greater": (OP.GREATER, "GreaterOptions"),
    "GreaterOrEqual": (OP.GREATER_EQUAL, "GreaterEqualOptions"),
    "And": (OP.LOGICAL_AND, "LogicalAndOptions"),
    "Or": (OP.LOGICAL_OR, "LogicalOrOptions"),
    "Not": (OP.LOGICAL_NOT, "LogicalNotOptions"),
    "Where": (OP.SELECT_V2, "SelectV2Options"),
    "Cast": (OP.CAST, None),
}


@lowers(*_BUILTIN)
def _lower(lw: Lowering) -> None:
    assert lw.node is not None
    builtin, table = _BUILTIN[lw.node.op]
    ins = [lw.input(k) for k in range(len(lw.node.inputs))]
    if table is None:
        lw.emit(builtin, ins, [lw.output()])
        return
    lw.emit(builtin, ins, [lw.output()], *options(table))
