"""Generate the C library of a graph and the application around it.

The library (``NAME.h``, ``NAME.c``, the kernels it uses, ``CMakeLists.txt``, ``Makefile``,
``libNAME.a``) is what a firmware team ships; the application (startup code, ``main.c``,
linker script) is the emulator's harness (``--board generic``) or a real board's example
(``boards``). ``manifest.json`` tells the tools where everything is.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from edgenn.analysis import node_macs
from edgenn.backends.c_literals import C_TYPE
from edgenn.backends.cortexm.codegen import library, templates
from edgenn.backends.cortexm.codegen.emit import layer_comment, render
from edgenn.backends.cortexm.codegen.library import Io, LibrarySpec
from edgenn.backends.cortexm.codegen.memory import (
    external_tensors,
    plan_arena,
    scratch_name,
    state_aliases,
)
from edgenn.backends.cortexm.codegen.names import check_identifier
from edgenn.backends.cortexm.codegen.skip import SkipLayout, plan_skip_layout
from edgenn.backends.cortexm.codegen.skip_emit import invoke_body
from edgenn.backends.cortexm.codegen.state import state_slots
from edgenn.backends.cortexm.codesize import compact_code
from edgenn.backends.cortexm.fit import FitError, kib_to_fit
from edgenn.backends.cortexm.kernel import KernelCall
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import EdgennError, UnsupportedOperatorError
from edgenn.ir import Graph, Tensor
from edgenn.memory import MemoryPlan, state_offsets
from edgenn.utils import atomic_write_bytes

C_DIR = Path(__file__).resolve().parent.parent / "c"
DEFAULT_STACK_BYTES = 2048  # measured high-water marks are ~0.5 KiB (stack painting)
DEFAULT_NAME = "model"
GENERIC_BOARD = "generic"
ARENA_KINDS = ("static", "external")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


@dataclass
class Project:
    """A generated project: where it is, its build inputs and its manifest.

    ``lib_sources`` make ``libNAME.a``; ``app_sources`` (empty in a library-only folder) plus
    the archive make ``model.elf``; with ``hooked`` the application links its own copy of
    ``NAME.c`` compiled with the layer hook (the emulator's per-layer cycles).
    """

    out_dir: Path
    core: Core
    name: str
    lib_sources: list[str]
    app_sources: list[str]
    hooked: bool
    cflags: list[str]
    ldflags: list[str]
    manifest: dict[str, Any]
    plan: MemoryPlan
    calls: list[KernelCall] = field(default_factory=list)
    skip: SkipLayout | None = None  # set when the firmware is skip-mask capable

    @property
    def library(self) -> str:
        return f"lib{self.name}.a"


def _io(graph: Graph, names: tuple[str, ...], plan: MemoryPlan,
        external: frozenset[str] = frozenset()) -> tuple[Io, ...]:
    out = []
    for name in names:
        t = graph.tensor(name)
        if t.dtype not in C_TYPE:
            raise UnsupportedOperatorError(f"graph input/output {name!r} is {t.dtype.value}; "
                                           "Cortex-M firmware takes int8, uint8, int16, int32, "
                                           "float32 or bool")
        q = t.quant
        scale = float(q.scale[0]) if q is not None and q.axis is None else 0.0
        zp = int(q.zero_point[0]) if q is not None and q.axis is None else 0
        caller = name in external
        out.append(Io(name, 0 if caller else plan.offsets[name], t.nbytes, tuple(t.shape),
                      t.dtype.value, scale, zp, caller))
    return tuple(out)


def harness_input_symbol(index: int) -> str:
    """The emulator application's RAM buffer of caller input ``index`` (outside the arena)."""
    return f"edgenn_harness_input{index}"


def _io_manifest(ios: Sequence[Io], harness: bool = False) -> list[dict[str, Any]]:
    """The manifest's inputs / outputs. A caller input has no arena offset: with the
    emulator's application (``harness``) its ``symbol`` is that application's buffer, else
    None (the caller's own)."""
    out = []
    for k, io in enumerate(ios):
        entry: dict[str, Any] = {
            "name": io.tensor, "offset": io.offset, "bytes": io.nbytes, "shape": list(io.shape),
            "dtype": io.dtype, "scale": io.scale, "zero_point": io.zero_point}
        if io.caller:
            entry.update(in_arena=False, symbol=harness_input_symbol(k) if harness else None)
        out.append(entry)
    return out


def flags(core: Core, opt: str) -> tuple[list[str], list[str]]:
    cflags = [*core.cflags, opt, *library.C_STANDARD_FLAGS,
              "-ffunction-sections", "-fdata-sections", "-I."]
    return cflags, [*core.cflags, *_link_flags(opt)]


def _link_flags(opt: str) -> list[str]:
    return [opt, "-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections", "-T", "linker.ld",
            "-Wl,-Map=build/model.map"]


def used_files(sources: Iterable[str], c_dir: Path = C_DIR) -> tuple[list[str], list[str]]:
    """(.c files, .h files) of the runtime that ``sources`` need: the sources themselves, the
    headers of the same name and every header they include, transitively."""
    c_files: list[str] = []
    headers: list[str] = []
    todo: list[str] = []
    for s in sources:
        if s.endswith(".c") and s not in c_files:
            c_files.append(s)
        todo.append(s)
        if s.endswith(".c") and (c_dir / (s[:-2] + ".h")).exists():
            todo.append(s[:-2] + ".h")
    while todo:
        f = todo.pop(0)
        if f.endswith(".h"):
            if f in headers:
                continue
            headers.append(f)
        for inc in _INCLUDE.findall((c_dir / f).read_text()):
            if (c_dir / inc).exists() and inc not in headers:
                todo.append(inc)
    return c_files, headers


def _board(board: str) -> Any:
    if board == GENERIC_BOARD:
        return None
    from edgenn.backends.cortexm.boards import get_board

    return get_board(board)


def generate(graph: Graph, core: Core, out_dir: str | Path, ram_kb: int | None = None,
             opt: str = "-O2", stack_bytes: int = DEFAULT_STACK_BYTES,
             blocks: Sequence[Any] = (),
             skip_configs: Iterable[Iterable[str]] | None = None,
             skip_copy: bool | None = None,
             compact_layers: frozenset[int] = frozenset(),
             name: str = DEFAULT_NAME, board: str = GENERIC_BOARD,
             library_only: bool = False, arena: str = "static",
             flash_kb: float | None = None,
             prepared: dict[tuple[int, bool], KernelCall] | None = None,
             input_buffer: str = "arena") -> Project:
    """Write the library ``name`` for ``graph`` on ``core`` (and, unless ``library_only``, the
    application for ``board``) into ``out_dir`` (created if needed).

    ``name``: a sanitised C identifier (``names.c_identifier``); every symbol and macro of the
    library starts with it. ``arena``: ``"static"`` (an array inside the library,
    ``NAME_init``) or ``"external"`` (``NAME_init_with_arena``). With ``blocks``
    (``edgenn.passes.skip.find_blocks(graph)``) the firmware is skip-mask capable:
    ``NAME_set_skip_mask`` selects the blocks to skip between inferences and the arena is
    planned for every configuration in ``skip_configs`` (default: all of them).
    ``ram_kb`` / ``flash_kb``: the device's RAM and flash (default: the board's, else the
    core's), the MEMORY map of the generic application's ``linker.ld``; the link checks the
    image against them (``build.build_project``: one-line ``fit.FitError``). A library-only
    folder is not linked: FitError here when its arena plus the stack exceeds ``ram_kb``.
    ``compact_layers``: node indices whose kernels generate compact code (``codesize.py``;
    chosen by ``flash_policy``). ``prepared``: the kernel calls of earlier projects of the same
    graph and core, by (node index, compact), reused and extended (the flash policy's trial
    builds differ only in which layers are compact). ``input_buffer``: ``"arena"`` (the
    inputs are arena buffers, filled through ``NAME_input(i)``) or ``"caller"`` (read in
    place from the caller's buffers, bound by ``NAME_set_input(i, buffer)``: the arena
    excludes them and no layer writes them; the generic application keeps them in RAM
    buffers of its own, ``harness_input_symbol``).
    """
    check_identifier(name)
    external = external_tensors(graph, input_buffer)
    if arena not in ARENA_KINDS:
        raise EdgennError(f"arena {arena!r}: choose one of {', '.join(ARENA_KINDS)}")
    board_spec = _board(board)
    if board_spec is not None and board_spec.core != core.name:
        raise EdgennError(f"board {board!r} has a {board_spec.core}, not a {core.name}")
    if external:
        _check_caller_inputs(graph, external, blocks, board_spec, library_only, board)
    # why no batch check: one invocation takes every input in its declared shape, whatever
    # its first axis (edgenn.ir.batch); a batch is a sequence of invocations
    graph.validate()
    if ram_kb is None:
        ram_kb = board_spec.ram_kb if board_spec is not None else core.ram_kb
    prepared = {} if prepared is None else prepared
    calls = []
    for i, n in enumerate(graph.nodes):
        form = (i, i in compact_layers)
        if form not in prepared:
            with compact_code(form[1]):
                prepared[form] = select_kernel(n, graph, core).prepare(n, graph, core)
        calls.append(prepared[form])
    skip = None
    if blocks and graph.state:
        raise UnsupportedOperatorError(f"graph {graph.name!r}: skippable blocks in a model "
                                       "that keeps state between invocations are not supported")
    if blocks:
        skip = plan_skip_layout(graph, core, blocks, [c.scratch_bytes for c in calls],
                                skip_configs, copy_aliases=skip_copy)
        plan = skip.plan
    else:
        plan = plan_arena(graph, [c.scratch_bytes for c in calls],
                          in_place=[i for i, c in enumerate(calls) if c.in_place],
                          state_in_place=[i for i, c in enumerate(calls) if c.state_in_place],
                          external=external)
    plan, state_bytes = _with_state_area(graph, plan)
    # the new states written in place take their variable's slot (no copy at the end)
    shared = state_aliases(graph, [i for i, c in enumerate(calls) if c.state_in_place])
    if shared:
        plan = replace(plan, offsets={**plan.offsets,
                                      **{w: plan.offsets[r] for w, r in shared.items()}})
    arena_bytes = max(16, plan.peak_bytes)
    if library_only and arena_bytes + stack_bytes > ram_kb * 1024:
        # why only here: an application's link measures all of its RAM, this is a part
        need = arena_bytes + stack_bytes
        raise FitError(f"graph {graph.name!r}: arena of {arena_bytes:,} bytes plus "
                       f"{stack_bytes:,} bytes of stack do not fit the {ram_kb} KiB "
                       f"({ram_kb * 1024:,} bytes) of RAM of {core.name}: use --ram-kb "
                       f"{kib_to_fit(need)} or more (the application's own data adds to it)")

    # why the last path component: graph names are often the model's path on the build host
    model_name = re.split(r"[\\/]", graph.name)[-1] or graph.name
    spec = LibrarySpec(name, model_name, core.name, arena_bytes, arena == "static",
                       _io(graph, graph.inputs, plan, external), _io(graph, graph.outputs, plan),
                       len(graph.nodes), skip is not None, state_slots(graph, plan), state_bytes)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    extra = [b.replacement for b in skip.blocks if b.replacement] if skip else []
    wanted: list[str] = []
    for c in [*calls, *extra]:
        wanted += [s for s in c.sources if s not in wanted]
    kernel_sources, headers = used_files(wanted)
    for f in [*headers, *kernel_sources]:
        shutil.copyfile(C_DIR / f, out / f)

    lib_sources = [f"{name}.c", *kernel_sources]
    cflags, ldflags = flags(core, opt)
    files = {f"{name}.c": _model_c(graph, calls, plan, spec, headers, skip),
             f"{name}.h": library.header(spec),
             "CMakeLists.txt": library.cmake_lists(spec, lib_sources, opt)}
    app_sources: list[str] = []
    hooked = False
    if not library_only:
        if board_spec is None:
            app_sources = ["main.c", "startup.c", "edgenn_mark.c"]
            hooked = True
            files.update({
                "main.c": templates.harness_main(
                    name, spec.static_arena, spec.skip_capable,
                    [harness_input_symbol(k) for k, io in enumerate(spec.inputs) if io.caller]),
                "startup.c": templates.STARTUP_C,
                "edgenn_mark.c": templates.EDGENN_MARK_C,
                "linker.ld": templates.linker_script(core, ram_kb, stack_bytes, flash_kb),
            })
        else:
            from edgenn.backends.cortexm.boards import app_files

            app = app_files(board_spec, name, {"arena": arena, "name": name,
                                               "inputs": _io_manifest(spec.inputs),
                                               "outputs": _io_manifest(spec.outputs)},
                            stack_bytes)
            files.update(app)
            app_sources = sorted(f for f in app if f.endswith(".c"))
    files["Makefile"] = library.makefile(spec, core.cflags, opt, lib_sources, app_sources,
                                         hooked, _link_flags(opt))
    layers = [{"index": i, "name": n.name, "op": n.op, "macs": node_macs(graph, n),
               "kernel": c.kernel_name} for i, (n, c) in enumerate(zip(graph.nodes, calls,
                                                                        strict=True))]
    manifest: dict[str, Any] = {
        "name": name, "core": core.name, "board": board, "header": f"{name}.h",
        "library": f"lib{name}.a", "library_only": library_only, "arena": arena,
        "elf": None if library_only else "build/model.elf",
        "arena_symbol": f"{name}_arena" if spec.static_arena else "edgenn_harness_arena",
        "arena_bytes": arena_bytes, "init_symbol": "edgenn_harness_init",
        "invoke_symbol": f"{name}_invoke", "mark_symbol": "edgenn_mark",
        "main_symbol": "main", "runtime_symbols": [*spec.api_symbols, "edgenn_harness_init"],
        "stack_bytes": stack_bytes, "ram_kb": ram_kb, "opt": opt,
        "inputs": _io_manifest(spec.inputs, harness=hooked),
        "outputs": _io_manifest(spec.outputs),
        "layers": layers, "compact_layers": sorted(compact_layers),
        "state_bytes": state_bytes, "reset_state_symbol": f"{name}_reset_state",
        "state": [{"name": slot.name, "offset": slot.offset, "bytes": slot.nbytes}
                  for slot in spec.state],
    }
    if spec.caller_inputs:  # why only then: a default build's manifest stays as it was
        manifest.update(input_buffer=input_buffer, set_input_symbol=f"{name}_set_input",
                        input_bytes=sum(io.nbytes for io in spec.inputs if io.caller))
    if skip is not None:
        manifest.update(_skip_manifest(skip, name))
    files["manifest.json"] = json.dumps(manifest, indent=1) + "\n"
    for fname, text in files.items():
        atomic_write_bytes(out / fname, text.encode())
    return Project(out, core, name, lib_sources, app_sources, hooked, cflags, ldflags, manifest,
                   plan, calls, skip)


def _check_caller_inputs(graph: Graph, external: frozenset[str], blocks: Sequence[Any],
                         board_spec: Any, library_only: bool, board: str) -> None:
    """One line for what ``input_buffer="caller"`` does not support."""
    if blocks:
        raise EdgennError(f"graph {graph.name!r}: --input-buffer caller with skip support "
                          "(--skippable / --skip) is not supported: use --input-buffer arena")
    if board_spec is not None and not library_only:
        raise EdgennError(f"--input-buffer caller: the example application of --board {board} "
                          "fills NAME_input(i) in the arena; use --board generic or "
                          "--library-only")
    passed = external & set(graph.outputs)
    if passed:
        raise EdgennError(f"graph {graph.name!r}: output {sorted(passed)[0]!r} is an input; "
                          "with --input-buffer caller the outputs must be computed in the arena")


def _with_state_area(graph: Graph, plan: MemoryPlan) -> tuple[MemoryPlan, int]:
    """The plan with the state area after its buffers (``edgenn.memory.state``), and the
    area's bytes."""
    if not graph.state:
        return plan, 0
    offsets, end = state_offsets(graph, plan.peak_bytes, plan.alignment)
    start = min(offsets.values())
    return (MemoryPlan({**plan.offsets, **offsets}, end, plan.alignment, plan.buffers,
                       plan.aliases, plan.planner), end - start)


def config_key(config: Iterable[str]) -> str:
    """``"block1,block2"`` in block order; ``"full"`` for the full network."""
    names = sorted(config, key=lambda n: (len(n), n))
    return ",".join(names) if names else "full"


def _skip_manifest(skip: SkipLayout, name: str) -> dict[str, Any]:
    return {
        "skip_mask_symbol": f"{name}_set_skip_mask",
        "blocks": [{"name": b.name, "bit": b.bit, "layers": list(b.layers), "input": b.input,
                    "output": b.output, "skipped_as": b.mode if b.mode == "alias"
                    else b.replacement_op.lower()} for b in skip.blocks],
        "skip_configs": [config_key(c) for c in skip.configs],
        "peak_bytes_per_config": {config_key(c): n
                                  for c, n in skip.peak_bytes_per_config.items()},
    }


def _pointer(t: Tensor, arena: str, offset: int) -> str:
    ctype = C_TYPE.get(t.dtype)
    if ctype is None:
        raise UnsupportedOperatorError(
            f"tensor {t.name!r}: {t.dtype.value} activations are not supported on Cortex-M")
    return f"(({ctype} *)({arena} + {offset}))"


def _layer_pointers(graph: Graph, calls: list[KernelCall], plan: MemoryPlan, arena: str, i: int,
                    tensor_ptr: Any, output_ptr: Any = None) -> dict[str, str]:
    """The arena placeholders of layer ``i`` (``tensor_ptr``: tensor name -> C pointer for
    inputs; ``output_ptr`` for outputs, default the same)."""
    node, kcall = graph.nodes[i], calls[i]
    ptrs = {"scratch": "((void *)0)"}
    if kcall.scratch_bytes:
        ptrs["scratch"] = f"((void *)({arena} + {plan.offsets[scratch_name(i)]}))"
    for k, tname in enumerate(node.inputs):
        if tname and not graph.tensor(tname).is_const:
            ptrs[f"in{k}"] = tensor_ptr(tname)
    for k, tname in enumerate(node.outputs):
        ptrs[f"out{k}"] = (output_ptr or tensor_ptr)(tname)
    return ptrs


def _model_c(graph: Graph, calls: list[KernelCall], plan: MemoryPlan, spec: LibrarySpec,
             headers: list[str], skip: SkipLayout | None = None) -> str:
    arena = spec.arena_expr
    caller = {io.tensor: k for k, io in enumerate(spec.inputs) if io.caller}

    def static(tname: str) -> str:
        if tname in caller:  # read in place from the caller's buffer (NAME_set_input)
            return spec.caller_input_expr(caller[tname], C_TYPE[graph.tensor(tname).dtype])
        return _pointer(graph.tensor(tname), arena, plan.offsets[tname])

    if skip is not None:
        decls, body = invoke_body(
            graph, calls, skip,
            lambda i, names: _layer_pointers(graph, calls, plan, arena, i, names.expr,
                                             names.output_expr), static)
    else:
        decls, body = _plain_body(graph, calls, plan, arena, static)
    return (library.source_prologue(spec, headers) + "\n".join(decls) + "\n\n"
            + library.invoke_function(spec, body))


def _plain_body(graph: Graph, calls: list[KernelCall], plan: MemoryPlan, arena: str,
                static: Any) -> tuple[list[str], list[str]]:
    """Array declarations and invoke body of a firmware without skipping: one call per layer."""
    decls: list[str] = []
    body: list[str] = []
    for i, kcall in enumerate(calls):
        d, call = render(kcall, f"l{i}", _layer_pointers(graph, calls, plan, arena, i, static))
        decls += d
        body.append(layer_comment(graph, calls, i) + f"    EDGENN_MODEL_MARK({i}u);\n    {call}")
    body.append(f"    EDGENN_MODEL_MARK({len(graph.nodes)}u);")
    return decls, body
