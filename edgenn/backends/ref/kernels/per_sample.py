"""How a layer whose axes may include axis 0 maps the runtime's batch onto its tensors.

The reference runtime runs a graph whose tensors have batch 1 on ``N`` samples at once: every
array is ``[N, *shape[1:]]``. An operator that reduces, scans or broadcasts along arbitrary
axes must not mix samples, so when all its tensors lead with a batch axis of size 1 it works
per sample, on ``[N, *shape]`` (each sample with its own size-1 axis), and folds the result
back. A tensor whose leading axis is not 1 (an ONNX model's ``[3, 2, 2]`` input, a reduction
that drops axis 0) has no batch axis: the layer then runs on the declared shape only, as the
array it is, and says so when given another leading size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgenn.backends.ref.layer import Layer
from edgenn.errors import ShapeError


class BatchView:
    """Per-sample (``per_sample``) or whole-tensor view of a layer's ``shapes``."""

    def __init__(self, layer: Layer, *shapes: Sequence[int]) -> None:
        self.node = layer.node
        self.per_sample = all(len(s) > 0 and int(s[0]) == 1 for s in shapes)
        self.offset = 1 if self.per_sample else 0  # where the tensor's axis 0 is in a view

    def unfold(self, x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        """The runtime array of a tensor of ``shape`` as the array the op works on."""
        if self.per_sample:
            return x.reshape((x.shape[0], *shape))
        if tuple(x.shape) != tuple(int(d) for d in shape):
            raise ShapeError(f"{self.node}: runs only on its declared shape {list(shape)} "
                             f"(its tensors have no leading batch axis of size 1), "
                             f"got {list(x.shape)}")
        return x

    def fold(self, y: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        """The op's result (a tensor of ``shape``) as the runtime array."""
        return y.reshape((y.shape[0], *tuple(shape)[1:])) if self.per_sample else y
