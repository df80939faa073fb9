"""ONNX ``If`` whose condition is a constant at import: the taken branch is imported in its
place (its nodes converted as if they stood in the outer graph, where the names they read from
the outer scope are already bound), and the If's outputs stand for the branch's outputs.

A condition computed from the graph's inputs is refused in one line that names the inputs it
depends on: a model that branches on, say, a sample-rate input runs once that input is fixed
as a constant (``--input-value`` / ``load_model(input_values=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from onnx import GraphProto, NodeProto

from edgenn.frontends.onnx.constfold import to_array
from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.values import ConstVal

CONTROL_FLOW = frozenset({"If"})


def walk(nodes: Iterator[NodeProto] | list[NodeProto]) -> Iterator[NodeProto]:
    """Every node, and every node of the subgraphs they hold (depth first)."""
    for node in nodes:
        yield node
        for g in subgraphs(node):
            yield from walk(list(g.node))


def subgraphs(node: NodeProto) -> list[GraphProto]:
    out: list[GraphProto] = []
    for a in node.attribute:
        if a.HasField("g"):
            out.append(a.g)
        out.extend(a.graphs)
    return out


def convert_if(ctx: Context, node: NodeProto, convert: Callable[[NodeProto], None]) -> None:
    """Import the branch of ``node`` that its constant condition selects."""
    cond = ctx.need(0)
    if not ctx.is_const(cond):
        raise ctx.fail(_data_dependent(ctx, cond))
    value = np.asarray(ctx.consts[cond].data)
    if value.size != 1:
        raise ctx.malformed(f"If condition {cond!r} has {value.size} elements (one is needed)")
    key = "then_branch" if bool(value.reshape(-1)[0]) else "else_branch"
    branch = next((a.g for a in node.attribute if a.name == key), None)
    if branch is None:
        raise ctx.malformed(f"If without a {key}")
    if len(branch.output) != len(node.output):
        raise ctx.malformed(f"If has {len(node.output)} outputs, its {key} "
                            f"{len(branch.output)}")
    for init in branch.initializer:
        ctx.set_const(init.name, ConstVal(to_array(ctx, init)))
    for inner in branch.node:
        convert(inner)
    ctx.begin(node, quantized=False)  # why: errors after the branch name the If again
    for out, src in zip(node.output, branch.output, strict=True):
        if out:
            ctx.alias(out, src.name)


def _data_dependent(ctx: Context, cond: str) -> str:
    inputs = _graph_inputs_behind(ctx, cond)
    shown = ", ".join(repr(n) for n in inputs)
    fix = (f"; fix {'it' if len(inputs) == 1 else 'them'} as a constant with --input-value "
           f"{inputs[0]}=VALUE (load_model(input_values={{{inputs[0]!r}: VALUE}}))"
           if inputs else "")
    return (f"If on a condition {cond!r} computed at run time"
            + (f" from graph input {shown}" if inputs else "")
            + ": only an If whose condition is a constant at import is supported" + fix)


def _graph_inputs_behind(ctx: Context, name: str) -> list[str]:
    """The graph inputs that ``name`` is computed from (through the ONNX producers)."""
    seen: set[str] = set()
    found: list[str] = []
    stack = [name]
    while stack:
        n = stack.pop()
        if n in seen or not n:
            continue
        seen.add(n)
        producer = ctx.producers.get(n)
        if producer is None:
            if n in ctx.graph_inputs:
                found.append(n)
            continue
        stack.extend(producer.input)
    return sorted(found)
