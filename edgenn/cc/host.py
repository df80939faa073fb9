"""A small run-time C compiler for the host: C sources + flags -> shared object -> ctypes.

Modelled on tinygrad's clang runtime: the system compiler (``cc``, else ``gcc`` or ``clang``)
builds a shared object that ``ctypes`` loads. Builds are cached under a content hash of the
sources, the headers next to them, the flags and the compiler's identity (its ``--version``
line, plus the CPU when a flag says ``native``), so an edit, a flag or a compiler upgrade
rebuilds and nothing else does. The shared object is written under a temporary name and
renamed into place: concurrent processes never load half a file.

    lib = load_library([C_DIR / "edgenn_smo.c"], [*DEFAULT_FLAGS, "-O3"])
    lib.edgenn_smo_solve(...)

The compiler runs through :mod:`edgenn.cc.driver`: a compile error is one
:class:`~edgenn.cc.driver.CompileError` line with ``file:line:col`` (the whole log on the
exception), a build past ``timeout`` seconds is killed, a missing compiler is one line with the
apt command. It sits below the backends: the host backend builds its kernels with it and the
SVM layer its host build (:mod:`edgenn.svm.native`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from edgenn.cc.driver import DEFAULT_TIMEOUT_S, compiler_identity, find_tool, run_tool
from edgenn.errors import ToolchainError
from edgenn.utils import user_cache_dir

INSTALL_PACKAGE = "gcc"  # Debian
CANDIDATES = ("cc", "gcc", "clang")
DEFAULT_FLAGS: tuple[str, ...] = ("-O2", "-std=c99", "-Wall", "-Wextra", "-Werror")
_NATIVE_FLAGS = ("-march=native", "-mcpu=native", "-mtune=native")
_LOADED: dict[Path, ctypes.CDLL] = {}


@dataclass(frozen=True)
class Source:
    """One translation unit: ``text`` under file name ``name``; ``path`` when read from disk
    (it is then compiled in place, so error locations name the real file)."""

    name: str
    text: str
    path: Path | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Source:
        p = Path(path).resolve()
        try:
            return cls(p.name, p.read_text(), p)
        except OSError as err:
            raise ToolchainError(f"cannot read C source {p}: {err.strerror}") from None


def default_cache_dir() -> Path:
    """``~/.cache/edgenn/host`` (``edgenn.utils.user_cache_dir``)."""
    return user_cache_dir("host")


def find_host_compiler(cc: str | None = None, path: str | None = None) -> str:
    """Full path of ``cc`` (default: the first of cc, gcc, clang on ``path``/PATH), or a
    one-line ToolchainError with the install command."""
    return find_tool((cc,) if cc else CANDIDATES, "host C compiler", INSTALL_PACKAGE, path)


def compiler_available(cc: str | None = None, path: str | None = None) -> bool:
    """True when :func:`find_host_compiler` would succeed."""
    try:
        find_host_compiler(cc, path)
    except ToolchainError:
        return False
    return True


@lru_cache(maxsize=1)
def _cpu_identity() -> str:
    """What ``-march=native`` depends on: the CPU model and feature flags."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() + " " + platform.processor()
    wanted = ("model name", "flags", "Features", "CPU part")
    lines = [ln for ln in info.splitlines() if ln.split(":")[0].strip() in wanted]
    return platform.machine() + "\n" + "\n".join(sorted(set(lines)))


def _headers(dirs: Iterable[Path]) -> list[Path]:
    return sorted({h.resolve() for d in dirs for h in d.glob("*.h")})


def _cache_key(compiler: str, flags: Sequence[str], sources: Sequence[Source],
               headers: Sequence[Path]) -> str:
    h = hashlib.sha256()

    def part(label: str, data: str) -> None:
        h.update(f"{label}\0{len(data)}\0".encode())
        h.update(data.encode())

    part("compiler", compiler_identity(compiler))
    if any(f in _NATIVE_FLAGS for f in flags):
        part("cpu", _cpu_identity())
    part("flags", "\0".join(flags))
    for s in sources:
        part("source " + s.name, s.text)
    for p in headers:
        part("header " + p.name, p.read_text())
    return h.hexdigest()


def compile_shared(sources: Sequence[Source | str | os.PathLike[str]],
                   flags: Sequence[str] = DEFAULT_FLAGS, *,
                   include_dirs: Sequence[str | os.PathLike[str]] = (),
                   cc: str | None = None, cache_dir: str | os.PathLike[str] | None = None,
                   path: str | None = None, name: str | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT_S) -> Path:
    """Build ``sources`` into a shared object (``-shared -fPIC`` added) and return its path.

    ``sources``: file paths or :class:`Source` texts (generated C). Headers in the sources'
    directories and in ``include_dirs`` are on the include path and in the cache key.
    ``cache_dir`` defaults to ``~/.cache/edgenn/host``; ``cc`` names the compiler (default
    cc / gcc / clang on ``path``, default PATH); ``name`` is the file stem of the result;
    ``timeout``: seconds the compiler may run (None: no limit).
    """
    srcs = [s if isinstance(s, Source) else Source.from_file(s) for s in sources]
    if not srcs:
        raise ToolchainError("compile_shared: no C sources given")
    compiler = find_host_compiler(cc, path)
    dirs = [Path(d).resolve() for d in include_dirs]
    dirs += [s.path.parent for s in srcs if s.path is not None and s.path.parent not in dirs]
    digest = _cache_key(compiler, list(flags), srcs, _headers(dirs))[:20]
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    stem = name or Path(srcs[0].name).stem
    lib = cache / f"{stem}-{digest}.so"
    if lib.exists():
        return lib
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ToolchainError(f"cannot create the build cache {cache}: {err.strerror}") from None
    files = []
    for s in srcs:
        if s.path is None:  # generated text: kept beside the cache so error locations exist
            where = cache / f"src-{digest}" / s.name
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_text(s.text)
            files.append(str(where))
        else:
            files.append(str(s.path))
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=".so", dir=cache)
    os.close(fd)
    cmd = [compiler, *flags, "-shared", "-fPIC", *(f"-I{d}" for d in dirs), *files, "-o", tmp]
    try:
        run_tool(cmd, f"compiling {', '.join(s.name for s in srcs)}", timeout=timeout)
        os.replace(tmp, lib)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return lib


def load_library(sources: Sequence[Source | str | os.PathLike[str]],
                 flags: Sequence[str] = DEFAULT_FLAGS, *,
                 include_dirs: Sequence[str | os.PathLike[str]] = (),
                 cc: str | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 path: str | None = None, name: str | None = None,
                 timeout: float | None = DEFAULT_TIMEOUT_S) -> ctypes.CDLL:
    """:func:`compile_shared` (same arguments), then ``ctypes.CDLL``: one handle per built
    file and process."""
    lib = compile_shared(sources, flags, include_dirs=include_dirs, cc=cc,
                         cache_dir=cache_dir, path=path, name=name, timeout=timeout)
    handle = _LOADED.get(lib)
    if handle is None:
        try:
            handle = ctypes.CDLL(str(lib))
        except OSError as err:
            raise ToolchainError(f"cannot load {lib}: {err}") from None
        _LOADED[lib] = handle
    return handle
