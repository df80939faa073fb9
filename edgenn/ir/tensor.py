"""IR tensors: a name, a static shape, an element type, optional quantization and constant data."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from edgenn.ir.dtypes import DType
from edgenn.ir.quant import QuantParams


@dataclass(frozen=True, eq=False)
class Tensor:
    """A value in the graph.

    Activations of rank 4 are always NHWC inside edgenn (frontends convert); the batch
    dimension is part of ``shape`` (1 for the models edgenn plans) and runtimes may run a
    larger batch through the same graph.
    """

    name: str
    shape: tuple[int, ...]
    dtype: DType
    quant: QuantParams | None = None
    data: np.ndarray | None = None  # set for constants (weights, biases, shape operands)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.data is not None:
            arr = np.asarray(self.data)
            if arr.dtype != self.dtype.numpy:
                raise ValueError(
                    f"tensor {self.name!r}: data is {arr.dtype}, declared {self.dtype.value}"
                )
            if tuple(arr.shape) != self.shape:
                raise ValueError(
                    f"tensor {self.name!r}: data shape {arr.shape} != declared {self.shape}"
                )
            arr.setflags(write=False)
            object.__setattr__(self, "data", arr)

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def with_(self, **changes: object) -> Tensor:
        return replace(self, **changes)  # type: ignore[arg-type]

    @staticmethod
    def const(name: str, data: np.ndarray, quant: QuantParams | None = None) -> Tensor:
        # why not ascontiguousarray: it makes a 0-d array 1-d, and a scalar constant would
        # then broadcast a scalar operation's result to shape [1]
        arr = np.require(data, requirements="C")
        return Tensor(name, tuple(arr.shape), DType.from_numpy(arr.dtype), quant, arr)
