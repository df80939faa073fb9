"""The VTA-class accelerator simulator as a compile target (``vta``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.registry import Backend, register_backend
from edgenn.ir import Graph


@dataclass(frozen=True)
class VtaOptions:
    """``preset``: the board; ``schedule``: the GEMM schedule; ``bus_bits``: AXI width."""

    preset: str | None = None
    schedule: str | None = None
    bus_bits: int | None = None


def _compile(graph: Graph, **options: Any) -> Any:
    from edgenn.backends.vta.executable import compile_vta

    return compile_vta(graph, **options)


register_backend(Backend("vta", VtaOptions, _compile, fusion=False,
                         description="int8 Conv2D / FullyConnected on the VTA simulator",
                         order=20))
