"""The VTA-class accelerator simulator as a compile target (``vta``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.options import option
from edgenn.backends.registry import Backend, register_backend
from edgenn.backends.vta.config import PRESETS
from edgenn.ir import Graph


@dataclass(frozen=True)
class VtaOptions:
    """``preset``: the board; ``schedule``: the GEMM schedule; ``bus_bits``: AXI width."""

    preset: str | None = option(
        "--vta-preset", choices=tuple(PRESETS),
        help="with --target vta: the board (default: zcu102, 333 MHz, 128-bit AXI)")
    schedule: str | None = option(
        "--vta-schedule", metavar="SCHEDULE",
        help="with --target vta: GEMM schedule tiled2, optimized or tall_pipelined (the "
             "default)")
    bus_bits: int | None = option(
        "--vta-bus-bits", type=int, metavar="BITS",
        help="with --target vta: AXI bus width instead of the preset's (64 or 128)")


def _compile(graph: Graph, **options: Any) -> Any:
    from edgenn.backends.vta.executable import compile_vta

    return compile_vta(graph, **options)


register_backend(Backend("vta", VtaOptions, _compile, fusion=False,
                         description="int8 Conv2D / FullyConnected on the VTA simulator",
                         order=20))
