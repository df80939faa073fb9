"""The state area: where a stateful graph keeps its ``StateVar`` values between invocations.

The state must survive from one invocation to the next, so it cannot share bytes with the
planned buffers (they are reused within an invocation). It sits right after them, in the
same arena: each variable's ``read`` tensor at an aligned offset of its own.
"""

from __future__ import annotations

from edgenn.ir import Graph
from edgenn.memory.plan import DEFAULT_ALIGNMENT


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def state_offsets(graph: Graph, base: int,
                  alignment: int = DEFAULT_ALIGNMENT) -> tuple[dict[str, int], int]:
    """({state read tensor: offset}, end offset) of the state area starting at ``base``
    (rounded up to ``alignment``)."""
    offsets: dict[str, int] = {}
    at = _align(base, alignment)
    for s in graph.state:
        offsets[s.read] = at
        at = _align(at + graph.tensor(s.read).nbytes, alignment)
    return offsets, at


def state_area_bytes(graph: Graph, alignment: int = DEFAULT_ALIGNMENT) -> int:
    """Bytes of the state area (each variable rounded up to ``alignment``)."""
    return state_offsets(graph, 0, alignment)[1]
