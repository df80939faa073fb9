"""Build a generated Cortex-M library for the host under ASan + UBSan and run it on inputs.

The portable kernels (a core without DSP assembly: cortex-m0plus) are plain C99, so the
library's own Makefile builds them with the host gcc. The library is built for an external
arena that the host program ``malloc``s at exactly ``ARENA_BYTES``: ASan then puts redzones
right after the arena (a static array shares its neighbourhood with other globals), and after
every constant array. ``-fno-sanitize-recover=all`` makes the first UBSan report fatal.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.cortexm.executable import compile_cortexm
from edgenn.ir import Graph

SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=23",
       "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
NAME = "san"


def host_gcc() -> str | None:
    return shutil.which("gcc")


def _main_c(manifest: dict[str, Any]) -> str:
    """A host main: reads every sample's inputs from stdin, invokes, writes the outputs."""
    ins = [int(t["bytes"]) for t in manifest["inputs"]]
    outs = [int(t["bytes"]) for t in manifest["outputs"]]
    mac = NAME.upper()  # the macro prefix
    return f"""\
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{NAME}.h"

static const size_t in_bytes[] = {{{", ".join(map(str, ins))}}};
static const size_t out_bytes[] = {{{", ".join(map(str, outs))}}};

int main(int argc, char **argv)
{{
    long s, samples = argc > 1 ? atol(argv[1]) : 0;
    int i;
    /* why posix_memalign of exactly ARENA_BYTES: ASan's redzone starts at the arena's end */
    void *arena = NULL;
    if (posix_memalign(&arena, {mac}_ARENA_ALIGNMENT, {mac}_ARENA_BYTES) != 0
        || {NAME}_init_with_arena((uint8_t *)arena, {mac}_ARENA_BYTES) != {mac}_OK) {{
        return 2;
    }}
    for (s = 0; s < samples; s++) {{
        for (i = 0; i < {len(ins)}; i++) {{
            if (fread({NAME}_input(i), 1, in_bytes[i], stdin) != in_bytes[i]) {{
                return 3;
            }}
        }}
        /* why: every sample from the initial state (a streaming model's state would carry
         * over), as the reference runtime runs them */
        if ({NAME}_reset_state() != {mac}_OK || {NAME}_invoke() != {NAME.upper()}_OK) {{
            return 4;
        }}
        for (i = 0; i < {len(outs)}; i++) {{
            fwrite({NAME}_output(i), 1, out_bytes[i], stdout);
        }}
    }}
    free(arena);
    return 0;
}}
"""


def build(graph: Graph, out_dir: Path, ram_kb: int = 8192) -> tuple[Path, dict[str, Any]]:
    """(the sanitized host executable, the manifest) of ``graph``'s cortex-m0plus library,
    built in ``out_dir``."""
    compile_cortexm(graph, "cortex-m0plus", out_dir=out_dir, name=NAME, library_only=True,
                    ram_kb=ram_kb, arena="external")
    manifest = json.loads((out_dir / "manifest.json").read_text())
    _run(["make", "-s", "clean"], out_dir)  # why: compile left Arm objects here
    jobs = str(max(1, min(4, os.cpu_count() or 1)))
    _run(["make", "-s", "-j", jobs, f"lib{NAME}.a", "CC=gcc", "AR=ar",
          f"CORE_FLAGS={SANITIZE}"], out_dir)
    (out_dir / "host_main.c").write_text(_main_c(manifest))
    exe = out_dir / "host_app"
    _run(["gcc", *SANITIZE.split(), "-O1", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I.",
          "host_main.c", f"lib{NAME}.a", "-lm", "-o", str(exe)], out_dir)
    return exe, manifest


def run(exe: Path, manifest: dict[str, Any], xs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every sample of ``xs`` (one array per input, samples on axis 0) through ``exe``: each
    output's bytes, one row per sample. AssertionError with the sanitizer's report (stderr)
    when the program fails or prints anything on stderr."""
    n = len(xs[0])
    payload = b"".join(np.ascontiguousarray(x[s]).tobytes() for s in range(n) for x in xs)
    res = subprocess.run([str(exe), str(n)], input=payload, capture_output=True,
                         env={**os.environ, **ENV}, timeout=600)
    stderr = res.stderr.decode(errors="replace")
    assert res.returncode == 0 and not stderr, f"exit {res.returncode}:\n{stderr[-4000:]}"
    sizes = [int(t["bytes"]) for t in manifest["outputs"]]
    assert len(res.stdout) == n * sum(sizes), f"{len(res.stdout)} output bytes"
    rows = np.frombuffer(res.stdout, np.uint8).reshape(n, sum(sizes))
    edges = np.cumsum([0, *sizes])
    return [rows[:, a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _run(cmd: list[str], cwd: Path) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd[:3])} failed:\n{res.stderr[-4000:]}"
