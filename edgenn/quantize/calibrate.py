"""Run the float graph over a calibration set and collect value statistics per tensor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgenn.errors import ShapeError
from edgenn.ir import DType, Graph
from edgenn.quantize.observers import Observer


def calibration_inputs(
    graph: Graph, calibration: np.ndarray | Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Check the calibration arrays against the graph inputs; one array per input, float32
    (or the input's own type for an integer input such as Gather indices).

    A single array is accepted for a one-input graph. Shapes are ``[N, *external shape[1:]]``:
    the layout the model file declares (NCHW for an ONNX image model).
    """
    arrays = [calibration] if isinstance(calibration, np.ndarray) else list(calibration)
    if len(arrays) != len(graph.inputs):
        raise ShapeError(
            f"model {graph.name!r} takes {len(graph.inputs)} inputs, "
            f"got {len(arrays)} calibration arrays"
        )
    result = []
    for name, arr in zip(graph.inputs, arrays, strict=True):
        arr = np.asarray(arr)
        ext = graph.external_shape(name)
        expected = "[N, " + ", ".join(map(str, ext[1:])) + "]"
        if arr.ndim != len(ext) or tuple(arr.shape[1:]) != tuple(ext[1:]) or arr.shape[0] == 0:
            raise ShapeError(
                f"calibration data for input {name!r}: expected shape {expected}, "
                f"got {list(arr.shape)}"
            )
        dtype = graph.tensor(name).dtype
        if dtype is not DType.FLOAT32:
            # an integer input (Gather indices) is fed as it is
            if not np.issubdtype(arr.dtype, np.integer):
                raise ShapeError(f"calibration data for input {name!r}: expected integer "
                                 f"({dtype.value}) data, got {arr.dtype.name}")
            result.append(arr.astype(dtype.numpy, copy=False))
            continue
        if not np.issubdtype(arr.dtype, np.floating):
            raise ShapeError(
                f"calibration data for input {name!r}: expected float data, got {arr.dtype.name}"
            )
        result.append(arr.astype(np.float32, copy=False))
    return result


def collect(
    graph: Graph,
    calibration: np.ndarray | Sequence[np.ndarray],
    observers: dict[str, Observer],
    batch_size: int = 64,
) -> dict[str, Observer]:
    """Feed the calibration set through the float graph in batches, updating ``observers``.

    ``observers`` maps tensor names (internal, NHWC values) to the Observer that should see
    them; tensors without an observer are not recorded.
    """
    from edgenn.backends.ref import compile_ref  # local: the runtime imports every kernel

    arrays = calibration_inputs(graph, calibration)
    exe = compile_ref(graph)
    n = arrays[0].shape[0]
    for start in range(0, n, batch_size):
        batch = [a[start : start + batch_size] for a in arrays]
        exe.run(*batch, keep=True)
        values: dict[str, Any] = exe.values
        for name, obs in observers.items():
            if name in values:
                obs.update(values[name])
    return observers
