"""Run a generated operator built for another instruction set under a user-mode emulator.

How NEON kernels are checked on an x86 machine: the generated source plus a small C
harness are cross-compiled into a static executable (``aarch64-linux-gnu-gcc``), which
``qemu-aarch64-static`` runs on raw float32 files (input, packed weights, bias) to write the
output. Slow, so it is for correctness tests only. Debian packages: ``gcc-aarch64-linux-gnu``
and ``qemu-user-static``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from edgenn.backends.host.kernels.generated import Generated
from edgenn.backends.host.kernels.op import C_DIR, compile_flags
from edgenn.cc.driver import find_tool, run_tool
from edgenn.errors import ToolchainError

CROSS = {"neon": ("aarch64-linux-gnu-gcc", "qemu-aarch64-static")}
CROSS_PACKAGE = {"neon": "gcc-aarch64-linux-gnu"}  # Debian

_HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
void NAME_run(const float *, const float *, const float *, float *, float *, int32_t, int32_t);
static float *load(const char *path, long n) {
    float *p = aligned_alloc(64, (size_t)(n + 16) * sizeof(float));
    FILE *f = fopen(path, "rb");
    if (!p || !f || fread(p, sizeof(float), (size_t)n, f) != (size_t)n) exit(3);
    fclose(f);
    return p;
}
int main(int argc, char **argv) {
    if (argc != 11) return 2;
    const long nin = atol(argv[1]), nw = atol(argv[2]), nb = atol(argv[3]);
    const long nout = atol(argv[4]), nscratch = atol(argv[5]);
    float *in = load(argv[7], nin), *w = load(argv[8], nw), *b = load(argv[9], nb);
    float *out = calloc((size_t)nout, sizeof(float));
    float *scratch = aligned_alloc(64, (size_t)(nscratch + 16) * sizeof(float));
    if (!out || !scratch) return 4;
    NAME_run(in, w, b, out, scratch, 0, atoi(argv[6]));
    FILE *f = fopen(argv[10], "wb");
    if (!f || fwrite(out, sizeof(float), (size_t)nout, f) != (size_t)nout) return 5;
    fclose(f);
    return 0;
}
"""


def emulation_available(isa: str = "neon") -> bool:
    """Whether the cross compiler and the emulator for ``isa`` are installed."""
    return isa in CROSS and all(shutil.which(tool) for tool in CROSS[isa])


def run_emulated(generated: Generated, x: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
    """The operator's whole output for one batch-1 input, computed in the emulator."""
    cc, runner = CROSS[generated.isa.name]
    cc = find_tool((cc,), f"{generated.isa.name} cross compiler",
                   CROSS_PACKAGE[generated.isa.name])
    with tempfile.TemporaryDirectory(prefix="edgenn-emu-") as tmp:
        d = Path(tmp)
        (d / "op.c").write_text(generated.source)
        (d / "main.c").write_text(_HARNESS.replace("NAME", generated.name))
        files = {"in": np.ascontiguousarray(x, np.float32), "w": generated.weights,
                 "b": generated.bias}
        for key, arr in files.items():
            arr.astype(np.float32).tofile(d / f"{key}.bin")
        exe = d / "op"
        build = [cc, *compile_flags(generated.isa), "-static", f"-I{C_DIR}", str(d / "op.c"),
                 str(d / "main.c"), "-o", str(exe)]
        run_tool(build, f"cross-compiling {generated.name}")
        nout = int(np.prod(out_shape))
        plan = generated.plan
        args = [str(files["in"].size), str(generated.weights.size), str(generated.bias.size),
                str(nout), str(plan.scratch_floats), str(plan.partition_count),
                *(str(d / f"{k}.bin") for k in ("in", "w", "b")), str(d / "out.bin")]
        res = subprocess.run([runner, str(exe), *args], capture_output=True, text=True)
        if res.returncode:
            raise ToolchainError(f"{generated.name} failed in {runner} (exit {res.returncode})")
        return np.fromfile(d / "out.bin", np.float32).reshape(out_shape)
