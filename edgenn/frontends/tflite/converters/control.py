"""TFLite's IF, imported by inlining both branch subgraphs and selecting with Where.

TFLite Micro's IF (``if.cc``) copies its operands after the condition into the chosen
branch subgraph's inputs, runs that branch and copies its outputs out. A branch here is pure
(no resource variables, no variable tensors, no nested control flow: those are refused), so
running both branches and picking each output with ``Where(cond, then, else)`` gives exactly
the outputs of the branch TFLite Micro runs; the cost is the cycles of both branches
(``docs/foundation.md``, "Control flow"). The graph stays a straight line, which every
backend, pass and memory plan already handles.
"""

from __future__ import annotations

from dataclasses import replace

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.dispatch import convert_operator
from edgenn.frontends.tflite.reader import RawOperator, RawSubgraph
from edgenn.frontends.tflite.registry import converter, output_name
from edgenn.ir import DType, Node, Tensor
from edgenn.ir.tflite_enums import OP, enum_name

# operators a branch may not hold: their effect outlives the branch (state) or they run
# further subgraphs
_REFUSED = ("IF", "WHILE", "CALL_ONCE", "CALL", "VAR_HANDLE", "READ_VARIABLE",
            "ASSIGN_VARIABLE")
_REFUSED_CODES = {int(getattr(OP, n)) for n in _REFUSED if hasattr(OP, n)}


def _branch(b: Builder, op: RawOperator, key: str) -> RawSubgraph:
    index = op.options.get(key)
    subs = b.raw.subgraphs
    if not isinstance(index, int) or not 0 < index < len(subs):
        raise b.fail(op, f"IF {key} {index!r} is not one of the {len(subs)} subgraphs "
                         "(nor the main one)")
    return subs[index]


def _check_pure(b: Builder, op: RawOperator, sub: RawSubgraph, what: str) -> None:
    for inner in sub.operators:
        if inner.opcode in _REFUSED_CODES:
            raise b.unsupported(op, f"IF {what} subgraph {sub.name!r} operator {inner.index} "
                                    f"is {enum_name(OP, inner.opcode)} (nested control flow "
                                    "and resource variables in a branch are unsupported)")
    for t in sub.tensors:
        if t.is_variable:
            raise b.unsupported(op, f"IF {what} subgraph {sub.name!r} has the variable tensor "
                                    f"{t.name!r} (state in a branch is unsupported)")


def _inline(b: Builder, op: RawOperator, sub: RawSubgraph, what: str) -> list[str]:
    """Convert ``sub``'s operators into ``b`` with its inputs bound to the IF's operands after
    the condition; returns the IR names of its outputs."""
    operands = op.inputs[1:]
    if len(sub.inputs) != len(operands):
        raise b.fail(op, f"IF {what} subgraph {sub.name!r} takes {len(sub.inputs)} inputs, "
                         f"the IF passes {len(operands)}")
    tensors = list(sub.tensors)
    prefix = f"{b.op_name(op)}/{what}"
    names = [b.new_name(f"{prefix}/{t.name or f'tensor_{t.index}'}") for t in tensors]
    for arg, index in zip(sub.inputs, operands, strict=True):
        if index < 0:
            raise b.fail(op, f"IF operand for {what} input {tensors[arg].name!r} is missing")
        outer, inner = b.raw.tensors[index], tensors[arg]
        if outer.shape != inner.shape or outer.type != inner.type:
            raise b.unsupported(op, f"IF {what} input {inner.name!r} is declared "
                                    f"{list(inner.shape)} (type {inner.type}) but gets "
                                    f"{b.names[index]!r} {list(outer.shape)} (type "
                                    f"{outer.type})")
        # why the outer record: a constant operand (weights the converter passes in) keeps
        # its buffer, so the branch's converters see a constant as they would in the main graph
        tensors[arg] = replace(outer, index=arg)
        names[arg] = b.names[index]
    saved_raw, saved_names = b.raw, b.names
    b.raw = replace(saved_raw, tensors=tensors, operators=sub.operators, inputs=sub.inputs,
                    outputs=sub.outputs)
    b.names = names
    try:
        for inner_op in sub.operators:
            convert_operator(b, inner_op)
        return [b.tensor(i).name for i in sub.outputs]
    finally:
        b.raw, b.names = saved_raw, saved_names


def _same(a: Tensor, c: Tensor) -> bool:
    return a.shape == c.shape and a.dtype == c.dtype and a.quant == c.quant


def _describe(t: Tensor) -> str:
    return f"{t.name!r} {t.dtype.value}{list(t.shape)}"


@converter("IF")
def if_(b: Builder, op: RawOperator) -> None:
    if not op.inputs or not op.outputs:
        raise b.fail(op, "IF needs a condition and at least one output")
    cond = b.input(op, 0)
    if cond.dtype is not DType.BOOL or cond.size != 1:
        # why one element: TFLite Micro's IF reads the condition's first value only
        raise b.fail(op, f"the IF condition {_describe(cond)} is not a one-element bool")
    then_sub, else_sub = (_branch(b, op, k) for k in ("then_subgraph_index",
                                                      "else_subgraph_index"))
    for sub, what in ((then_sub, "then"), (else_sub, "else")):
        _check_pure(b, op, sub, what)
        if len(sub.outputs) != len(op.outputs):
            raise b.fail(op, f"IF {what} subgraph {sub.name!r} has {len(sub.outputs)} "
                             f"outputs, the IF {len(op.outputs)}")
    conds: dict[int, str] = {}  # the condition at each output rank
    then_out = _inline(b, op, then_sub, "then")
    else_out = _inline(b, op, else_sub, "else")
    for k, (t_name, e_name) in enumerate(zip(then_out, else_out, strict=True)):
        out = b.tensors[output_name(b, op, k)]
        t, e = b.tensors[t_name], b.tensors[e_name]
        if not _same(t, e) or not _same(t, out):
            raise b.unsupported(op, f"IF output {k}: the then branch gives {_describe(t)}, "
                                    f"the else branch {_describe(e)}, the IF declares "
                                    f"{_describe(out)} (the branches must agree in shape, "
                                    "type and quantization)")
        rank = len(out.shape)
        if len(cond.shape) > rank and rank not in conds:
            # why: a [1] condition would broadcast a rank-0 output to [1]
            conds[rank] = b.add_intermediate(f"{b.op_name(op)}/cond{rank}", cond, (1,) * rank)
            b.emit(Node(conds[rank], "Reshape", (cond.name,), (conds[rank],),
                        {"shape": (1,) * rank}))
        c = conds.get(rank, cond.name)
        b.emit(Node(f"{b.op_name(op)}/select{k}" if k else b.op_name(op), "Where",
                    (c, t_name, e_name), (out.name,)))
