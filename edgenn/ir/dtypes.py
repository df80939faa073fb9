"""Element types of IR tensors."""

from enum import Enum

import numpy as np


class DType(Enum):
    FLOAT32 = "float32"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    BOOL = "bool"  # comparison results and logical operands (ONNX's bool tensors)

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.value)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> "DType":
        name = np.dtype(dtype).name
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"unsupported element type {name}") from None
