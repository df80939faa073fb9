"""The public face of a generated model library: ``NAME.h``, the API part of ``NAME.c``, its
``CMakeLists.txt`` and ``Makefile``.

Every global symbol a library defines starts with ``NAME_``; every macro with ``NAME_`` in
upper case. The kernels it calls are the shared runtime (``edgenn_*``), identical in every
library edgenn generates, so any number of models link into one image. ``NAME`` is a
sanitised C identifier (:func:`.names.c_identifier`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgenn.backends.c_literals import C_TYPE, c_literal
from edgenn.backends.cortexm.codegen.names import c_comment, check_identifier
from edgenn.backends.cortexm.codegen.state import StateSlot, reset_function, store_statements
from edgenn.ir import DType

ARENA_ALIGNMENT = 16  # why: kernels read 16-aligned scratch with word and double-word loads
C_STANDARD_FLAGS = ("-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror")
HOOK_MACRO = "EDGENN_LAYER_HOOK"
# Status codes of the API (negative: errors); documented in NAME.h and docs/deploy.md.
STATUS_CODES = (
    ("OK", 0, "success"),
    ("ERROR_NOT_INITIALISED", -1, "invoke before a successful init"),
    ("ERROR_ARENA_NULL", -2, "init_with_arena got a null arena"),
    ("ERROR_ARENA_TOO_SMALL", -3, "init_with_arena got fewer than ARENA_BYTES bytes"),
    ("ERROR_ARENA_MISALIGNED", -4, "init_with_arena got an arena not aligned to "
                                   "ARENA_ALIGNMENT bytes"),
    ("ERROR_NO_STATIC_ARENA", -5, "init called on a library built for an external arena"),
)
# The status codes only a library that reads its inputs from the caller's buffers has
# (``--input-buffer caller``; a default build's header and API stay as they were).
CALLER_INPUT_STATUS_CODES = (
    ("ERROR_INPUT_NULL", -6, "set_input got a null buffer, or invoke ran before every input "
                             "was set"),
    ("ERROR_INPUT_MISALIGNED", -7, "set_input got a buffer not aligned to INPUT_ALIGNMENT "
                                   "bytes"),
    ("ERROR_INPUT_INDEX", -8, "set_input got an index out of range"),
)


@dataclass(frozen=True)
class Io:
    """One graph input or output as the C API presents it: a buffer inside the arena at
    ``offset``, or (``caller``) an input read in place from the caller's buffer."""

    tensor: str
    offset: int
    nbytes: int
    shape: tuple[int, ...]
    dtype: str  # "int8", "int16", "int32", "float32"
    scale: float  # 0.0 for tensors that are not quantized
    zero_point: int
    caller: bool = False  # an input the caller's buffer holds (NAME_set_input), not the arena

    @property
    def ctype(self) -> str:
        return C_TYPE[DType(self.dtype)]


@dataclass(frozen=True)
class LibrarySpec:
    """What the API text needs to know about one model library."""

    name: str  # sanitised C identifier
    model: str  # the graph's name, for comments only (escaped)
    core: str
    arena_bytes: int
    static_arena: bool
    inputs: tuple[Io, ...]
    outputs: tuple[Io, ...]
    n_layers: int
    skip_capable: bool
    state: tuple[StateSlot, ...] = ()  # kept between invocations (codegen/state.py)
    state_bytes: int = 0  # the state area at the end of the arena

    def __post_init__(self) -> None:
        check_identifier(self.name)

    @property
    def macro(self) -> str:
        return self.name.upper()

    @property
    def arena_expr(self) -> str:
        """The arena's base address in C: the static array, or the pointer init stored."""
        return f"{self.name}_arena" if self.static_arena else f"{self.name}_arena_base"

    def caller_input_expr(self, index: int, ctype: str) -> str:
        """Caller input ``index`` in C as a ``ctype *`` (``NAME_set_input``'s binding).
        why through uintptr_t: the kernels' input parameters are not const-qualified; the
        planner never lets a layer write an input it reads from the caller's buffer
        (codegen/memory.py), so the qualifier is dropped for the call only."""
        return f"(({ctype} *)(uintptr_t){self.name}_inputs[{index}])"

    @property
    def ready_expr(self) -> str:
        """True in C once an init succeeded."""
        return f"{self.name}_ready" if self.static_arena else f"{self.name}_arena_base != NULL"

    @property
    def caller_inputs(self) -> bool:
        """The inputs are read in place from the caller's buffers (``--input-buffer caller``):
        ``NAME_set_input`` binds them, the arena does not hold them."""
        return any(io.caller for io in self.inputs)

    @property
    def api_symbols(self) -> tuple[str, ...]:
        n = self.name
        names = [f"{n}_init", f"{n}_init_with_arena", f"{n}_invoke", f"{n}_input",
                 f"{n}_output", f"{n}_reset_state"]
        if self.caller_inputs:
            names.append(f"{n}_set_input")
        if self.skip_capable:
            names += [f"{n}_set_skip_mask", f"{n}_get_skip_mask"]
        return tuple(names)


