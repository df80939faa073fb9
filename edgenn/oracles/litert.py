"""LiteRT (``ai-edge-litert``) as the oracle for ``.tflite`` files TensorFlow Lite Micro does
not run: float16 weights (FLOAT16 constants behind a DEQUANTIZE, the converter's float16
optimization; TFLite Micro's DEQUANTIZE takes integers only).

Its builtin reference kernels run, not the XNNPACK delegate, so the arithmetic is TFLite's own.
``ai-edge-litert`` is an optional (test) dependency, imported only when these functions run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.errors import EdgennError, ShapeError
from edgenn.oracles.tflm import OracleUnavailableError


def has_float16_tensors(model_bytes: bytes) -> bool:
    """Whether any subgraph of the flatbuffer holds a FLOAT16 tensor (the file has been
    imported by then: a corrupt one was already reported in one line)."""
    import tflite

    model = tflite.Model.GetRootAsModel(bytes(model_bytes), 0)
    return any(sub.Tensors(k).Type() == tflite.TensorType.FLOAT16
               for sub in (model.Subgraphs(i) for i in range(model.SubgraphsLength()))
               for k in range(sub.TensorsLength()))


def litert_interpreter(model_bytes: bytes) -> Any:
    """LiteRT's interpreter on its builtin reference kernels, tensors allocated."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise OracleUnavailableError(
            "LiteRT is not installed: pip install ai-edge-litert (or edgenn[test])") from None
    try:
        interp = Interpreter(model_content=bytes(model_bytes), experimental_op_resolver_type=(
            OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
        interp.allocate_tensors()
    except (RuntimeError, ValueError) as err:
        raise EdgennError(f"LiteRT cannot load the model: {err}") from None
    return interp


def litert_run(model_bytes: bytes, *xs: np.ndarray, stateful: bool = False) -> list[np.ndarray]:
    """``N`` inferences, one per row ``x[N, *declared shape]`` of each input, as
    ``oracles.tflm.tflm_run`` takes them; each row from the initial state unless
    ``stateful`` (consecutive invocations). Returns ``[N, *declared shape]`` per output."""
    interp = litert_interpreter(model_bytes)
    ins, outs = interp.get_input_details(), interp.get_output_details()
    if len(xs) != len(ins):
        raise ShapeError(f"the model takes {len(ins)} inputs, got {len(xs)}")
    n = len(xs[0])
    for det, x in zip(ins, xs, strict=True):
        want = tuple(int(d) for d in det["shape"])
        if x.ndim < 1 or len(x) != n or x.dtype != det["dtype"] or tuple(x.shape[1:]) != want:
            raise ShapeError(f"LiteRT input {det['name']!r}: expected "
                             f"{np.dtype(det['dtype']).name}[N, {', '.join(map(str, want))}], "
                             f"got {x.dtype.name}{list(x.shape)}")
    rows: list[list[np.ndarray]] = []
    for k in range(n):
        if not stateful:
            interp.reset_all_variables()
        for det, x in zip(ins, xs, strict=True):
            interp.set_tensor(det["index"], np.ascontiguousarray(x[k]))
        interp.invoke()
        rows.append([np.array(interp.get_tensor(d["index"])) for d in outs])
    return [np.stack([r[j] for r in rows]) for j in range(len(outs))]
