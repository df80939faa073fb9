"""Fixing an ONNX model's graph inputs before import: the dynamic (symbolic) dimensions of an
input (``input_shapes``), or an input's whole value (``input_values``, which turns it into an
initializer, so that what depends only on it, such as an ``If`` on a sample rate, is folded).

Done on the ModelProto before ONNX shape inference, so that inference (and its data
propagation through Shape / Gather / Concat) sees the fixed shapes too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, ValueInfoProto, helper, numpy_helper

from edgenn.errors import DataError


def fix_inputs(model: ModelProto, file: str, shapes: Mapping[str, Sequence[int]] | None,
               values: Mapping[str, Any] | None) -> None:
    """Apply ``shapes`` and ``values`` to ``model`` in place; one-line errors for a name the
    model does not take, a rank that differs or a dimension the file already fixes otherwise."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    declared = {vi.name: vi for vi in g.input if vi.name not in inits}
    for what, given in (("--input-shape", shapes or {}), ("--input-value", values or {})):
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise DataError(f"{file}: {what} {unknown[0]!r}: the model's inputs are "
                            f"{list(declared)}")
    for name, shape in (shapes or {}).items():
        _set_shape(declared[name], [int(d) for d in shape], file)
    for name, value in (values or {}).items():
        vi = declared[name]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        data = np.asarray(value, dtype)
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in vi.type.tensor_type.shape.dim]
        if data.ndim != len(dims):
            if data.size != 1 or any(d is None for d in dims):
                raise DataError(f"{file}: --input-value {name!r}: a value of shape "
                                f"{list(data.shape)} for an input of shape {_shown(vi)}")
            fixed = [int(d) for d in dims if d is not None]
            data = np.full(fixed, data.reshape(()), dtype)  # a scalar fills a fixed shape
        _set_shape(vi, list(data.shape), file, what="--input-value")
        g.initializer.append(numpy_helper.from_array(data, name))
        g.input.remove(vi)


def _set_shape(vi: ValueInfoProto, shape: list[int], file: str,
               what: str = "--input-shape") -> None:
    dims = vi.type.tensor_type.shape.dim
    if vi.type.tensor_type.elem_type == TensorProto.UNDEFINED or len(dims) != len(shape):
        raise DataError(f"{file}: {what} {vi.name!r}: shape {shape}, the input is declared "
                        f"{_shown(vi)} (rank {len(dims)})")
    for axis, (d, n) in enumerate(zip(dims, shape, strict=True)):
        if n < 1 or (d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != n):
            raise DataError(f"{file}: {what} {vi.name!r}: dimension {axis} is {n}, the input "
                            f"is declared {_shown(vi)}")
        d.dim_value = n  # why: also drops a dim_param (the oneof)


def _shown(vi: ValueInfoProto) -> str:
    return "[" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else
                           (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim) + "]"


def assumed_ones(model: ModelProto) -> list[str]:
    """The dynamic input dimensions that import takes as 1 (for error messages)."""
    inits = {i.name for i in model.graph.initializer}
    return [f"{vi.name}[{axis}]" + (f" ({d.dim_param})" if d.dim_param else "")
            for vi in model.graph.input if vi.name not in inits
            for axis, d in enumerate(vi.type.tensor_type.shape.dim)
            if not (d.HasField("dim_value") and d.dim_value > 0)]
