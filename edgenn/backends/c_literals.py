"""C literals for every code generator (Cortex-M layers, the on-device SVM, host kernels).

Floats are rounded to float32 first and printed as the shortest decimal that parses back to
exactly that float32 (C would otherwise round the decimal of a double straight to float, which
can differ by double rounding); infinities and NaN become the constant expressions C accepts.
Integers print in hex (weights read like a dump); ``INT32_MIN`` as an expression, since
``0x80000000`` alone is an unsigned literal.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from edgenn.ir import DType

# The C type of each element type a generated kernel or API reads and writes (no int64: no C
# backend takes int64 tensors). Why uint8_t for bool: a bool tensor is one byte, 0 or 1.
C_TYPE: dict[DType, str] = {
    DType.INT8: "int8_t", DType.UINT8: "uint8_t", DType.INT16: "int16_t",
    DType.INT32: "int32_t", DType.FLOAT32: "float", DType.BOOL: "uint8_t",
}


def c_float(v: float) -> str:
    """The float32 nearest to ``v`` as a C ``float`` literal (or constant expression)."""
    f = float(np.float32(v))
    if np.isnan(f):
        return "(0.0f/0.0f)"
    if np.isinf(f):
        return "(1.0f/0.0f)" if f > 0 else "(-1.0f/0.0f)"
    return f"{f!r}f"


def c_double(v: float) -> str:
    """A C ``double`` literal of ``v`` (finite)."""
    return repr(float(v))


def c_int(v: int, ctype: str = "int32_t") -> str:
    """An integer literal in hex (``-0x12`` for negatives)."""
    i = int(v)
    if ctype == "int32_t" and i == -(2**31):
        return "(-0x7fffffff-1)"  # why: 0x80000000 alone is an unsigned int literal
    return f"-{-i:#x}" if i < 0 else f"{i:#x}"


def c_literal(v: float | int, ctype: str) -> str:
    """One literal of ``ctype`` (``float`` or an integer type)."""
    return c_float(float(v)) if ctype == "float" else c_int(int(v), ctype)


def c_initializer(values: Iterable[float | int], ctype: str, per_line: int = 0) -> str:
    """``{a, b, ...}`` (``per_line`` > 0 breaks lines after that many values)."""
    items = [c_literal(v, ctype) for v in values]
    if per_line <= 0:
        return "{" + ", ".join(items) + "}"
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(lines) + ",\n}"