def _io_macros(m: str, kind: str, ios: Sequence[Io]) -> list[str]:
    lines = [f"#define {m}_{kind}_COUNT {len(ios)}"]
    for i, io in enumerate(ios):
        p = f"{m}_{kind}{i}"
        dims = ", ".join(str(d) for d in io.shape)
        lines += [
            f"/* {kind.lower()} {i}: {c_comment(io.tensor)} */",
            f"#define {p}_BYTES {io.nbytes}",
            f"#define {p}_TYPE {io.ctype}",
            f"#define {p}_SCALE {c_literal(io.scale, 'float')}",
            f"#define {p}_ZERO_POINT {io.zero_point}",
            f"#define {p}_RANK {len(io.shape)}",
            f"#define {p}_SHAPE {{{dims}}}",
        ]
    return lines


def header(spec: LibrarySpec) -> str:
    """``NAME.h``: the one header a user includes."""
    n, m = spec.name, spec.macro
    codes = STATUS_CODES + (CALLER_INPUT_STATUS_CODES if spec.caller_inputs else ())
    status = [line for code, value, doc in codes
              for line in (f"/* {doc} */", f"#define {m}_{code} ({value})")]
    arena = ("this build: a static array inside the library, use " f"{n}_init()"
             if spec.static_arena else f"this build: yours, use {n}_init_with_arena")
    skip = ([f"/* Skip the residual blocks whose bits are set in mask, from the next {n}_invoke on",
             " * (bit numbers: manifest.json \"blocks\"). */",
             f"void {n}_set_skip_mask(uint32_t mask);", f"uint32_t {n}_get_skip_mask(void);", ""]
            if spec.skip_capable else [])
    if spec.caller_inputs:
        usage = [f" * Usage: {n}_init() (or {n}_init_with_arena(arena, bytes)) once and",
                 f" * {n}_set_input(i, buffer) for every input (the binding stays until set",
                 f" * again); then per inference fill your buffers, call {n}_invoke(), read",
                 f" * {n}_output(i). The inputs are read in place from your buffers, never",
                 " * written, and are not in the arena; the outputs live in the arena",
                 f" * ({arena})."]
    else:
        usage = [f" * Usage: {n}_init() (or {n}_init_with_arena(arena, bytes)) once; then per",
                 f" * inference fill {n}_input(i), call {n}_invoke(), read {n}_output(i).",
                 f" * The buffers live in the arena ({arena})."]
    caller = ([f"/* Read input index in place from buffer (at least {m}_INPUTi_BYTES bytes,",
               f" * aligned to {m}_INPUT_ALIGNMENT, valid and unchanged while {n}_invoke",
               f" * runs); {n}_invoke never writes it. Checked; the binding stays until set",
               " * again. */",
               f"int {n}_set_input(int index, const void *buffer);"]
              if spec.caller_inputs else [])
    lines = [
        f"/* {n}: generated by edgenn from {c_comment(spec.model)} for {spec.core}.",
        " *",
        *usage,
        " * Layouts are NHWC, row-major, with the shapes below; quantized values map to reals",
        " * as real = SCALE * (q - ZERO_POINT). Functions return the status codes below.",
        f" * Per-layer timing: compile {n}.c with -D{HOOK_MACRO}=f, where f is your",
        f" * void f(uint32_t layer_index); {n}_invoke then calls f before each layer and once",
        " * after the last. Not reentrant: one invoke of a model at a time.",
        f" * State: a streaming model keeps {m}_STATE_BYTES bytes (at the end of the arena)",
        f" * from one {n}_invoke to the next; init sets its initial values and",
        f" * {n}_reset_state() sets them again (a new stream). */",
        f"#ifndef {m}_H",
        f"#define {m}_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        *status,
        "",
        f"#define {m}_ARENA_BYTES {spec.arena_bytes}",
        f"#define {m}_ARENA_ALIGNMENT {ARENA_ALIGNMENT}",
        f"#define {m}_STATIC_ARENA {int(spec.static_arena)}",
        f"#define {m}_LAYER_COUNT {spec.n_layers}",
        "/* bytes of state kept between invocations (0: a stateless model) */",
        f"#define {m}_STATE_BYTES {spec.state_bytes}",
        *([f"/* the inputs are the caller's buffers ({n}_set_input), not in the arena */",
           f"#define {m}_INPUT_IN_ARENA 0",
           f"#define {m}_INPUT_ALIGNMENT {ARENA_ALIGNMENT}"] if spec.caller_inputs else []),
        "",
        *_io_macros(m, "INPUT", spec.inputs),
        "",
        *_io_macros(m, "OUTPUT", spec.outputs),
        "",
        f"/* Static-arena builds: prepare the model; {m}_ERROR_NO_STATIC_ARENA otherwise. */",
        f"int {n}_init(void);",
        f"/* External-arena builds: run on arena, at least {m}_ARENA_BYTES bytes aligned to",
        f" * {m}_ARENA_ALIGNMENT, valid while the model is used. Checked. */",
        f"int {n}_init_with_arena(uint8_t *arena, size_t bytes);",
        f"/* One inference; {m}_ERROR_NOT_INITIALISED before a successful init. */",
        f"int {n}_invoke(void);",
        "/* The state's initial values (as after init): the next invoke starts a new",
        f" * stream; {m}_ERROR_NOT_INITIALISED before a successful init. */",
        f"int {n}_reset_state(void);",
        *(["/* Output buffer i inside the arena; NULL before init or i out of range.",
            f" * {n}_input is always NULL: the inputs are yours ({n}_set_input). */"]
          if spec.caller_inputs else
          ["/* Input / output buffer i inside the arena; NULL before init or i out of range. */"]),
        f"void *{n}_input(int index);",
        f"void *{n}_output(int index);",
        *caller,
        "",
        *skip,
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {m}_H */",
        "",
    ]
    return "\n".join(lines)


