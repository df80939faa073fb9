"""Several generated model libraries linked into one firmware by a plain ``main.c``.

What a firmware team does with two ``--library-only`` folders: a ``main.c`` that includes only
the libraries' headers, the generic startup code and linker script (``codegen/templates.py``),
one ``arm-none-eabi-gcc`` link of the archives. The shared kernel runtime (``edgenn_*``) is
the same text in every library, so the linker keeps one copy. ``library_machine`` runs one of
the models of such an ELF in edgenn's emulator (its own init, invoke and arena symbols).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgenn.backends.cortexm.build import find_compiler
from edgenn.backends.cortexm.codegen import templates
from edgenn.backends.cortexm.codegen.project import DEFAULT_STACK_BYTES
from edgenn.backends.cortexm.targets import Core
from edgenn.cc.driver import CompileError, run_tool
from edgenn.errors import EdgennError

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
# why strict flags: the libraries promise to build warning-free as C99 in the user's project
STRICT_CFLAGS = ("-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror")
LINK_FLAGS = ("-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections", "-T", "linker.ld")


def _check_names(names: Sequence[str]) -> list[str]:
    if not names or len(set(names)) != len(names):
        raise EdgennError(f"library names {list(names)}: need one or more, all different")
    for name in names:
        if not _IDENTIFIER.fullmatch(name):
            raise EdgennError(f"library name {name!r} is not a generated library's name "
                              "(^[a-z][a-z0-9_]*$)")
    return list(names)


def plain_main(names: Sequence[str]) -> str:
    """A ``main.c`` that initialises every library of ``names`` (static arenas), then invokes
    them in turn forever; it stops (spins) if an init fails."""
    libs = _check_names(names)
    includes = "".join(f'#include "{n}.h"\n' for n in libs)
    inits = " || ".join(f"{n}_init() != {n.upper()}_OK" for n in libs)
    invokes = "".join(f"        (void){n}_invoke();\n" for n in libs)
    return (f"{includes}\nint main(void)\n{{\n    if ({inits}) {{\n        for (;;) {{\n"
            f"        }}\n    }}\n    for (;;) {{\n{invokes}    }}\n}}\n")


def app_files(names: Sequence[str], core: Core, ram_kb: int | None = None,
              stack_bytes: int = DEFAULT_STACK_BYTES) -> dict[str, str]:
    """``main.c`` (``plain_main``), ``startup.c`` and ``linker.ld`` (the generic memory map:
    flash at 0, ``ram_kb`` KiB of RAM at 0x20000000, default the core's) for ``names``."""
    return {"main.c": plain_main(names), "startup.c": templates.STARTUP_C,
            "linker.ld": templates.linker_script(core, ram_kb or core.ram_kb, stack_bytes)}


def write_app(app_dir: Path, names: Sequence[str], core: Core,
              ram_kb: int | None = None) -> Path:
    """Write ``app_files`` into ``app_dir`` (created); returns ``app_dir``."""
    app_dir.mkdir(parents=True, exist_ok=True)
    for file, text in app_files(names, core, ram_kb).items():
        (app_dir / file).write_text(text)
    return app_dir


def link_libraries(app_dir: Path, libraries: Mapping[str, Path], core: Core,
                   ram_kb: int | None = None, elf_name: str = "app.elf") -> Path:
    """Write the application for ``libraries`` (name -> library folder holding ``NAME.h`` and
    ``libNAME.a``) into ``app_dir`` and link it into ``app_dir / elf_name`` with strict C99
    flags. ToolchainError with the compiler's first line when a step fails or warns."""
    names = _check_names(list(libraries))
    for name, folder in libraries.items():
        if not (folder / f"lib{name}.a").is_file():
            raise EdgennError(f"{folder}: no lib{name}.a (compile the model with --name {name} "
                              "--library-only first)")
    write_app(app_dir, names, core, ram_kb)
    cc = find_compiler()
    cmd = [cc, *core.cflags, *STRICT_CFLAGS, *(f"-I{libraries[n]}" for n in names),
           *LINK_FLAGS, "main.c", "startup.c",
           *(str(libraries[n] / f"lib{n}.a") for n in names), "-lm", "-o", elf_name]
    what = f"linking {app_dir / elf_name}"
    res = run_tool(cmd, what, cwd=app_dir)
    warnings = [ln.strip() for ln in res.stderr.splitlines() if "warning" in ln.lower()]
    if warnings:  # why: the libraries promise a warning-free build, the linker's included
        raise CompileError(f"{what}: {warnings[0]}", res.stderr, res.args)
    return app_dir / elf_name


def library_view(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The library's manifest as the emulator's ``Machine`` reads it for a multi-model ELF:
    its own init, invoke and arena symbols, no layer marks (the plain main has no hook)."""
    name = str(manifest["name"])
    return {**manifest, "init_symbol": f"{name}_init", "invoke_symbol": f"{name}_invoke",
            "arena_symbol": f"{name}_arena", "mark_symbol": None, "layers": []}


def library_machine(elf: Path, manifest: Mapping[str, Any], core: Core) -> Any:
    """An emulator ``Machine`` running the model of ``manifest`` inside the multi-model
    ``elf`` (``invoke([input bytes]).outputs``)."""
    from edgenn.backends.cortexm.emulator import Machine

    return Machine(elf, library_view(manifest), core)


def elf_sizes(elf: Path) -> dict[str, int]:
    """``flash`` (.text + .rodata + .data image) and ``ram`` (.data + .bss + the stack between
    ``_sstack`` and ``_estack``) of a linked ELF, in bytes (as ``CortexMExecutable.sizes``)."""
    from edgenn.backends.cortexm.emulator.elf import ElfImage

    image = ElfImage(elf)
    syms = image.symbols
    stack = (syms["_sstack"], syms["_estack"]) if "_sstack" in syms and "_estack" in syms \
        else None
    s = image.sizes(stack)
    return {"flash": int(s["flash_bytes"]), "ram": int(s["ram_bytes"])}
