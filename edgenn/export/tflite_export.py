"""export_tflite: an IR Graph (float32, int8 or 16x8) -> a TFLite flatbuffer TFLite Micro runs."""

from __future__ import annotations

import os

import numpy as np

from edgenn.errors import UnsupportedOperatorError
from edgenn.export import lowerings  # noqa: F401  (registers the group lowerings)
from edgenn.export.flatbuffer import serialize
from edgenn.export.lowering import Lowering
from edgenn.export.ops import LOWER
from edgenn.ir import Graph
from edgenn.utils import atomic_write_bytes


def export_tflite(graph: Graph, nhwc_io: bool = False) -> bytes:
    """Serialize ``graph`` as a ``.tflite`` flatbuffer (schema 3, one subgraph).

    Activations stay NHWC as inside edgenn. A graph input or output whose ``external_perm``
    declares another layout (an ONNX NCHW input) keeps that layout in the file through a
    TRANSPOSE at the boundary, so the file takes and returns the same arrays as the graph;
    ``nhwc_io=True`` drops those transposes and exposes the NHWC tensors instead.

    Raises ``GraphValidationError`` for an inconsistent graph and
    ``UnsupportedOperatorError`` (naming the node) for an operator TFLite cannot express.
    """
    graph.validate()
    if graph.state:
        # why: the exporter writes one subgraph; resource variables and variable tensors
        # (what would carry the state) are not written yet
        raise UnsupportedOperatorError(f"graph {graph.name!r} keeps state between invocations "
                                       f"({len(graph.state)} variables); exporting stateful "
                                       "graphs to .tflite is not supported")
    lw = Lowering(graph)
    model = lw.model

    for name in graph.inputs:
        t = graph.tensor(name)
        perm = None if nhwc_io else graph.external_perm.get(name)
        if not perm or list(perm) == sorted(perm):
            model.inputs.append(lw.tensor(t))
            continue
        ext = lw.new_tensor(name, graph.external_shape(name), t.dtype, t.quant)
        model.inputs.append(ext)
        internal = lw.new_tensor(f"{name}_nhwc", t.shape, t.dtype, t.quant)
        lw.transpose(ext, internal, [int(p) for p in np.argsort(perm)],
                     f"{model.tensors[internal].name}_perm")
        lw.ir_to_tfl[name] = internal

    for node in graph.nodes:
        lw.node = node
        fn = LOWER.get(node.op)
        if fn is None:
            raise lw.unsupported("no TFLite builtin operator for it")
        fn(lw)
    lw.node = None

    for name in graph.outputs:
        t = graph.tensor(name)
        idx = lw.tensor(t)
        perm = None if nhwc_io else graph.external_perm.get(name)
        if not perm or list(perm) == sorted(perm):
            model.outputs.append(idx)
            continue
        model.rename(idx, model.unique_name(f"{name}_nhwc"))
        ext = lw.new_tensor(name, graph.external_shape(name), t.dtype, t.quant)
        lw.transpose(idx, ext, perm, f"{model.tensors[ext].name}_perm")
        model.outputs.append(ext)
    return serialize(model)


def save_tflite(graph: Graph, path: str | os.PathLike[str], nhwc_io: bool = False) -> None:
    """Export ``graph`` and write it to ``path`` atomically."""
    atomic_write_bytes(path, export_tflite(graph, nhwc_io=nhwc_io))
