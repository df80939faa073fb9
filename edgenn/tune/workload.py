"""The workload key: what a tuning record is about (operator, shapes, dtypes, attributes).

Two layers with the same key run the same code at the same speed, whatever their weights, so
they share tuning records (TVM's workload signature; design.md "Tuning"). The key is readable,
because people look at studies in the database: ``Conv2D(float32[1,56,56,64],
float32[64,3,3,64],float32[64])->float32[1,56,56,64]{activation=relu,...}``.
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Any

import numpy as np

from edgenn.ir import Graph, Node

# optuna's study_name column holds 512 characters; "@" + the target fingerprint follows the key.
MAX_KEY_CHARS = 400


def workload_key(node: Node, graph: Graph) -> str:
    """The key of ``node`` in ``graph``: op, input/output shapes and dtypes, attributes."""
    inputs = ",".join(_tensor_sig(graph, name) if name else "none" for name in node.inputs)
    outputs = ",".join(_tensor_sig(graph, name) for name in node.outputs)
    attrs = ",".join(f"{k}={_attr(v)}" for k, v in sorted(node.attrs.items()))
    key = f"{node.op}({inputs})->{outputs}{{{attrs}}}"
    if len(key) > MAX_KEY_CHARS:  # why: keep the op readable, keep the rest unique
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        key = f"{key[:MAX_KEY_CHARS - 30]}..#{digest}"
    return key


def _tensor_sig(graph: Graph, name: str) -> str:
    t = graph.tensor(name)
    return f"{t.dtype.value}[{','.join(map(str, t.shape))}]"


def _attr(value: Any) -> str:
    """A canonical text form of an attribute value (never of weights: those are tensors)."""
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool | int | str) or value is None:
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "x".join(_attr(v) for v in value)
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)}#{hashlib.sha256(value.tobytes()).hexdigest()[:12]}"
    if isinstance(value, dict):
        return "{" + ";".join(f"{k}:{_attr(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, Node):  # e.g. the members of a fused chain: op and attributes
        attrs = ",".join(f"{k}={_attr(v)}" for k, v in sorted(value.attrs.items()))
        return f"<{value.op}{{{attrs}}}>"
    return f"{type(value).__name__}#{hashlib.sha256(repr(value).encode()).hexdigest()[:12]}"
