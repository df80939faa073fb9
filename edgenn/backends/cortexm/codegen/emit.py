"""Rendering of one layer's KernelCall into C: constant arrays and the call statement."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from edgenn.backends.cortexm.kernel import CArray, KernelCall

_PER_LINE = 24


def _literal(v: float | int, ctype: str) -> str:
    if ctype == "float":
        f = float(np.float32(v))
        if np.isnan(f):
            return "(0.0f/0.0f)"
        if np.isinf(f):
            return "(1.0f/0.0f)" if f > 0 else "(-1.0f/0.0f)"
        return f"{f!r}f"
    if ctype == "int32_t" and int(v) == -(2**31):
        return "(-2147483647-1)"  # why: 2147483648 alone is not an int32 literal
    return str(int(v))


def array_decl(c_name: str, arr: CArray) -> str:
    """``static const <type> name[n] aligned(4) = {...};`` with compact literals."""
    vals = arr.values.tolist()
    lines = []
    for start in range(0, len(vals), _PER_LINE):
        chunk = vals[start:start + _PER_LINE]
        lines.append("    " + ",".join(_literal(v, arr.ctype) for v in chunk))
    body = ",\n".join(lines) if lines else "    0"
    n = max(1, len(vals))
    return (f"static const {arr.ctype} {c_name}[{n}] __attribute__((aligned(4))) = {{\n"
            f"{body}\n}};")


def render(kcall: KernelCall, prefix: str, pointers: Mapping[str, str]) -> tuple[list[str], str]:
    """(array declarations, call statement) of a layer.

    ``pointers`` maps arena placeholders (in0, out0, scratch, ...) to C expressions; arrays
    get the C name ``<prefix>_<local name>``.
    """
    names = {a.name: f"{prefix}_{a.name}" for a in kcall.arrays}
    decls = [array_decl(names[a.name], a) for a in kcall.arrays]
    if kcall.code:
        decls.append(kcall.code.replace("@P@", prefix))
    mapping = {**pointers, **names, "prefix": prefix}
    try:
        call = kcall.call.format_map(mapping)
    except KeyError as e:
        raise ValueError(
            f"kernel {kcall.kernel_name!r}: unknown placeholder {e} in its call") from None
    return decls, call
