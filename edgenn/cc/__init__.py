"""Compiling C: :mod:`~edgenn.cc.driver` runs any compiler, linker or archiver (missing-tool
error, timeout, the first error line); :mod:`~edgenn.cc.host` builds host shared objects
that ``ctypes`` loads (content-hash cache)."""

from edgenn.cc.driver import DEFAULT_TIMEOUT_S, CompileError, find_tool, first_error, run_tool
from edgenn.cc.host import (
    CANDIDATES,
    DEFAULT_FLAGS,
    INSTALL_PACKAGE,
    Source,
    compile_shared,
    compiler_available,
    compiler_identity,
    default_cache_dir,
    find_host_compiler,
    load_library,
)

__all__ = [
    "CANDIDATES", "DEFAULT_FLAGS", "DEFAULT_TIMEOUT_S", "INSTALL_PACKAGE", "CompileError",
    "Source", "compile_shared", "compiler_available", "compiler_identity", "default_cache_dir",
    "find_host_compiler", "find_tool", "first_error", "load_library", "run_tool",
]
