"""The body of a mask-capable ``edgenn_invoke`` (see :mod:`.skip` for the design).

Shape of the generated code::

    const uint32_t mask = EDGENN_MODEL_SKIP_MASK();   /* read once per inference */
    int8_t *const skip_block1_out = (mask & 0x1u) ? <x's buffer> : <block output's buffer>;
    ...
    if (!(mask & 0x1u)) {            /* block1: layers 1..3 */
        EDGENN_MODEL_MARK(1u); conv(...);
        EDGENN_MODEL_MARK(2u); conv(...);
        EDGENN_MODEL_MARK(3u); add(...);
    } else {                          /* skipped: the marks (and the requantize) only */
        EDGENN_MODEL_MARK(1u); EDGENN_MODEL_MARK(2u);
        EDGENN_MODEL_MARK(3u); requant(x -> block output);
    }
    EDGENN_MODEL_MARK(4u); mean(skip_block1_out, ...);   /* reads x when block1 was skipped */
"""

from __future__ import annotations

from collections.abc import Callable

from edgenn.backends.cortexm.codegen.emit import layer_comment, render
from edgenn.backends.cortexm.codegen.skip import RUN, SkipBlock, SkipLayout
from edgenn.backends.cortexm.kernel import KernelCall
from edgenn.ir import Graph

MASK_VAR = "mask"


class PointerNames:
    """C expressions of tensors under skipping: static arena pointers, or a pointer variable
    chosen at run time for an aliased block output (declared only if used)."""

    def __init__(self, graph: Graph, layout: SkipLayout, static: Callable[[str], str]):
        self.graph = graph
        self.layout = layout
        self.static = static  # tensor name -> its fixed arena pointer expression
        self.used: dict[str, str] = {}  # variable -> declaration, in dependency order

    def expr(self, tensor: str) -> str:
        root = self.layout.aliases.get(tensor, tensor)
        block = self.layout.block_of_output(root)
        if block is None:
            return self.static(tensor)
        var = f"skip_{block.name}_out"
        if var not in self.used:
            x = self.expr(block.input)  # declares x's own variable first
            ctype = self.static(root).split("*")[0].lstrip("(")
            self.used[var] = (f"    {ctype}*const {var} = ({MASK_VAR} & {block.mask:#x}u) ? "
                              f"{x} : {self.static(root)};")
        return var

    def output_expr(self, tensor: str) -> str:
        """Where a layer writes ``tensor``: its own buffer (a layer writing a block output
        runs only when that block runs), except a Reshape alias, which shares its source's
        bytes in every configuration."""
        return self.expr(tensor) if tensor in self.layout.aliases else self.static(tensor)

    def declarations(self) -> list[str]:
        return list(self.used.values())


def _cond(bits: int) -> str:
    return f"!({MASK_VAR} & {bits:#x}u)"


def invoke_body(graph: Graph, calls: list[KernelCall], layout: SkipLayout,
                layer_ptrs: Callable[[int, PointerNames], dict[str, str]],
                static: Callable[[str], str]) -> tuple[list[str], list[str]]:
    """(constant array declarations, lines of edgenn_invoke's body)."""
    names = PointerNames(graph, layout, static)
    decls: list[str] = []
    code: list[str] = []
    replacements: dict[int, SkipBlock] = {b.add_index: b for b in layout.blocks if b.mode == RUN}
    n = len(graph.nodes)
    i = 0
    while i < n:
        bits = layout.layer_bits[i]
        if not bits:
            d, call = render(calls[i], f"l{i}", layer_ptrs(i, names))
            decls += d
            code.append(layer_comment(graph, calls, i)
                        + f"    EDGENN_MODEL_MARK({i}u);\n    {call}")
            i += 1
            continue
        j = i
        while j < n and layout.layer_bits[j] == bits:
            j += 1
        run_lines, skip_lines = [], []
        for k in range(i, j):
            d, call = render(calls[k], f"l{k}", layer_ptrs(k, names))
            decls += d
            call = call.replace("\n", "\n    ")
            run_lines.append(layer_comment(graph, calls, k, "    ")
                             + f"        EDGENN_MODEL_MARK({k}u);\n        {call}")
            skip_lines.append(f"        EDGENN_MODEL_MARK({k}u);")
            block = replacements.get(k)
            if block is not None:
                d, rep = _replacement(graph, block, names, static)
                decls += d
                guard = layout.enclosing_bits(block)
                rep = rep.replace("\n", "\n    ")
                if guard:  # nested: the enclosing block may be skipped too
                    rep = f"if ({_cond(guard)}) {{\n            {rep}\n        }}"
                skip_lines.append(f"        /* {block.name} skipped: {block.replacement_op} "
                                  f"of its input */\n        {rep}")
        names_in = [b.name for b in layout.blocks if b.mask & bits]
        what = f"layer {i} runs" if j == i + 1 else f"layers {i}..{j - 1} run"
        code.append(f"    /* {what} unless {' or '.join(names_in)} is skipped */\n"
                    f"    if ({_cond(bits)}) {{\n" + "\n".join(run_lines)
                    + "\n    } else {\n" + "\n".join(skip_lines) + "\n    }")
        i = j
    code.append(f"    EDGENN_MODEL_MARK({n}u);")
    head = [f"    const uint32_t {MASK_VAR} = EDGENN_MODEL_SKIP_MASK();", *names.declarations()]
    return decls, head + code


def _replacement(graph: Graph, block: SkipBlock, names: PointerNames,
                 static: Callable[[str], str]) -> tuple[list[str], str]:
    assert block.replacement is not None
    ptrs = {"scratch": "((void *)0)", "in0": names.expr(block.input),
            "out0": static(block.output)}
    return render(block.replacement, f"skip_{block.name}", ptrs)