def source_prologue(spec: LibrarySpec, kernel_headers: Sequence[str]) -> str:
    """The start of ``NAME.c``: includes, the hook, the arena and the API functions; the
    layers' constants and ``NAME_invoke`` follow."""
    n, m = spec.name, spec.macro
    includes = "".join(f'#include "{h}"\n' for h in kernel_headers)
    # why only with state: a stateless init stays what it was (nothing to set)
    ok = f"{n}_reset_state()" if spec.state else f"{m}_OK"
    if spec.static_arena:
        arena = (f"uint8_t {n}_arena[{m}_ARENA_BYTES] "
                 f"__attribute__((aligned({ARENA_ALIGNMENT})));\n"
                 f"static int {n}_ready;\n\n"
                 f"int {n}_init(void)\n{{\n    {n}_ready = 1;\n    return {ok};\n}}\n\n"
                 f"int {n}_init_with_arena(uint8_t *arena, size_t bytes)\n{{\n"
                 f"    /* why: this build computes in its static arena */\n"
                 f"    (void)arena;\n    (void)bytes;\n    return {m}_ERROR_NO_STATIC_ARENA;\n}}\n")
    else:
        arena = (f"static uint8_t *{n}_arena_base;\n\n"
                 f"int {n}_init(void)\n{{\n    return {m}_ERROR_NO_STATIC_ARENA;\n}}\n\n"
                 f"int {n}_init_with_arena(uint8_t *arena, size_t bytes)\n{{\n"
                 f"    if (arena == NULL) {{\n        return {m}_ERROR_ARENA_NULL;\n    }}\n"
                 f"    if (bytes < (size_t){m}_ARENA_BYTES) {{\n"
                 f"        return {m}_ERROR_ARENA_TOO_SMALL;\n    }}\n"
                 f"    if (((uintptr_t)arena % {m}_ARENA_ALIGNMENT) != 0u) {{\n"
                 f"        return {m}_ERROR_ARENA_MISALIGNED;\n    }}\n"
                 f"    {n}_arena_base = arena;\n    return {ok};\n}}\n")
    ready = spec.ready_expr
    arena += "\n" + reset_function(n, spec.arena_expr, ready, f"{m}_OK",
                                   f"{m}_ERROR_NOT_INITIALISED", spec.state)
    in_arena = ("output",) if spec.caller_inputs else ("input", "output")
    offsets = []
    for kind, ios in (("input", spec.inputs), ("output", spec.outputs)):
        if kind not in in_arena:
            continue
        values = ", ".join(f"{io.offset}u" for io in ios) or "0u"
        offsets.append(f"static const uint32_t {n}_{kind}_offsets[{max(1, len(ios))}] = "
                       f"{{{values}}};")
    accessors = "".join(
        f"\nvoid *{n}_{kind}(int index)\n{{\n"
        f"    if (!({ready}) || index < 0 || index >= {m}_{kind.upper()}_COUNT) {{\n"
        f"        return NULL;\n    }}\n"
        f"    return {spec.arena_expr} + {n}_{kind}_offsets[index];\n}}\n"
        for kind in in_arena)
    if spec.caller_inputs:
        accessors = _caller_input_api(spec) + accessors
    skip = ""
    if spec.skip_capable:
        # why noinline + volatile: the mask is read once per inference, through a call the
        # cycle model prices like the switch itself (docs/skipping.md)
        skip = (f"\nstatic volatile uint32_t {n}_skip_mask;\n\n"
                f"__attribute__((noinline, used)) void {n}_set_skip_mask(uint32_t mask)\n{{\n"
                f"    {n}_skip_mask = mask;\n}}\n\n"
                f"__attribute__((noinline, used)) uint32_t {n}_get_skip_mask(void)\n{{\n"
                f"    return {n}_skip_mask;\n}}\n")
    return (
        f"/* Generated by edgenn for {spec.core}: model {c_comment(spec.model)}, "
        f"{spec.n_layers} layers, arena {spec.arena_bytes} bytes. */\n"
        "#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n"
        f'#include "{n}.h"\n{includes}\n'
        f"#if defined({HOOK_MACRO})\n"
        f"void {HOOK_MACRO}(uint32_t layer_index);\n"
        f"#define EDGENN_MODEL_MARK(i) {HOOK_MACRO}(i)\n"
        "#else\n#define EDGENN_MODEL_MARK(i) ((void)0)\n#endif\n"
        + (f"#define EDGENN_MODEL_SKIP_MASK() {n}_get_skip_mask()\n" if spec.skip_capable
           else "") + "\n"
        f"{arena}\n" + "\n".join(offsets) + "\n" + accessors + skip + "\n"
    )


