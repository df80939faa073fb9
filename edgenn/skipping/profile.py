"""Measure every skip configuration of a model: MACs, cycles, RAM, accuracy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from edgenn.analysis import node_macs
from edgenn.ir import Graph

SkipConfig = frozenset[str]


def config_label(skip: SkipConfig) -> str:
    return "full" if not skip else "skip " + ",".join(sorted(skip))


@dataclass(frozen=True)
class ConfigProfile:
    skip: SkipConfig
    macs: int
    peak_bytes: int  # activation RAM this configuration needs on its own (planner peak)
    cycles: int | None = None  # Cortex-M4 cycle model, one inference
    accuracy: float | None = None  # on the evaluation set, reference runtime (bit-exact)

    @property
    def label(self) -> str:
        return config_label(self.skip)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skip"] = sorted(self.skip)
        d["label"] = self.label
        return d


def profile_configs(graph: Graph, configs: Sequence[SkipConfig] | None = None, *,
                    cycles: Callable[[SkipConfig], int | None] | None = None,
                    images: np.ndarray | None = None, labels: np.ndarray | None = None,
                    on_config: Callable[[str], None] | None = None) -> list[ConfigProfile]:
    """Profile each configuration (default: ``default_configs``, all subsets of up to ten
    blocks).

    ``cycles(config)`` measures one inference (e.g. a Cortex-M4 build's ``bench``);
    ``images``/``labels`` (uint8 [N,H,W] and int labels) give the accuracy with the reference
    runtime, which is bit-exact with the firmware in every configuration.
    """
    from edgenn.backends.ref import compile_ref
    from edgenn.evaluate import images_to_input, predict
    from edgenn.passes.skip import apply_skip, default_configs, find_blocks, plan_for_configs

    blocks = find_blocks(graph)
    configs = list(configs) if configs is not None else default_configs(blocks)
    peaks = plan_for_configs(graph, configs).peak_bytes_per_config
    x = images_to_input(graph, images) if images is not None else None
    result = []
    for config in configs:
        if on_config is not None:
            on_config(config_label(config))
        g = apply_skip(graph, config)
        accuracy = None
        if x is not None and labels is not None:
            exe = compile_ref(g)

            def run(batch: np.ndarray, exe: Any = exe) -> np.ndarray:
                return exe.run(batch)[0]

            accuracy = float(np.mean(predict(run, x) == labels))
        result.append(ConfigProfile(
            skip=config, macs=sum(node_macs(g, n) for n in g.nodes),
            peak_bytes=int(peaks[config]), cycles=cycles(config) if cycles else None,
            accuracy=accuracy))
    return result
