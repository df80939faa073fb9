"""The host backend's generated C kernels under AddressSanitizer and UBSan.

The host backend loads its kernels into Python with ctypes, where a sanitizer runtime cannot
be attached; so the generated sources (``kernels.generate``: the exact text the backend
compiles) are linked here into one standalone program with ``-fsanitize=address,undefined``,
each given input, packed weights, bias and scratch allocated at exactly the sizes the
kernel's plan declares (ASan redzones right after each), and run over all its partitions.
Outputs are checked against the reference runtime (float32: within the host tests' tolerance)
and any sanitizer report fails the test. Layers: a few shapes that reach every algorithm
(direct, im2col, indirect, gemm, Winograd F(2x2) / F(4x4), depthwise, dense), scalar code
and the ISA this machine runs.
"""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.host.kernels.config import KERNELS_FOR, HostKernelConfig
from edgenn.backends.host.kernels.generate import applicable, generate, layer_shape
from edgenn.backends.host.kernels.generated import Generated
from edgenn.backends.host.kernels.op import C_DIR, compile_flags
from tests.host_layers import assert_close, case, conv_layer, dense_layer
from tests.sanitizer_build import ENV, SANITIZE, host_gcc

pytestmark = pytest.mark.skipif(host_gcc() is None, reason="gcc is not installed")

LAYERS = {  # odd sizes so that tiles have remainders
    "conv3x3": lambda: conv_layer(9, 7, 5, 19, 3),
    "conv3x3_s2": lambda: conv_layer(11, 10, 4, 13, 3, stride=2),
    "conv5x3_valid": lambda: conv_layer(8, 9, 3, 7, (5, 3), pads=(0, 0, 0, 0)),
    "pointwise": lambda: conv_layer(6, 5, 17, 23, 1),
    "depthwise": lambda: conv_layer(9, 8, 21, 21, 3, depthwise=True),
    "dense": lambda: dense_layer(37, 29),
}

_MAIN = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef void (*kernel_fn)(const float *, const float *, const float *, float *, float *,
                          int32_t, int32_t);
%(decls)s
static const kernel_fn kernels[] = {%(names)s};
/* why posix_memalign with the exact size: ASan's redzone starts at the last byte asked for */
static float *take(long n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (size_t)(n > 0 ? n : 1) * sizeof(float)) != 0) exit(3);
    if (fread(p, sizeof(float), (size_t)n, stdin) != (size_t)n) exit(4);
    return (float *)p;
}
int main(int argc, char **argv) {
    long nin, nw, nb, nout, nscratch;
    int k = atoi(argv[1]), parts;
    float *in, *w, *b, *out, *scratch;
    if (argc != 2 || scanf("%%ld %%ld %%ld %%ld %%ld %%d\n", &nin, &nw, &nb, &nout, &nscratch,
                           &parts) != 6) return 2;
    in = take(nin); w = take(nw); b = take(nb);
    if (posix_memalign((void **)&out, 64, (size_t)nout * sizeof(float)) != 0) return 5;
    if (posix_memalign((void **)&scratch, 64, (size_t)(nscratch > 0 ? nscratch : 1)
                       * sizeof(float)) != 0) return 5;
    memset(out, 0xff, (size_t)nout * sizeof(float));  /* NaN: an output never written shows */
    kernels[k](in, w, b, out, scratch, 0, parts);
    fwrite(out, sizeof(float), (size_t)nout, stdout);
    free(in); free(w); free(b); free(out); free(scratch);
    return 0;
}
"""


def _jobs(every: bool) -> list[tuple[str, HostKernelConfig]]:
    """(layer, config): every algorithm that applies to each layer. ``every``: its first and
    last micro-kernel, each on scalar code and on this machine's ISA; otherwise one of those
    four, taken in turn (the default run)."""
    jobs = []
    for name, make in LAYERS.items():
        graph, node = make()
        for algo in applicable(layer_shape(node, graph)):
            kernels = KERNELS_FOR[algo]
            options = [(mk, isa) for mk in dict.fromkeys((kernels[0], kernels[-1]))
                       for isa in ("scalar", "auto")]
            if not every:
                options = [options[len(jobs) % len(options)]]
            jobs += [(name, HostKernelConfig(algo, mk, isa=isa)) for mk, isa in options]
    return jobs


def _compile(gens: list[tuple[Generated, str]], tmp_path: Path) -> None:
    """One sanitized program holding every kernel (one gcc call per set of flags)."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for i, (g, _) in enumerate(gens):
        flags = tuple(f for f in compile_flags(g.isa) if f not in ("-O3", "-Ofast"))
        groups[flags].append(f"k{i}.c")
    for flags, files in groups.items():
        subprocess.run(["gcc", *flags, *SANITIZE.split(), f"-I{C_DIR}", "-c", *files],
                       cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["gcc", *SANITIZE.split(), "main.c", *(f"k{i}.o" for i in range(len(gens))),
                    "-lm", "-o", "app"], cwd=tmp_path, check=True, capture_output=True)


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["one_config_per_algorithm", "every_config"])
def test_generated_host_kernels_under_sanitizers(every: bool, tmp_path: Path) -> None:
    jobs = _jobs(every)
    cases = {name: case(*make()) for name, make in LAYERS.items()}
    gens = []
    for i, (name, config) in enumerate(jobs):
        c = cases[name]
        g = generate(c.node, c.graph, config)
        unique = f"{g.name}_k{i}"  # why: one program links every kernel; names must differ
        (tmp_path / f"k{i}.c").write_text(g.source.replace(g.name, unique))
        gens.append((g, unique))
    decls = "\n".join(f"void {u}_run(const float *, const float *, const float *, float *, "
                      "float *, int32_t, int32_t);" for _, u in gens)
    (tmp_path / "main.c").write_text(_MAIN % {"decls": decls,
                                              "names": ", ".join(f"{u}_run" for _, u in gens)})
    _compile(gens, tmp_path)
    for i, ((name, config), (g, _)) in enumerate(zip(jobs, gens, strict=True)):
        c = cases[name]
        x = np.ascontiguousarray(c.x, np.float32)
        head = (f"{x.size} {g.weights.size} {g.bias.size} {c.ref.size} "
                f"{g.plan.scratch_floats} {g.plan.partition_count}\n").encode()
        body = b"".join(np.ascontiguousarray(a, np.float32).tobytes()
                        for a in (x, g.weights, g.bias))
        res = subprocess.run(["./app", str(i)], cwd=tmp_path, input=head + body,
                             capture_output=True, env={**os.environ, **ENV}, timeout=120)
        where = f"{name} {config}"
        assert res.returncode == 0 and not res.stderr, (
            f"{where}: exit {res.returncode}\n{res.stderr.decode(errors='replace')[-3000:]}")
        y = np.frombuffer(res.stdout, np.float32).reshape(c.ref.shape)
        assert_close(y, c.ref)
