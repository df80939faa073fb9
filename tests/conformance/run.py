"""Run conformance cases on TFLite Micro and on edgenn backends, and compare.

Quantized outputs must match TFLite Micro exactly (zero mismatches); float32 outputs within
the case's absolute tolerance plus 1e-5 relative.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.api import compile_model
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import CORES
from edgenn.errors import EdgennError
from edgenn.frontends.tflite import load_tflite
from edgenn.ir import Graph
from edgenn.oracles.tflm import tflm_run
from tests.conformance.spec import Case, model_bytes


def compare(case: Case, got: Sequence[np.ndarray], want: Sequence[np.ndarray],
            where: str) -> list[str]:
    """One message per output that differs (empty when the case conforms)."""
    problems = []
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            problems.append(f"{case.id} on {where}: output {j} is {g.dtype}{list(g.shape)}, "
                            f"TFLM gives {w.dtype}{list(w.shape)}")
        elif w.dtype.kind == "f":
            bad = ~np.isclose(g, w, rtol=1e-5, atol=case.atol, equal_nan=True)
            if bad.any():
                problems.append(f"{case.id} on {where}: output {j}: {int(bad.sum())} of "
                                f"{bad.size} values differ (max abs diff "
                                f"{float(np.max(np.abs(g - w))):.3g})")
        else:
            diff = g.astype(np.int64) != w.astype(np.int64)
            if diff.any():
                problems.append(f"{case.id} on {where}: output {j}: {int(diff.sum())} of "
                                f"{diff.size} values differ (max abs diff "
                                f"{int(np.max(np.abs(g.astype(np.int64) - w))):d})")
    return problems


def check_ref(case: Case, n: int = 32) -> list[str]:
    data = model_bytes([case])
    xs = case.sample(n)
    want = tflm_run(data, *xs)
    graph = load_tflite(data, name=case.id)
    got = compile_model(graph, "ref").run(*xs)
    return compare(case, got, want, "ref")


def claims(graph: Graph, target: str) -> bool:
    """True when ``target`` has a kernel for every node of ``graph``."""
    if target == "ref":
        return True
    core = CORES[target]
    try:
        for node in graph.nodes:
            select_kernel(node, graph, core)
    except EdgennError:
        return False
    return True


def claimed(cases: Sequence[Case], target: str) -> tuple[list[Case], list[Case]]:
    """(cases whose every imported node ``target`` claims, the others)."""
    yes, no = [], []
    for case in cases:
        graph = load_tflite(model_bytes([case]), name=case.id)
        (yes if claims(graph, target) else no).append(case)
    return yes, no


def check_cortexm(cases: Sequence[Case], target: str = "cortex-m4", n: int = 6) -> list[str]:
    """All ``cases`` in one firmware: one build, ``n`` samples each, compared per output."""
    data = model_bytes(cases)
    xs = [x for case in cases for x in case.sample(n)]
    want = tflm_run(data, *xs)
    exe = compile_model(load_tflite(data, name="conformance"), target)
    got = exe.run(*xs)
    problems: list[str] = []
    k = 0
    for case in cases:
        m = len(case.outputs)
        problems += compare(case, got[k:k + m], want[k:k + m], target)
        k += m
    return problems


def check_host(case: Case, n: int = 8) -> list[str]:
    """A float32 case on the host backend (generated C for convolution and dense layers)."""
    data = model_bytes([case])
    xs = case.sample(n)
    want = tflm_run(data, *xs)
    got = compile_model(load_tflite(data, name=case.id), "host", threads=1).run(*xs)
    return compare(case, got, want, "host")
