"""Generated C under AddressSanitizer and UndefinedBehaviorSanitizer, on the host.

Every conformance case (tests/conformance/cases) that cortex-m0plus claims is built into
one portable-kernel library (cases side by side, as the conformance suite does per operator),
compiled with the host gcc and ``-fsanitize=address,undefined -fno-sanitize-recover=all``,
run on each case's seeded inputs, and compared with the reference runtime: integer outputs
byte for byte, float32 ones within the conformance suite's tolerance.
Any sanitizer report fails the test (the program stops at the first one and prints it).
The default run takes a share of the cases (every third of each operator, one build); the
rest run under ``-m slow``.
"""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from edgenn.api import compile_model
from edgenn.frontends.tflite import load_tflite
from tests.conformance.cases import all_cases
from tests.conformance.run import claimed, compare
from tests.conformance.spec import Case, model_bytes
from tests.sanitizer_build import ENV, SANITIZE, build, host_gcc, run

pytestmark = pytest.mark.skipif(host_gcc() is None, reason="gcc is not installed")

N = 4  # samples per case
STRIDE = 3  # the default run takes every STRIDE-th case of each operator


def _split() -> tuple[list[Case], list[Case]]:
    """(the default run's cases, the slow run's), both claimed by cortex-m0plus."""
    by_op: dict[str, list[Case]] = defaultdict(list)
    for case in claimed(all_cases(), "cortex-m0plus")[0]:
        by_op[case.op].append(case)
    fast = [c for cases in by_op.values() for c in cases[::STRIDE]]
    slow = [c for cases in by_op.values() for i, c in enumerate(cases) if i % STRIDE]
    return fast, slow


def _check(cases: list[Case], tmp_path: Path) -> None:
    data = model_bytes(cases)
    graph = load_tflite(data, name="sanitized")
    xs = [x for case in cases for x in case.sample(N)]
    exe, manifest = build(graph, tmp_path)
    got = run(exe, manifest, xs)
    want = compile_model(graph, "ref").run(*xs)
    k = 0
    problems = []
    for case in cases:
        m = len(case.outputs)
        mine = [got[j].view(want[j].dtype).reshape(want[j].shape) for j in range(k, k + m)]
        # why compare(): integer outputs byte for byte; float32 ones (LSTM, SVDF: libm's
        # expf / tanhf against numpy's) within the suite's tolerance
        problems += compare(case, mine, want[k:k + m], "host gcc + ASan/UBSan")
        k += m
    assert not problems, "\n".join(problems)


def test_conformance_cases_under_sanitizers(tmp_path: Path) -> None:
    _check(_split()[0], tmp_path)


@pytest.mark.slow
def test_remaining_conformance_cases_under_sanitizers(tmp_path: Path) -> None:
    _check(_split()[1], tmp_path)


@pytest.mark.parametrize(("body", "report"), [
    ("uint8_t *p = (uint8_t *)malloc(16); p[16] = 1; free(p);", "heap-buffer-overflow"),
    ("volatile int32_t a = INT32_MAX; int32_t b = a + 1; (void)b;", "signed integer overflow"),
])
def test_the_sanitizers_catch_what_they_promise(body: str, report: str, tmp_path: Path) -> None:
    """The flags really stop a program at an overflow (so the tests above can fail)."""
    (tmp_path / "bad.c").write_text("#include <stdint.h>\n#include <stdlib.h>\n"
                                    f"int main(void) {{ {body} return 0; }}\n")
    subprocess.run(["gcc", *SANITIZE.split(), "bad.c", "-o", "bad"], cwd=tmp_path, check=True)
    res = subprocess.run(["./bad"], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, **ENV})
    assert res.returncode != 0 and report in res.stderr
