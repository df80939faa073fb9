"""The record of the float32 GRU (ONNX's forward GRU, gate order z, r, h): its weights
transposed for ``x @ w`` per gate, the input and recurrent biases kept apart
(``linear_before_reset`` applies the reset gate after the recurrent bias) and the gate clip.
The reference layer (``backends/ref/kernels/gru.py``) and the Cortex-M kernel take the same
record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import const_data


@dataclass(frozen=True)
class GruParams:
    """``w_t`` / ``r_t``: [I, H] / [H, H] per gate (z, r, h); ``wb`` / ``rb``: [H] per gate
    (zeros when omitted); ``clip``: ONNX's ``clip`` on each pre-activation (0: none)."""

    time_major: bool
    linear_before_reset: bool
    clip: float
    hidden: int
    w_t: tuple[np.ndarray, ...]
    r_t: tuple[np.ndarray, ...]
    wb: tuple[np.ndarray, ...]
    rb: tuple[np.ndarray, ...]
    extra_output: bool


def _input(node: Node, graph: Graph, index: int) -> np.ndarray | None:
    name = node.inputs[index] if index < len(node.inputs) else ""
    return const_data(node, graph.tensor(name) if name else None)


def prepare_gru(node: Node, graph: Graph) -> GruParams:
    """The record of a float32 GRU node (one error for other element types)."""
    x = graph.tensor(node.inputs[0])
    if x.dtype is not DType.FLOAT32:
        raise UnsupportedOperatorError(f"{node}: GRU needs float32 input, got {x.dtype.value}")
    w, r = _input(node, graph, 1), _input(node, graph, 2)
    assert w is not None and r is not None
    hidden = w.shape[0] // 3
    zeros = np.zeros(3 * hidden, np.float32)
    wb, rb = _input(node, graph, 3), _input(node, graph, 4)
    return GruParams(
        time_major=bool(node.attr("time_major")),
        linear_before_reset=bool(node.attr("linear_before_reset", 0)),
        clip=float(node.attr("gate_clip", 0.0) or 0.0),
        hidden=hidden,
        w_t=tuple(np.ascontiguousarray(g.T) for g in np.split(w, 3)),
        r_t=tuple(np.ascontiguousarray(g.T) for g in np.split(r, 3)),
        wb=tuple(np.split(zeros if wb is None else wb, 3)),
        rb=tuple(np.split(zeros if rb is None else rb, 3)),
        extra_output=len(node.outputs) == 2)
