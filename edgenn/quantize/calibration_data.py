"""Calibration samples from what a user names: a data set or an ``.npz`` file."""

from __future__ import annotations

import numpy as np

from edgenn.data.npz import load_npz_dataset
from edgenn.datasets import dataset_split
from edgenn.evaluate import images_to_input
from edgenn.ir import Graph

IMAGE_DATASETS = ("mnist", "fashion-mnist")


def calibration_data(graph: Graph, spec: str, size: int) -> np.ndarray:
    """The first ``size`` calibration inputs: ``spec`` is a named image data set (its training
    split, fed as the model's input declares) or an ``.npz`` with an array ``x`` (float32)."""
    if spec in IMAGE_DATASETS:
        images, _ = dataset_split(spec, "train")
        return images_to_input(graph, images[:size])
    x, _ = load_npz_dataset(spec)
    return np.asarray(x[:size], dtype=np.float32)
