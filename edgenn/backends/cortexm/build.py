"""Build a generated project with arm-none-eabi-gcc (the same commands as its Makefile)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from edgenn.backends.cortexm import fit
from edgenn.backends.cortexm.fit import Device
from edgenn.backends.cortexm.shared_compiles import compile_key, compile_shared
from edgenn.cc.driver import (
    DEFAULT_TIMEOUT_S,
    Cancellation,
    CompileError,
    find_tool,
    run_tool,
)
from edgenn.phases import phase

if TYPE_CHECKING:
    from edgenn.backends.cortexm.codegen.project import Project

PROBE_LD, PROBE_ELF = "linker_probe.ld", "build/model_probe.elf"  # removed after the probe
# why a folder of their own: the objects, ELF and map are build products, not the library a
# user ships (the generated Makefile puts them there too)
BUILD_DIR = "build"

COMPILER = "arm-none-eabi-gcc"
INSTALL_PACKAGE = "gcc-arm-none-eabi libnewlib-arm-none-eabi"  # Debian (newlib: libc, libm)


def find_compiler(path: str | None = None) -> str:
    """The full path of arm-none-eabi-gcc, or ToolchainError with the install command."""
    return find_tool((COMPILER,), "Arm cross compiler", INSTALL_PACKAGE, path)


def _link(cmd: list[str], cwd: Path, what: str, device: Device, arena_bytes: int,
          model: str, timeout: float | None) -> None:
    """Link; when the image overflows a memory region, link it once more against the probe
    map (``fit.probe_script``) and raise the one-line FitError with the bytes it needs."""
    try:
        with phase("link"):
            run_tool(cmd, what, cwd=cwd, timeout=timeout)
        return
    except CompileError as err:
        if not fit.overflowed(err.log):
            raise
        failure = err
    script = cmd[cmd.index("-T") + 1]
    (cwd / PROBE_LD).write_text(fit.probe_script((cwd / script).read_text()))
    probe = [PROBE_LD if arg == script else arg for arg in cmd]
    probe[probe.index("-o") + 1] = PROBE_ELF
    probe = [arg for arg in probe if not arg.startswith("-Wl,-Map=")]
    try:
        try:
            run_tool(probe, f"{what} (probe)", cwd=cwd, timeout=timeout)
        except CompileError:
            raise failure from None
        usage = fit.elf_usage(cwd / PROBE_ELF)
    finally:
        (cwd / PROBE_LD).unlink(missing_ok=True)
        (cwd / PROBE_ELF).unlink(missing_ok=True)
    fit.check_fit(usage, device, arena_bytes, model)
    raise failure  # the regions fit but a script check failed (a board's staging area)


def _compile_all(cc: str, cwd: Path, jobs: list[tuple[str, str, list[str]]],
                 timeout: float | None, cancellation: Cancellation | None = None) -> None:
    """Compile (source, object, flags) jobs in parallel; the first failure raises.

    Why the largest sources first: the model's C (compiled twice, with and without the layer
    hook) takes most of the time; started last behind the small kernel files, it would run
    alone on one core at the end (longest-first keeps both cores busy to the end)."""
    jobs = sorted(jobs, key=lambda job: -(cwd / job[0]).stat().st_size)

    def compile_one(job: tuple[str, str, list[str]]) -> None:
        src, obj, cflags = job

        def compile_here() -> None:
            with phase(f"cc {obj}"):
                run_tool([cc, *cflags, "-c", src, "-o", obj], f"compiling {src}", cwd=cwd,
                         timeout=timeout, cancellation=cancellation)

        # why: side-by-side builds of one command compile the same kernel sources
        compile_shared(compile_key(cc, cwd, src, cflags), cwd, obj, compile_here)

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        list(pool.map(compile_one, jobs))


def build(out_dir: str | Path, sources: list[str], cflags: list[str], ldflags: list[str],
          env_path: str | None = None, timeout: float | None = DEFAULT_TIMEOUT_S) -> Path:
    """Compile ``sources`` (in ``out_dir``) and link ``build/model.elf`` (objects and map in
    ``build/`` too); return its path.

    ``env_path`` overrides the PATH searched for the compiler (tests simulate a missing one);
    ``timeout``: seconds each compiler or linker run may take (None: no limit).
    """
    cc = find_compiler(env_path if env_path is not None else os.environ.get("PATH"))
    cwd = Path(out_dir)
    (cwd / BUILD_DIR).mkdir(exist_ok=True)
    objects = [object_path(s) for s in sources]
    _compile_all(cc, cwd, [(s, o, cflags) for s, o in zip(sources, objects, strict=True)],
                 timeout)
    elf = f"{BUILD_DIR}/model.elf"
    run_tool([cc, *ldflags, *objects, "-o", elf, "-lm"], "linking model.elf", cwd=cwd,
             timeout=timeout)
    return cwd / elf


def build_project(project: Project, env_path: str | None = None,
                  archive: bool = True, device: Device | None = None,
                  label: str | None = None,
                  timeout: float | None = DEFAULT_TIMEOUT_S,
                  later: list[DeferredLibrary] | None = None) -> Path | None:
    """Build ``libNAME.a`` and, unless the folder is library-only, ``build/model.elf`` (the
    same commands as the generated Makefile: objects and map in ``build/`` too); return the
    ELF's path (None for a library).

    An image that overflows the linker script's memory is a one-line ``fit.FitError`` naming
    the bytes it needs against ``device`` (default: the project's RAM and its core's flash),
    ``label`` first (default: ``model.elf of NAME``). ``timeout``: seconds each compiler,
    archiver or linker run may take (None: no limit).

    ``archive=False`` (builds only the emulator runs, in temporary folders): no archive; the
    application links the kernel objects directly, so ``NAME.c`` (the largest source by far)
    is compiled once, with the hook, instead of twice.

    ``later`` (a list; for candidate builds that are emulated before one is kept, ``--fuse
    auto``): the library's ``NAME.o`` is not compiled now. The ELF links the archive of the
    other library objects (``NAME.o`` defines nothing the application's hooked copy does not,
    so the linker never pulls that member in: the ELF and its map are the ones the whole
    archive gives), and a :class:`DeferredLibrary` appended to ``later`` compiles it and
    archives the whole library (it does not touch the ELF: it may run while the ELF is
    emulated; cancelled, it leaves the library incomplete).
    """
    from edgenn.backends.cortexm.codegen.library import HOOK_MACRO

    cc = find_compiler(env_path if env_path is not None else os.environ.get("PATH"))
    ar = str(Path(cc).with_name(Path(cc).name[:-len("gcc")] + "ar"))
    cwd = project.out_dir
    cflags = project.cflags
    archive = archive or not project.app_sources or not project.hooked
    model_c = f"{project.name}.c"
    lib_sources = [s for s in project.lib_sources if archive or s != model_c]
    lib_objs = [object_path(s) for s in lib_sources]
    defer = (later is not None and archive and bool(project.app_sources) and project.hooked
             and model_c in lib_sources)
    jobs = [(s, o, cflags) for s, o in zip(lib_sources, lib_objs, strict=True)
            if not (defer and s == model_c)]
    app_objs = [object_path(s) for s in project.app_sources]
    jobs += [(s, o, cflags) for s, o in zip(project.app_sources, app_objs, strict=True)]
    (cwd / BUILD_DIR).mkdir(exist_ok=True)
    if project.hooked:
        hooked = f"{BUILD_DIR}/{project.name}_hooked.o"
        jobs.append((model_c, hooked, [*cflags, f"-D{HOOK_MACRO}=edgenn_mark"]))
        app_objs.append(hooked)
    _compile_all(cc, cwd, jobs, timeout)
    link_with = [project.library]

    def archive_library(objects: list[str], cancellation: Cancellation | None = None) -> None:
        (cwd / project.library).unlink(missing_ok=True)
        with phase("ar"):
            run_tool([ar, "rcs", project.library, *objects],
                     f"archiving {project.library}", cwd=cwd, timeout=timeout,
                     cancellation=cancellation)

    model_o = object_path(model_c)
    if archive:
        archive_library([o for o in lib_objs if not (defer and o == model_o)])
    else:
        link_with = lib_objs
    if not project.app_sources:
        return None
    core, manifest = project.core, project.manifest
    if device is None:
        device = fit.device_memory(core, None, manifest.get("ram_kb"), None)
    elf = f"{BUILD_DIR}/model.elf"

    _link([cc, *project.ldflags, *app_objs, *link_with, "-o", elf, "-lm"], cwd,
          f"linking model.elf for {core.name}", device, int(manifest["arena_bytes"]),
          label or f"model.elf of {project.name}", timeout)
    if defer and later is not None:
        def finish(cancellation: Cancellation) -> None:
            _compile_all(cc, cwd, [(model_c, model_o, cflags)], timeout, cancellation)
            archive_library(lib_objs, cancellation)

        later.append(DeferredLibrary(finish))
    return cwd / elf


class DeferredLibrary:
    """A library's ``NAME.o`` compile and archive, left for later (``build_project(later=)``):
    call it to run them; :meth:`cancel` (from any thread) stops them, its gcc killed, for a
    build whose library will not be kept (``--fuse auto``'s losing candidate): the ELF does
    not need it, and the core it would take is the winner's."""

    def __init__(self, run: Callable[[Cancellation], None]) -> None:
        self._run = run
        self._cancellation = Cancellation()

    def __call__(self) -> None:
        self._run(self._cancellation)

    def cancel(self) -> None:
        self._cancellation.cancel()


def object_path(source: str) -> str:
    """Where the object of ``source`` (a ``.c`` file of the project) goes."""
    return f"{BUILD_DIR}/{source[:-2]}.o"
