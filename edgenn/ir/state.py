"""State kept from one invocation to the next: ``StateVar``.

A stateful model (a streaming model's ring buffers in TFLite resource variables, the hidden
and cell state of an LSTM, an SVDF's memory of past features) is still a pure dataflow graph:
each state variable's value at the start of an invocation is the tensor ``read`` (defined
before the first node, like a graph input), and its value at the end is the tensor ``write``
(computed by the nodes, like a graph output). A runtime keeps ``write`` and feeds it as
``read`` to the next invocation; a reset sets it to ``init``. ``write == read`` is a state
that no node changes (it keeps its initial value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class StateVar:
    """One state variable: ``name`` (the model file's, e.g. a resource's shared name), the
    tensors ``read`` and ``write``, and ``init`` (the value after a reset, the ``read``
    tensor's shape and element type)."""

    name: str
    read: str
    write: str
    init: np.ndarray

    def __post_init__(self) -> None:
        arr = np.ascontiguousarray(self.init)
        arr.setflags(write=False)
        object.__setattr__(self, "init", arr)

    def renamed(self, r: dict[str, str]) -> StateVar:
        return StateVar(self.name, r.get(self.read, self.read), r.get(self.write, self.write),
                        self.init)
