"""TFLite Micro's own integration tests (the SEANet set, 127 single-operator int16 / int8
models with their inputs and golden outputs) on ref and on cortex-m4.

The data ships outside the repository: ``../shared/tflm_integration_tests/seanet/`` beside the
checkout (``EDGENN_TFLM_INTEGRATION_TESTS`` names another folder); its README says where it
comes from. The module is skipped, saying so, when the folder is absent.

Two oracles, both independent of edgenn:

* the golden CSVs. TFLite Micro's harness (``integration_tests.cc`` in each folder) accepts
  its outputs within 1 of them (``EXPECT_NEAR(golden, output, 1)``: the goldens are the
  TFLite interpreter's), and the installed TFLite Micro is one step off on 4 int16
  LEAKY_RELU cases (it computes the prepare's multipliers in double, TFLite in float);
* the installed TFLite Micro Python runtime, run on the same inputs: edgenn must equal it
  exactly, and so equal the golden exactly wherever TFLite Micro does.

Inputs are the CSVs reshaped to each input's declared shape (some have no batch axis). Every
case runs on ref; on cortex-m4 one case per operator family runs by default and the whole set
with ``-m slow``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import compile_model, load_model
from edgenn.ir import Graph

ROOT = Path(os.environ.get("EDGENN_TFLM_INTEGRATION_TESTS")
            or Path(__file__).resolve().parents[2] / "shared" / "tflm_integration_tests")
SEANET = ROOT / "seanet"
ARENA = 4 << 20  # why fixed and large: the runtime's default (10x the file) is too small here


@dataclass(frozen=True)
class IntegrationCase:
    family: str
    model: Path

    @property
    def id(self) -> str:
        return self.model.stem

    def csv(self, pattern: str) -> np.ndarray:
        (path,) = self.model.parent.glob(f"{self.id}_{pattern}_*.csv")
        return np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=1).reshape(-1)

    def inputs(self, graph: Graph) -> list[np.ndarray]:
        """The CSV inputs in the model's declared shapes and types."""
        out = []
        for i, name in enumerate(graph.inputs):
            t = graph.tensor(name)
            out.append(self.csv(f"input{i}").reshape(graph.external_shape(name))
                       .astype(t.dtype.numpy))
        return out

    @property
    def golden(self) -> np.ndarray:
        return self.csv("golden")


def _cases() -> list[IntegrationCase]:
    if not SEANET.is_dir():
        return []
    def order(p: Path) -> tuple[str, int]:
        return p.parent.name, int(p.stem[len(p.parent.name):])
    return [IntegrationCase(p.parent.name, p) for p in sorted(SEANET.glob("*/*.tflite"),
                                                               key=order)]


CASES = _cases()
pytestmark = pytest.mark.skipif(not CASES, reason=f"TFLite Micro's integration tests are "
                                f"not at {SEANET} (set EDGENN_TFLM_INTEGRATION_TESTS)")
# one case per operator family, the lowest-numbered (cortex-m4 in the default run)
FIRST = {c.family: c for c in reversed(CASES)}
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def tflm_outputs(case: IntegrationCase, xs: list[np.ndarray]) -> np.ndarray:
    runtime = pytest.importorskip("tflite_micro").runtime
    interp = runtime.Interpreter.from_bytes(case.model.read_bytes(), arena_size=ARENA)
    for i, x in enumerate(xs):
        interp.set_input(x, i)
    interp.invoke()
    return np.asarray(interp.get_output(0)).reshape(-1).astype(np.int64)


def check(case: IntegrationCase, target: str) -> None:
    graph = load_model(case.model)
    xs = case.inputs(graph)
    got = np.asarray(compile_model(graph, target).run(*xs)[0]).reshape(-1).astype(np.int64)
    want, golden = tflm_outputs(case, xs), case.golden
    assert got.shape == golden.shape
    off = int(np.count_nonzero(got != want))
    assert off == 0, f"{case.id} on {target}: {off} of {got.size} values differ from TFLM"
    # TFLite Micro's own acceptance of its goldens (see the module docstring)
    assert int(np.max(np.abs(got - golden))) <= 1, case.id


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_ref(case: IntegrationCase) -> None:
    check(case, "ref")


def _cortexm(cases: list[IntegrationCase]) -> list:
    return [pytest.param(case, id=case.id, marks=[needs_arm]) for case in cases]


@pytest.mark.parametrize("case", _cortexm(list(FIRST.values())))
def test_cortex_m4_one_per_family(case: IntegrationCase) -> None:
    check(case, "cortex-m4")


@pytest.mark.slow
@pytest.mark.parametrize("case", _cortexm([c for c in CASES if FIRST[c.family] is not c]))
def test_cortex_m4_all(case: IntegrationCase) -> None:
    check(case, "cortex-m4")
