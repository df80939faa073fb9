"""A build whose library's model object is deferred (``build_project(later=...)``, used by
``--fuse auto`` while it emulates its candidates) gives the same ELF, map and archive as the
plain build, once completed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import edgenn
from edgenn.backends.cortexm.build import build_project
from edgenn.backends.cortexm.codegen.project import generate
from edgenn.backends.cortexm.targets import get_core

FIXTURE = Path(__file__).parent / "fixtures" / "tflite" / "conv2_int8.tflite"
pytestmark = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                                reason="needs arm-none-eabi-gcc")


def test_a_deferred_library_completes_to_the_plain_build(tmp_path: Path) -> None:
    graph = edgenn.load_model(FIXTURE)
    core = get_core("cortex-m4")
    plain = generate(graph, core, tmp_path / "plain")
    build_project(plain)
    deferred = generate(graph, core, tmp_path / "deferred")
    later: list[Callable[[], None]] = []
    elf = build_project(deferred, later=later)
    assert len(later) == 1
    model_o = tmp_path / "deferred" / "build" / f"{deferred.name}.o"
    assert not model_o.exists()  # the second compile of the model's C is still to come
    # the ELF is final before the library is: the member left out is never linked
    assert elf is not None and elf.read_bytes() == \
        (tmp_path / "plain" / "build" / "model.elf").read_bytes()
    later[0]()
    assert model_o.is_file()
    for rel in ("build/model.elf", "build/model.map", plain.library):
        got, want = tmp_path / "deferred" / rel, tmp_path / "plain" / rel
        assert got.read_bytes() == want.read_bytes(), rel
    # a library-only folder (no hooked copy) has nothing to defer
    lib_only = generate(graph, core, tmp_path / "lib", library_only=True)
    later.clear()
    build_project(lib_only, later=later)
    assert later == [] and (tmp_path / "lib" / lib_only.library).is_file()
