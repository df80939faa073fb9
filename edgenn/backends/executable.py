"""``Executable``: the one protocol every target's compiled model follows.

``edgenn.api.compile_model`` returns one of these whatever the target; the CLI's ``run``,
``eval``, ``validate`` and ``bench`` use only this surface, so adding a target means
registering a backend (``registry.py``) whose compile function returns an object with these
members; nothing in the CLI branches on the target's name.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from edgenn.backends.bench_report import BenchReport, BenchSettings
from edgenn.ir import Graph


@runtime_checkable
class Executable(Protocol):
    """A graph compiled for one target."""

    graph: Graph  # the graph as built (after fusion, when asked for): its nodes are the layers

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """Run inputs as the model file declares them (shape ``D``, its layout and dtype), read
        by the one rule of ``edgenn.ir.batch``: an array of shape ``D`` is one sample, ``[N,
        *D]`` a batch of N, and ``[N, *D[1:]]`` a batch when ``D`` starts with 1. The graph
        outputs come back in the same form (a sample without a batch axis). Implementations
        decorate their ``run`` with ``edgenn.ir.batch.takes_batch``."""
        ...

    def sizes(self) -> dict[str, int]:
        """Memory in bytes: always ``arena``; ``flash`` / ``ram`` where a build has them."""
        ...

    def bench(self, *inputs: np.ndarray,
              settings: BenchSettings | None = None) -> BenchReport[Any]:
        """One benchmark on the first sample of each input (read by the same rule)."""
        ...
