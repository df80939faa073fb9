"""Generated C kernels on this CPU's thread pool as a compile target (``host``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.registry import Backend, register_backend
from edgenn.ir import Graph


@dataclass(frozen=True)
class HostOptions:
    """``threads``, ``schedule`` ("tuned", "default" or a ThreadSchedule), ``db`` (tuning
    database URL), ``emulate_hetero`` (e.g. "1+1:0.43")."""

    threads: int | None = None
    schedule: Any = None
    db: str | None = None
    emulate_hetero: str | None = None


def _compile(graph: Graph, **options: Any) -> Any:
    from edgenn.backends.host.executable import compile_host

    return compile_host(graph, **options)


register_backend(Backend("host", HostOptions, _compile, fusion=False,
                         description="float kernels compiled for this CPU, tuned schedules",
                         order=30))
