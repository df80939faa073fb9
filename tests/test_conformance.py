"""Operator conformance: every case of ``tests/conformance/cases`` against TFLite Micro on the
reference runtime, and every case the Cortex-M4 backend claims in one firmware per operator.

The default run checks every case on ref, every float32 case on host, and every operator on
cortex-m4; ``-m slow`` adds the cortex-m0plus and cortex-m7 builds.
"""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("tflite_micro")

from tests.conformance.cases import all_cases, by_op  # noqa: E402
from tests.conformance.run import check_cortexm, check_host, check_ref, claimed  # noqa: E402

CASES = all_cases()
OPS = sorted(by_op())
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_ref_matches_tflm(case):
    assert check_ref(case) == []


FLOAT = [c for c in CASES if c.dtypes == "float32"]


@pytest.mark.parametrize("case", FLOAT, ids=[c.id for c in FLOAT])
def test_host_matches_tflm(case):
    assert check_host(case) == []


@needs_arm
@pytest.mark.parametrize("op", OPS)
def test_cortex_m4_matches_tflm(op):
    cases, _ = claimed(by_op()[op], "cortex-m4")
    if not cases:
        pytest.skip(f"cortex-m4 claims no {op} case")
    assert check_cortexm(cases, "cortex-m4") == []


@pytest.mark.slow
@needs_arm
@pytest.mark.parametrize("target", ["cortex-m0plus", "cortex-m7"])
@pytest.mark.parametrize("op", OPS)
def test_other_cores_match_tflm(op, target):
    cases, _ = claimed(by_op()[op], target)
    if not cases:
        pytest.skip(f"{target} claims no {op} case")
    assert check_cortexm(cases, target) == []
