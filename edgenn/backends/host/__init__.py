"""The host backend: C compiled for the machine edgenn runs on, loaded with ctypes.

:mod:`edgenn.backends.host.compiler` is the run-time C compiler every host-side native
component uses (the SVM trainer today): sources + flags -> a cached shared object.
"""

from edgenn.backends.host.compiler import (
    DEFAULT_FLAGS,
    Source,
    compile_shared,
    compiler_available,
    find_host_compiler,
    load_library,
)

__all__ = ["DEFAULT_FLAGS", "Source", "compile_shared", "compiler_available",
           "find_host_compiler", "load_library"]