def _caller_input_api(spec: LibrarySpec) -> str:
    """The bindings of the caller's input buffers, ``NAME_set_input`` and ``NAME_input``
    (NULL: the inputs are not in the arena)."""
    n, m = spec.name, spec.macro
    return (f"\nstatic const void *{n}_inputs[{m}_INPUT_COUNT];\n\n"
            f"int {n}_set_input(int index, const void *buffer)\n{{\n"
            f"    if (index < 0 || index >= {m}_INPUT_COUNT) {{\n"
            f"        return {m}_ERROR_INPUT_INDEX;\n    }}\n"
            f"    if (buffer == NULL) {{\n        return {m}_ERROR_INPUT_NULL;\n    }}\n"
            f"    if (((uintptr_t)buffer % {m}_INPUT_ALIGNMENT) != 0u) {{\n"
            f"        return {m}_ERROR_INPUT_MISALIGNED;\n    }}\n"
            f"    {n}_inputs[index] = buffer;\n    return {m}_OK;\n}}\n\n"
            f"void *{n}_input(int index)\n{{\n"
            f"    /* why NULL: the inputs are the caller's buffers ({n}_set_input) */\n"
            f"    (void)index;\n    return NULL;\n}}\n")


def invoke_function(spec: LibrarySpec, body: Sequence[str]) -> str:
    """``int NAME_invoke(void)`` around the layers' statements."""
    unset = " || ".join(f"{spec.name}_inputs[{i}] == NULL" for i in range(len(spec.inputs)))
    check = (f"    if ({unset}) {{\n        return {spec.macro}_ERROR_INPUT_NULL;\n    }}\n"
             if spec.caller_inputs and unset else "")
    return (f"int {spec.name}_invoke(void)\n{{\n"
            f"    if (!({spec.ready_expr})) {{\n"
            f"        return {spec.macro}_ERROR_NOT_INITIALISED;\n    }}\n"
            + check
            + "\n".join([*body, *store_statements(spec.arena_expr, spec.state)])
            + f"\n    return {spec.macro}_OK;\n}}\n")


