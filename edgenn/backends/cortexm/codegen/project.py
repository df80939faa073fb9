"""Generate the C project of a graph: model.c/.h, kernels, startup, linker script, Makefile,
manifest.json."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgenn.analysis import node_macs
from edgenn.backends.cortexm.codegen import templates
from edgenn.backends.cortexm.codegen.emit import render
from edgenn.backends.cortexm.codegen.memory import plan_arena, scratch_name
from edgenn.backends.cortexm.codegen.skip import SkipLayout, plan_skip_layout
from edgenn.backends.cortexm.codegen.skip_emit import invoke_body
from edgenn.backends.cortexm.codesize import compact_code
from edgenn.backends.cortexm.kernel import KernelCall, select_kernel
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import PlanError, ShapeError, UnsupportedOperatorError
from edgenn.ir import DType, Graph, Tensor
from edgenn.memory import MemoryPlan
from edgenn.utils import atomic_write_bytes

C_DIR = Path(__file__).resolve().parent.parent / "c"
DEFAULT_STACK_BYTES = 2048  # measured high-water marks are ~0.5 KiB (stack painting)
ARENA_SYMBOL = "edgenn_arena"
_PTR_TYPE = {DType.INT8: "int8_t", DType.INT16: "int16_t", DType.INT32: "int32_t",
             DType.FLOAT32: "float"}


@dataclass
class Project:
    """A generated project: where it is, its build inputs and its manifest."""

    out_dir: Path
    core: Core
    sources: list[str]
    cflags: list[str]
    ldflags: list[str]
    manifest: dict[str, Any]
    plan: MemoryPlan
    calls: list[KernelCall] = field(default_factory=list)
    skip: SkipLayout | None = None  # set when the firmware is skip-mask capable


def _pointer(t: Tensor, offset: int) -> str:
    ctype = _PTR_TYPE.get(t.dtype)
    if ctype is None:
        raise UnsupportedOperatorError(
            f"tensor {t.name!r}: {t.dtype.value} activations are not supported on Cortex-M")
    return f"(({ctype} *)({ARENA_SYMBOL} + {offset}))"


def _io(graph: Graph, names: tuple[str, ...], plan: MemoryPlan) -> list[dict[str, Any]]:
    out = []
    for name in names:
        t = graph.tensor(name)
        if t.dtype not in _PTR_TYPE:
            raise UnsupportedOperatorError(f"graph input/output {name!r} is {t.dtype.value}; "
                                           "Cortex-M firmware takes int8, int16, int32 or float32")
        out.append({"name": name, "offset": plan.offsets[name], "bytes": t.nbytes,
                    "shape": list(t.shape), "dtype": t.dtype.value})
    return out


def flags(core: Core, opt: str) -> tuple[list[str], list[str]]:
    cflags = [*core.cflags, opt, "-std=gnu11", "-Wall", "-Wextra", "-Werror",
              "-ffunction-sections", "-fdata-sections", "-I."]
    ldflags = [*core.cflags, opt, "-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections",
               "-T", "linker.ld", "-Wl,-Map=model.map"]
    return cflags, ldflags


def generate(graph: Graph, core: Core, out_dir: str | Path, ram_kb: int | None = None,
             opt: str = "-O2", stack_bytes: int = DEFAULT_STACK_BYTES,
             blocks: Sequence[Any] = (),
             skip_configs: Iterable[Iterable[str]] | None = None,
             skip_copy: bool | None = None,
             widened_layers: frozenset[int] = frozenset(),
             compact_layers: frozenset[int] = frozenset()) -> Project:
    """Write the project for ``graph`` on ``core`` into ``out_dir`` (created if needed).

    With ``blocks`` (``edgenn.passes.skip.find_blocks(graph)``) the firmware is skip-mask
    capable: ``edgenn_set_skip_mask`` selects the blocks to skip between inferences and the
    arena is planned for every configuration in ``skip_configs`` (default: all of them).
    Raises PlanError when the arena plus the stack does not fit ``ram_kb`` KiB of RAM.
    ``widened_layers``: node indices that may use kernels with pre-widened int16 weights
    (chosen by ``flash_policy``); every other layer keeps its weights int8.
    ``compact_layers``: node indices whose kernels generate compact code (``codesize.py``).
    """
    graph.validate()
    for name in (*graph.inputs, *graph.outputs):
        shape = graph.tensor(name).shape
        if shape and shape[0] != 1:
            raise ShapeError(f"graph {graph.name!r}: {name!r} has batch {shape[0]}; "
                             "firmware is generated for batch 1")
    ram_kb = core.ram_kb if ram_kb is None else int(ram_kb)
    calls = []
    for i, n in enumerate(graph.nodes):
        with compact_code(i in compact_layers):
            calls.append(select_kernel(n, graph, core, i in widened_layers)
                         .prepare(n, graph, core))
    skip = None
    if blocks:
        skip = plan_skip_layout(graph, core, blocks, [c.scratch_bytes for c in calls],
                                skip_configs, copy_aliases=skip_copy)
        plan = skip.plan
    else:
        plan = plan_arena(graph, [c.scratch_bytes for c in calls],
                          in_place=[i for i, c in enumerate(calls) if c.in_place])
    arena = max(16, plan.peak_bytes)
    if arena + stack_bytes > ram_kb * 1024:
        raise PlanError(f"graph {graph.name!r}: arena of {arena:,} bytes plus {stack_bytes:,} "
                        f"bytes of stack do not fit the {ram_kb} KiB ({ram_kb * 1024:,} bytes) "
                        f"of RAM of {core.name} (--ram-kb)")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kernel_sources: list[str] = []
    headers: list[str] = []
    extra = [b.replacement for b in skip.blocks if b.replacement] if skip else []
    if skip:
        kernel_sources.append("edgenn_skip.c")
        headers.append("edgenn_skip.h")
    for c in [*calls, *extra]:
        for s in c.sources:
            h = s[:-2] + ".h" if s.endswith(".c") else s
            if s.endswith(".c") and s not in kernel_sources:
                kernel_sources.append(s)
            if h not in headers:
                headers.append(h)
    for f in sorted(C_DIR.glob("*.h")) + [C_DIR / s for s in kernel_sources]:
        shutil.copyfile(f, out / f.name)

    model_c = _model_c(graph, core, calls, plan, arena, headers, skip)
    sources = ["model.c", "edgenn_mark.c", "startup.c", "main.c", *kernel_sources]
    cflags, ldflags = flags(core, opt)
    layers = [{"index": i, "name": n.name, "op": n.op, "macs": node_macs(graph, n),
               "kernel": c.kernel_name} for i, (n, c) in enumerate(zip(graph.nodes, calls,
                                                                        strict=True))]
    manifest = {
        "core": core.name, "elf": "model.elf", "arena_symbol": ARENA_SYMBOL,
        "arena_bytes": arena, "invoke_symbol": "edgenn_invoke", "mark_symbol": "edgenn_mark",
        "main_symbol": "main", "stack_bytes": stack_bytes, "ram_kb": ram_kb, "opt": opt,
        "inputs": _io(graph, graph.inputs, plan), "outputs": _io(graph, graph.outputs, plan),
        "layers": layers, "widened_layers": sorted(widened_layers),
        "compact_layers": sorted(compact_layers),
    }
    if skip is not None:
        manifest.update(_skip_manifest(skip))
    files = {
        "model.c": model_c,
        "model.h": _model_h(arena),
        "edgenn_mark.c": templates.EDGENN_MARK_C,
        "startup.c": templates.STARTUP_C,
        "main.c": templates.MAIN_SKIP_C if skip else templates.MAIN_C,
        "linker.ld": templates.linker_script(core, ram_kb, stack_bytes),
        "Makefile": templates.makefile(cflags, ldflags, sources),
        "manifest.json": json.dumps(manifest, indent=1) + "\n",
    }
    for name, text in files.items():
        atomic_write_bytes(out / name, text.encode())
    return Project(out, core, sources, cflags, ldflags, manifest, plan, calls, skip)


def config_key(config: Iterable[str]) -> str:
    """``"block1,block2"`` in block order; ``"full"`` for the full network."""
    names = sorted(config, key=lambda n: (len(n), n))
    return ",".join(names) if names else "full"


def _skip_manifest(skip: SkipLayout) -> dict[str, Any]:
    return {
        "skip_mask_symbol": "edgenn_set_skip_mask",
        "blocks": [{"name": b.name, "bit": b.bit, "layers": list(b.layers), "input": b.input,
                    "output": b.output, "skipped_as": b.mode if b.mode == "alias"
                    else b.replacement_op.lower()} for b in skip.blocks],
        "skip_configs": [config_key(c) for c in skip.configs],
        "peak_bytes_per_config": {config_key(c): n
                                  for c, n in skip.peak_bytes_per_config.items()},
    }


def _model_h(arena: int) -> str:
    return ("/* Generated by edgenn. */\n#ifndef EDGENN_MODEL_H\n#define EDGENN_MODEL_H\n\n"
            "#include <stdint.h>\n\n"
            f"#define EDGENN_ARENA_BYTES {arena}\n"
            f"extern uint8_t {ARENA_SYMBOL}[EDGENN_ARENA_BYTES];\n"
            "void edgenn_invoke(void);\nvoid edgenn_mark(uint32_t layer_index);\n\n#endif\n")


def _layer_pointers(graph: Graph, calls: list[KernelCall], plan: MemoryPlan, i: int,
                    tensor_ptr: Any, output_ptr: Any = None) -> dict[str, str]:
    """The arena placeholders of layer ``i`` (``tensor_ptr``: tensor name -> C pointer for
    inputs; ``output_ptr`` for outputs, default the same)."""
    node, kcall = graph.nodes[i], calls[i]
    ptrs = {"scratch": "((void *)0)"}
    if kcall.scratch_bytes:
        ptrs["scratch"] = f"((void *)({ARENA_SYMBOL} + {plan.offsets[scratch_name(i)]}))"
    for k, name in enumerate(node.inputs):
        if name and not graph.tensor(name).is_const:
            ptrs[f"in{k}"] = tensor_ptr(name)
    for k, name in enumerate(node.outputs):
        ptrs[f"out{k}"] = (output_ptr or tensor_ptr)(name)
    return ptrs


def _model_c(graph: Graph, core: Core, calls: list[KernelCall], plan: MemoryPlan, arena: int,
             headers: list[str], skip: SkipLayout | None = None) -> str:
    def static(name: str) -> str:
        return _pointer(graph.tensor(name), plan.offsets[name])

    if skip is not None:
        decls, body = invoke_body(
            graph, calls, skip,
            lambda i, names: _layer_pointers(graph, calls, plan, i, names.expr,
                                             names.output_expr), static)
    else:
        decls, body = _plain_body(graph, calls, plan, static)
    includes = "".join(f'#include "{h}"\n' for h in headers)
    return (f"/* Generated by edgenn for {core.name}: graph {graph.name!r}, "
            f"{len(graph.nodes)} layers, arena {arena} bytes. */\n"
            "#include <stddef.h>\n#include <stdint.h>\n\n#include \"model.h\"\n"
            f"{includes}\n"
            f"uint8_t {ARENA_SYMBOL}[EDGENN_ARENA_BYTES] __attribute__((aligned(16)));\n\n"
            + "\n".join(decls) + "\n\nvoid edgenn_invoke(void)\n{\n" + "\n".join(body) + "\n}\n")


def _plain_body(graph: Graph, calls: list[KernelCall], plan: MemoryPlan,
                static: Any) -> tuple[list[str], list[str]]:
    """Array declarations and invoke body of a firmware without skipping: one call per layer."""
    decls: list[str] = []
    body: list[str] = []
    for i, (node, kcall) in enumerate(zip(graph.nodes, calls, strict=True)):
        d, call = render(kcall, f"l{i}", _layer_pointers(graph, calls, plan, i, static))
        decls += d
        out_t = graph.tensor(node.outputs[0])
        note = f"{node.op} {node.name!r} -> {list(out_t.shape)} [{kcall.kernel_name}]"
        body.append(f"    /* layer {i}: {note.replace('*/', '* /')} */\n"
                    f"    edgenn_mark({i}u);\n    {call}")
    body.append(f"    edgenn_mark({len(graph.nodes)}u);")
    return decls, body
