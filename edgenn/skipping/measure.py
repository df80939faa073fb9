"""The skip-demo's model and measurements: an int8 model with skippable blocks, and every skip
configuration's accuracy, MACs, RAM and Cortex-M4 cycles (``edgenn skip-demo``, and
``edgenn bench --pareto-plot``)."""

from __future__ import annotations

import os

from edgenn.backends.targets import get_backend
from edgenn.datasets import dataset_split
from edgenn.evaluate import bench_input, images_to_input
from edgenn.frontends import load
from edgenn.ir import DType, Graph
from edgenn.models import shipped_model_path
from edgenn.passes.skip import default_configs, find_blocks
from edgenn.progress import progress
from edgenn.quantize import quantize
from edgenn.skipping.profile import ConfigProfile, profile_configs

CALIBRATION_DIGITS = 500  # MNIST training digits that calibrate a float model


def load_int8(model: str | os.PathLike[str] | None) -> Graph:
    """The model (default: the shipped joint-loss SkipNet) as int8: a float model is quantized
    on the first 500 MNIST training digits."""
    graph = load(model or shipped_model_path("skipnet_joint"))
    if graph.tensor(graph.inputs[0]).dtype == DType.INT8:
        return graph
    train, _ = dataset_split("mnist", "train")
    return quantize(graph, images_to_input(graph, train[:CALIBRATION_DIGITS]))


def measure(graph: Graph, clock_mhz: float) -> list[ConfigProfile]:
    """Each planned configuration (``default_configs``: every one up to ten blocks, else the
    full network and each block alone): accuracy (reference runtime, the MNIST test digits),
    MACs, RAM and Cortex-M4 cycles (one skip-capable firmware build serves them all).
    ``clock_mhz`` is not used by the measurement; callers convert cycles to time with it."""
    del clock_mhz  # why kept: the signature callers (bench, skip-demo) already use
    configs = default_configs(find_blocks(graph))
    backend = get_backend("cortex-m4")
    exe = backend.build(graph, backend.parse_options({"skippable": True}))
    x1 = bench_input(graph)
    images, labels = dataset_split("mnist", "test")
    with progress("measuring configurations", len(configs)) as advance:
        return profile_configs(
            graph, configs, cycles=lambda c: exe.bench(x1, skip=c).total_cycles,
            images=images, labels=labels, on_config=lambda _: advance())