def cmake_lists(spec: LibrarySpec, sources: Sequence[str], opt: str) -> str:
    """``CMakeLists.txt``: the static library target NAME, for ``add_subdirectory``."""
    n = spec.name
    srcs = "\n    ".join(sources)
    return f"""\
# Generated by edgenn: the model library `{n}` ({spec.core}).
#   add_subdirectory({n})
#   target_link_libraries(your_app PRIVATE {n})
# The core flags (-mcpu, -mfloat-abi, -mfpu) come from your toolchain file; they must match
# the core the library was generated for: {spec.core}.
cmake_minimum_required(VERSION 3.13)
project({n} LANGUAGES C)

add_library({n} STATIC
    {srcs}
)
target_include_directories({n} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}})
set_target_properties({n} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options({n} PRIVATE {opt} -ffunction-sections -fdata-sections)
target_link_libraries({n} PUBLIC m)
"""


def makefile(spec: LibrarySpec, core_flags: Sequence[str], opt: str, lib_sources: Sequence[str],
             app_sources: Sequence[str], hooked: bool, ldflags: Sequence[str]) -> str:
    """``Makefile``: ``make`` builds ``libNAME.a`` and the application (``make libNAME.a`` or
    ``make app`` one of them; no application in a library-only folder).
    ``make libNAME.a CC=gcc AR=ar CORE_FLAGS=`` builds the library for the host (portable
    kernels only)."""
    n = spec.name
    lib = f"lib{n}.a"
    srcs = " \\\n           ".join(lib_sources)
    app = " and the application build/model.elf" if app_sources else ""
    text = f"""\
# Generated by edgenn: `make` builds {lib}{app}.
# Objects (and the application's ELF and map) go to build/: this folder keeps the library.
CC         = arm-none-eabi-gcc
AR         = arm-none-eabi-ar
CORE_FLAGS = {' '.join(core_flags)}
CFLAGS     = $(CORE_FLAGS) {opt} {' '.join(C_STANDARD_FLAGS)} \\
             -ffunction-sections -fdata-sections -I.
LIB_SRCS   = {srcs}
LIB_OBJS   = $(LIB_SRCS:%.c=build/%.o)

all: {lib}{" build/model.elf" if app_sources else ""}

{lib}: $(LIB_OBJS)
\trm -f $@
\t$(AR) rcs $@ $(LIB_OBJS)

build/%.o: %.c
\t@mkdir -p $(@D)
\t$(CC) $(CFLAGS) -c $< -o $@
"""
    clean = f"{lib} $(LIB_OBJS)"
    if app_sources:
        app_objs = [f"build/{s[:-2]}.o" for s in app_sources]
        if hooked:
            app_objs.append(f"build/{n}_hooked.o")
        text += f"""
LDFLAGS    = $(CORE_FLAGS) {' '.join(ldflags)}
APP_OBJS   = {' '.join(app_objs)}

app: build/model.elf

build/model.elf: $(APP_OBJS) {lib} linker.ld
\t$(CC) $(LDFLAGS) $(APP_OBJS) {lib} -o $@ -lm
"""
        if hooked:
            text += f"""
# the emulator's copy of {n}.c: layer boundaries reported to edgenn_mark (cycles per layer)
build/{n}_hooked.o: {n}.c
\t@mkdir -p $(@D)
\t$(CC) $(CFLAGS) -D{HOOK_MACRO}=edgenn_mark -c $< -o $@
"""
        clean += " $(APP_OBJS) build/model.elf build/model.map"
    text += f"\nclean:\n\trm -f {clean}\n\n.PHONY: all clean{' app' if app_sources else ''}\n"
    return text
