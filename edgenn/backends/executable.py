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

    def run(self, *inputs: np.ndarray, stateful: bool = False) -> list[np.ndarray]:
        """Run inputs as the model file declares them (shape ``D``, its layout and dtype), read
        by the one rule of ``edgenn.ir.batch``: an array of shape ``D`` is one sample, ``[N,
        *D]`` a batch of N, and ``[N, *D[1:]]`` a batch when ``D`` starts with 1. The graph
        outputs come back in the same form (a sample without a batch axis). Implementations
        decorate their ``run`` with ``edgenn.ir.batch.takes_batch``.

        A stateful graph (``graph.state``: streaming buffers, LSTM / SVDF state): with
        ``stateful=False`` every sample starts from a reset state and the kept state is not
        changed; with ``stateful=True`` the samples are consecutive invocations continuing
        from the kept state, which then holds the state after the last one. Targets that
        cannot keep state refuse ``stateful=True`` for stateful graphs.
        """
        ...

    def reset_state(self) -> None:
        """Set the kept state to its initial values (a no-op without state)."""
        ...

    def sizes(self) -> dict[str, int]:
        """Memory in bytes: always ``arena`` (the state area included) and ``state`` (bytes
        kept between invocations); ``flash`` / ``ram`` where a build has them."""
        ...

    def bench(self, *inputs: np.ndarray, settings: BenchSettings | None = None,
              stateful: bool = False) -> BenchReport[Any]:
        """One benchmark on the first sample of each input (read by the same rule); a
        stateful graph from a reset state, or with ``stateful`` the last sample after the
        others as consecutive invocations."""
        ...


def refuse_state(graph: Graph, target: str, stateful: bool = True) -> None:
    """One error for a target that keeps no state between invocations, asked to run a
    stateful graph with ``stateful`` (its rows as consecutive invocations)."""
    if graph.state and stateful:
        from edgenn.errors import UnsupportedOperatorError

        raise UnsupportedOperatorError(
            f"model {graph.name!r} keeps state between invocations ({len(graph.state)} "
            f"variables, {graph.state_bytes()} bytes); the {target} target runs every row "
            "from the initial state only (stateful runs: ref or cortex-m)")
