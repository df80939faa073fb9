"""Rendering of one layer's KernelCall into C: constant arrays and the call statement."""

from __future__ import annotations

from collections.abc import Mapping

from edgenn.backends.c_literals import c_literal
from edgenn.backends.cortexm.ccall import render_calls
from edgenn.backends.cortexm.codegen.names import c_comment
from edgenn.backends.cortexm.kernel import CArray, KernelCall
from edgenn.ir import Graph

_PER_LINE = 24


def array_decl(c_name: str, arr: CArray) -> str:
    """``static const <type> name[n] aligned(4) = {...};`` with compact literals."""
    vals = arr.values.tolist()
    lines = []
    for start in range(0, len(vals), _PER_LINE):
        chunk = vals[start:start + _PER_LINE]
        lines.append("    " + ",".join(c_literal(v, arr.ctype) for v in chunk))
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
        return decls, render_calls(kcall.call, mapping)
    except ValueError as e:
        raise ValueError(f"kernel {kcall.kernel_name!r}: {e}") from None


def layer_comment(graph: Graph, calls: list[KernelCall], i: int, indent: str = "") -> str:
    """``/* layer i: Op 'name' -> [shape] [kernel] */`` with the untrusted name escaped."""
    node = graph.nodes[i]
    out_t = graph.tensor(node.outputs[0])
    note = f"{node.op} {node.name!r} -> {list(out_t.shape)} [{calls[i].kernel_name}]"
    return f"{indent}    /* layer {i}: {c_comment(note)} */\n"
