"""Feed image data sets to a model as its input tensor declares, and measure accuracy."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from edgenn.errors import EdgennError, ShapeError
from edgenn.ir import DType, Graph
from edgenn.ir.sample import random_inputs

Runner = Callable[[np.ndarray], np.ndarray]


def images_to_input(graph: Graph, images: np.ndarray) -> np.ndarray:
    """uint8 images [N, H, W] -> the model's input: pixels/255 in float32, int8 if quantized.

    The array takes the model's declared input layout ([N,1,H,W], [N,H,W,1], [N,H*W] ...).
    """
    name = graph.inputs[0]
    tensor = graph.tensor(name)
    ext = graph.external_shape(name)
    per_image = int(np.prod(ext[1:]))
    if per_image != int(np.prod(images.shape[1:])):
        raise ShapeError(
            f"model input {name!r} has shape {list(ext)}, which does not hold "
            f"{list(images.shape[1:])} images"
        )
    x = (images.astype(np.float32) / np.float32(255.0)).reshape((len(images), *ext[1:]))
    if tensor.dtype == DType.INT8:
        from edgenn.quantize import quantize_input

        return quantize_input(graph, x)
    if tensor.dtype != DType.FLOAT32:
        raise ShapeError(f"model input {name!r} is {tensor.dtype.value}; expected float32 or int8")
    return x


def batches(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def predict(run: Runner, x: np.ndarray, batch: int = 500,
            on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """Class predictions (argmax of the first output, flattened per sample)."""
    preds = []
    for sl in batches(len(x), batch):
        y = run(x[sl])
        preds.append(np.argmax(y.reshape(len(y), -1), axis=1))
        if on_batch is not None:
            on_batch(sl.stop - sl.start)
    return np.concatenate(preds) if preds else np.zeros(0, np.int64)


def bench_inputs(graph: Graph) -> list[np.ndarray]:
    """A real MNIST test digit where the model's one input holds one, else seeded random
    data for every input (``edgenn.ir.sample.random_inputs``)."""
    if len(graph.inputs) == 1:
        try:
            from edgenn.datasets import dataset_split

            images, _ = dataset_split("mnist", "test")
            return [images_to_input(graph, images[:1])]
        except EdgennError:
            pass
    return random_inputs(graph)


def bench_input(graph: Graph) -> np.ndarray:
    """The first of ``bench_inputs`` (single-input callers)."""
    return bench_inputs(graph)[0]
