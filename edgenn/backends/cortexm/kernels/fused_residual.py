"""The residual Add of a fused chain (an identity shortcut folded into the chain's last step).

A FusedConvChain with ``attrs["residual"]`` (``passes.fusion.chains.residual_add``) ends in an
int8 Add of its last member's output and its own input, both of the output's shape. The Add
is not written again here: a virtual Add node of ``rows`` rows (same operands order, same
quantization, same attributes) gets the kernel the layer-by-layer build would choose for it
(``matching_kernel``: the table-based ``edgenn_add_s8_gen_dsp`` family on DSP cores, the
portable ``edgenn_add_s8`` elsewhere), so the firmware's Add arithmetic is that kernel's,
proven on every input pair against the reference layer where it uses tables. Its statement is
rendered into a function ``@P@_<fn>(in, conv, out)`` of the chain: ``in`` the chain input's
rows, ``conv`` the last member's rows, ``out`` the output rows (which may be ``in`` itself:
element-wise, each byte read before the byte at its offset is written).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from edgenn.backends.cortexm.ccall import render_calls
from edgenn.backends.cortexm.kernel import CArray, matching_kernel
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node, Tensor


@dataclass(frozen=True)
class ResidualCode:
    """C of the Add over ``rows`` rows: a function, its constant arrays and sources."""

    code: str
    arrays: tuple[CArray, ...]
    sources: tuple[str, ...]
    kernel_name: str


def _rows_of(t: Tensor, rows: int) -> Tensor:
    n, _, w, c = t.shape
    return replace(t, name=f"{t.name}@rows{rows}", shape=(n, rows, w, c))


def residual_code(node: Node, graph: Graph, core: Core, rows: int, fn: str) -> ResidualCode:
    """``@P@_<fn>(const int8_t *in, const int8_t *conv, int8_t *out)``: the chain's residual
    Add on ``rows`` whole rows (the chain input's, the last member's, the output's)."""
    add: Node = node.attr("residual")
    inter: tuple[Tensor, ...] = tuple(node.attr("intermediates"))
    x, conv, y = graph.tensor(node.inputs[0]), inter[-1], graph.tensor(node.outputs[0])
    role = {x.name: "in", conv.name: "conv"}
    tensors = {t.name: _rows_of(t, rows) for t in (x, conv, y)}
    vn = Node(add.name, add.op, tuple(tensors[n].name for n in add.inputs),
              (tensors[y.name].name,), dict(add.attrs))
    vg = Graph(f"{graph.name}/{add.name}@rows", {t.name: t for t in tensors.values()}, (vn,),
               tuple(dict.fromkeys(vn.inputs)), vn.outputs)
    call = matching_kernel(vn, vg, core).prepare(vn, vg, core)
    pre = f"@P@_{fn}"
    env = {a.name: f"{pre}_{a.name}" for a in call.arrays}
    env.update({f"in{k}": f"((int8_t *)({role[n]}))" for k, n in enumerate(add.inputs)})
    env.update({"out0": "out", "prefix": pre, "scratch": "((void *)0)"})
    if call.scratch_bytes:
        raise ValueError(f"{node}: the residual Add's kernel needs scratch")
    code = []
    if call.code:
        code.append(call.code.replace("@P@", pre))
    code += [f"static void @P@_{fn}(const int8_t *in, const int8_t *conv, int8_t *out)", "{",
             "    (void)in;", "    (void)conv;",
             f"    {render_calls(call.call, env)}", "}"]
    arrays = tuple(replace(a, name=f"{fn}_{a.name}") for a in call.arrays)
    return ResidualCode("\n".join(code), arrays, call.sources, call.kernel_name)
