"""TFLite's schema enums and their IR counterparts: one table each, read in both directions.

The TFLite importer maps a file's codes to IR values with these tables and the exporter maps
IR values back to codes with the same ones, so the two cannot drift apart. The codes are the
``tflite`` package's (generated from TFLite's ``schema.fbs``) and are never written here as
numbers.
"""

from __future__ import annotations

import tflite

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Activation

# Builtin operator codes by name: ``OP.CONV_2D``.
OP = tflite.BuiltinOperator

# IR element type -> tflite.TensorType, for the types edgenn reads and writes.
TENSOR_TYPES: dict[DType, int] = {
    DType.FLOAT32: tflite.TensorType.FLOAT32,
    DType.INT8: tflite.TensorType.INT8,
    DType.UINT8: tflite.TensorType.UINT8,
    DType.INT16: tflite.TensorType.INT16,
    DType.INT32: tflite.TensorType.INT32,
    DType.INT64: tflite.TensorType.INT64,
    DType.BOOL: tflite.TensorType.BOOL,
}
DTYPES: dict[int, DType] = {code: dtype for dtype, code in TENSOR_TYPES.items()}

# IR fused activation -> tflite.ActivationFunctionType (TANH and SIGN_BIT have no IR twin).
FUSED_ACTIVATIONS: dict[Activation, int] = {
    Activation.NONE: tflite.ActivationFunctionType.NONE,
    Activation.RELU: tflite.ActivationFunctionType.RELU,
    Activation.RELU6: tflite.ActivationFunctionType.RELU6,
    Activation.RELU_N1_TO_1: tflite.ActivationFunctionType.RELU_N1_TO_1,
}
ACTIVATIONS: dict[int, Activation] = {code: act for act, code in FUSED_ACTIVATIONS.items()}

# tflite.Padding <-> the ``same`` flag of ``edgenn.ir.padding``.
PADDINGS: dict[int, bool] = {tflite.Padding.SAME: True, tflite.Padding.VALID: False}


def padding_code(same: bool) -> int:
    """The ``tflite.Padding`` code of SAME (``same``) or VALID."""
    return int(tflite.Padding.SAME if same else tflite.Padding.VALID)


def enum_name(enum: type, code: int) -> str:
    """The name of ``code`` in a ``tflite`` enum class (``tflite.TensorType``, ...), or the
    number when the enum has no such member (a newer schema or a corrupt file)."""
    for name, value in vars(enum).items():
        if not name.startswith("_") and value == code:
            return name
    return str(code)
