"""The Python API, mirroring the CLI: load, quantize, compile for a target, run, inspect."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from edgenn.errors import EdgennError
from edgenn.ir import Graph


def load_model(path: str | os.PathLike[str]) -> Graph:
    """Import a ``.onnx`` or ``.tflite`` file into the IR, with the standard import passes."""
    from edgenn.frontends import load

    return load(path)


def quantize_model(
    graph: Graph, calibration: np.ndarray, method: str = "minmax", **options: Any
) -> Graph:
    """Post-training int8 quantization of a float graph; ``calibration`` is [N, *input shape]."""
    from edgenn.quantize import quantize

    return quantize(graph, calibration, method=method, **options)


def compile_model(graph: Graph, target: str = "ref", **options: Any) -> Any:
    """Compile for a target into an executable object with ``run``.

    ``ref`` is the numpy reference runtime; ``cortex-m4``, ``cortex-m7`` and ``cortex-m0plus``
    generate bare-metal C, build it with arm-none-eabi-gcc and run it in the emulator (options:
    ``out_dir``, ``ram_kb``, ``opt``); those executables also have ``bench``. Layer fusion:
    ``fuse="none"|"all"|"auto"``, ``fusion_variant="a".."d"``, ``ram_budget``, ``latency_bound``
    (see ``edgenn.fusion``). ``vta`` runs every int8 Conv2D / FullyConnected on the VTA-class
    accelerator simulator and the other layers on the reference runtime (options: ``preset``,
    ``schedule``, ``bus_bits``; see ``edgenn.backends.vta.executable.compile_vta``). ``host``
    runs float Conv2D / FullyConnected layers as C generated and compiled for this CPU on a
    pinned thread pool, the rest on the reference runtime (options: ``threads``,
    ``schedule="tuned"|"default"``, ``db``, ``emulate_hetero``; see
    ``edgenn.backends.host.executable.compile_host``); its executables have ``bench``.
    """
    from edgenn.backends.cortexm.targets import CORES
    from edgenn.fusion import fuse_for_target, fusion_options

    fusion = fusion_options(dict(options))
    options = {k: v for k, v in options.items() if k not in fusion}
    skip_spec = options.pop("skip", None)
    if skip_spec and target in ("ref", "vta", "host"):  # these run the configuration's graph
        from edgenn.passes.skip import apply_skip, parse_skip

        graph = apply_skip(graph, parse_skip(skip_spec, graph))
    cortex_skip = skip_spec if skip_spec and target in CORES else None
    if fusion.get("fuse", "none") != "none" and target in ("vta", "host"):
        raise EdgennError("layer fusion (--fuse) is for microcontroller targets; "
                          f"--target {target} runs layer by layer")
    if fusion.get("fuse", "none") != "none":
        graph = fuse_for_target(
            graph, target, fusion["fuse"], fusion.get("fusion_variant") or "d",
            fusion.get("ram_budget"), fusion.get("latency_bound")).graph
    if target == "ref":
        from edgenn.backends.ref import compile_ref

        return compile_ref(graph)
    if target == "vta":
        from edgenn.backends.vta.executable import compile_vta

        vta_options = {k: v for k, v in options.items() if v is not None}
        unknown = set(vta_options) - {"preset", "schedule", "bus_bits"}
        if unknown:
            raise EdgennError(f"unknown option(s) for target vta: {', '.join(sorted(unknown))}")
        return compile_vta(graph, **vta_options)
    if target == "host":
        from edgenn.backends.host.executable import compile_host

        host_options = {k: v for k, v in options.items() if v is not None}
        unknown = set(host_options) - {"threads", "schedule", "db", "emulate_hetero"}
        if unknown:
            raise EdgennError(f"unknown option(s) for target host: {', '.join(sorted(unknown))}")
        return compile_host(graph, **host_options)
    if target in CORES:
        from edgenn.backends.cortexm.executable import compile_cortexm

        exe = compile_cortexm(graph, core=target, **options)
        if cortex_skip:  # firmware: one build for every configuration, switched by the mask
            exe.skip_mask(cortex_skip)  # unknown block names fail here, at compile time
            exe.default_skip = cortex_skip
        return exe
    raise EdgennError(f"unknown target {target!r} (available: {', '.join(TARGETS)})")


TARGETS = ("ref", "cortex-m4", "cortex-m7", "cortex-m0plus", "vta", "host")
