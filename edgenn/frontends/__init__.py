"""Model importers: each parses a file into the IR, one function per operator."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgenn.errors import DataError, ModelFormatError
from edgenn.ir import Graph

_TFLITE_IDENT = b"TFL3"


def load(path: str | os.PathLike[str],
         input_shapes: Mapping[str, Sequence[int]] | None = None,
         input_values: Mapping[str, Any] | None = None) -> Graph:
    """Load a ``.onnx`` or ``.tflite`` model file into the IR (format sniffed from the bytes).
    ``input_shapes`` / ``input_values``: see ``edgenn.api.load_model``."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise ModelFormatError(f"{p}: cannot read model file ({err.strerror})") from None
    if len(data) >= 8 and data[4:8] == _TFLITE_IDENT:
        from edgenn.frontends.tflite import load_tflite

        if input_shapes or input_values:
            raise DataError(f"{p}: fixing input shapes or values is supported for ONNX "
                             "models (a TFLite file declares its shapes)")
        return load_tflite(data, name=str(p))
    if p.suffix.lower() == ".tflite":
        raise ModelFormatError(f"{p}: not a TFLite flatbuffer (missing 'TFL3' identifier)")
    from edgenn.frontends.onnx import load_onnx

    return load_onnx(data, name=str(p), input_shapes=input_shapes, input_values=input_values)
