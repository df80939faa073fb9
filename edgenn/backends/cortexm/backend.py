"""Every Cortex-M core as a compile target (``cortex-m4``, ``cortex-m7``, ``cortex-m0plus``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from edgenn.backends.cortexm.targets import CORES
from edgenn.backends.registry import Backend, register_backend
from edgenn.ir import Graph


@dataclass(frozen=True)
class CortexMOptions:
    """The firmware build (``compile_cortexm``'s keyword arguments; None: its default)."""

    out_dir: Any = None
    ram_kb: int | None = None
    opt: str | None = None
    stack_bytes: int | None = None
    skippable: bool | None = None
    skip_configs: Iterable[Iterable[str]] | None = None
    skip_copy: bool | None = None
    flash_kb: float | None = None
    widen: str | None = None
    compact: bool | None = None
    name: str | None = None
    board: str | None = None
    library_only: bool | None = None
    arena: str | None = None
    emulator: str | None = None


def _compile(core: str, graph: Graph, **options: Any) -> Any:
    from edgenn.backends.cortexm.executable import compile_cortexm

    return compile_cortexm(graph, core=core, **options)


for _i, _core in enumerate(CORES):
    register_backend(Backend(_core, CortexMOptions, partial(_compile, _core),
                             skip_in_firmware=True,
                             description=f"bare-metal C for a {_core}, emulated",
                             order=10 + _i))
