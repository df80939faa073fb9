"""The Python API, mirroring the CLI: load, quantize, compile for a target, run, inspect."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from edgenn.backends.executable import Executable
from edgenn.errors import EdgennError
from edgenn.ir import Graph


def load_model(path: str | os.PathLike[str],
               input_shapes: Mapping[str, Sequence[int]] | None = None,
               input_values: Mapping[str, Any] | None = None) -> Graph:
    """Import a ``.onnx`` or ``.tflite`` file into the IR, with the standard import passes.

    ``input_shapes`` fixes the dynamic (symbolic) dimensions of the named inputs, e.g.
    ``{"input": (1, 512)}``; a dynamic dimension left unfixed is taken as 1. ``input_values``
    makes the named inputs constants of the given value (broadcast to the input's shape), e.g.
    ``{"sr": 16000}``: they are no longer inputs of the graph, and what depends only on them
    (an ``If`` on the sample rate) is evaluated at import."""
    from edgenn.frontends import load

    return load(path, input_shapes=input_shapes, input_values=input_values)


def quantize_model(
    graph: Graph, calibration: np.ndarray, method: str = "minmax", **options: Any
) -> Graph:
    """Post-training int8 quantization of a float graph; ``calibration`` is [N, *input shape]."""
    from edgenn.quantize import quantize

    return quantize(graph, calibration, method=method, **options)


def compile_model(graph: Graph, target: str = "ref", **options: Any) -> Executable:
    """Compile for a target into an ``Executable`` (``run``, ``sizes``, ``bench`` returning the
    common ``BenchReport``; edgenn/backends/executable.py), whatever the target.

    ``ref`` is the numpy reference runtime; ``cortex-m4``, ``cortex-m7`` and ``cortex-m0plus``
    generate bare-metal C, build it with arm-none-eabi-gcc and run it in the emulator (options:
    ``out_dir``, ``ram_kb``, ``opt``, ...). Layer fusion:
    ``fuse="none"|"all"|"auto"`` (default none here; the command line's default is the
    target's, ``auto`` on a Cortex-M core with the cycle model), ``fusion_variant``
    (``"layer_by_layer"``, ``"ring_modulo"``, ``"ring_hoisted"``, ``"ring_hoisted_pair"``: the
    default), ``ram_budget``, ``latency_bound`` (see ``edgenn.fusion``). ``vta`` runs every
    int8 Conv2D / FullyConnected on the VTA-class accelerator simulator and the other layers
    on the reference runtime (options: ``preset``, ``schedule``, ``bus_bits``; see
    ``edgenn.backends.vta.executable.compile_vta``). ``host``
    runs float Conv2D / FullyConnected layers as C generated and compiled for this CPU on a
    pinned thread pool, the rest on the reference runtime (options: ``threads``,
    ``schedule="tuned"|"default"``, ``db``, ``emulate_hetero``; see
    ``edgenn.backends.host.executable.compile_host``). Each target's options are the fields of
    its options dataclass (``edgenn.backends.targets.get_backend(target).options``).
    """
    from edgenn.backends.targets import get_backend
    from edgenn.fusion import (
        BEST_VARIANT,
        LAYER_BY_LAYER,
        checked_variant,
        fuse_for_target,
        fusion_options,
    )

    backend = get_backend(target)
    fusion = fusion_options(dict(options))
    options = {k: v for k, v in options.items() if k not in fusion}
    skip_spec = options.pop("skip", None)
    if skip_spec and backend.skip_in_firmware:  # a skip-capable build, planned for it
        options["skip"] = skip_spec
    parsed = backend.parse_options(options)  # unknown options fail here, for every target
    if skip_spec and not backend.skip_in_firmware:  # these run the configuration's graph
        from edgenn.passes.skip import apply_skip, parse_skip

        graph = apply_skip(graph, parse_skip(skip_spec, graph))
    fuse = fusion.get("fuse", "none") or "none"
    if fuse != "none" and not backend.fusion:
        raise EdgennError("layer fusion (--fuse) is for microcontroller targets; "
                          f"--target {target} runs layer by layer")
    variant = checked_variant(fusion.get("fusion_variant") or BEST_VARIANT)
    if fuse == "auto" and backend.fuse_auto is not None and variant != LAYER_BY_LAYER:
        # why its own path: it measures candidate builds, and one of them is the result
        return backend.build_auto(graph, parsed, variant, fusion.get("ram_budget"),
                                  fusion.get("latency_bound"))
    if fuse != "none":
        # why: a firmware with skip support finds its blocks by their Adds; chains keep them
        skips = bool(skip_spec or options.get("skippable") or options.get("skip_configs"))
        graph = fuse_for_target(graph, target, fuse, variant, fusion.get("ram_budget"),
                                fusion.get("latency_bound"),
                                residuals=not (skips and backend.skip_in_firmware),
                                input_buffer=str(options.get("input_buffer") or "arena")).graph
    return backend.build(graph, parsed)


def _targets() -> tuple[str, ...]:
    from edgenn.backends.targets import backend_names

    return backend_names()


TARGETS = _targets()
