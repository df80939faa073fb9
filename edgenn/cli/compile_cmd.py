"""``edgenn compile MODEL --target cortex-m4 -o DIR``: a self-contained bare-metal C project."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.backend import CortexMOptions
from edgenn.backends.cortexm.bench_report import arena_text, flash_summary
from edgenn.backends.cortexm.codegen.names import c_identifier
from edgenn.backends.cortexm.executable import CortexMExecutable
from edgenn.backends.cortexm.targets import CORES
from edgenn.backends.targets import get_backend
from edgenn.cli.console import console, table
from edgenn.cli.options import (
    add_flags,
    add_force_option,
    add_model_input_options,
    command_line,
    flag_values,
    model_input_options,
)
from edgenn.fusion import BEST_VARIANT, LAYER_BY_LAYER, FusionOptions
from edgenn.outputs import owned_dir
from edgenn.skipping.options import SkipOptions


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compile", help="generate and build a bare-metal C project for a Cortex-M")
    p.add_argument("model", help="int8 .tflite (or a quantized graph)")
    add_model_input_options(p)
    p.add_argument("--target", required=True, choices=tuple(CORES))
    p.add_argument("-o", "--output", required=True,
                   help="folder for the C library and the example application (their build "
                        "products in its build/); an existing folder keeps every file an "
                        "earlier edgenn build did not generate there (docs/outputs.md)")
    add_force_option(p)
    p.add_argument("--name", default=None,
                   help="the library's name: NAME.h, NAME_init, NAME_invoke, libNAME.a "
                        "(default: the model file's name, made a C identifier)")
    p.add_argument("--library-only", action="store_true",
                   help="only the library: no startup code, main or linker script")
    add_device_options(p)
    p.set_defaults(func=run)


def add_device_options(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds firmware: the Cortex-M build's
    (``CortexMOptions``), layer fusion and skipping."""
    add_flags(p, CortexMOptions)
    add_fusion_options(p)
    add_skip_option(p)


def add_skip_option(p: argparse.ArgumentParser) -> None:
    """Runtime layer skipping (docs/skipping.md)."""
    add_flags(p, SkipOptions)


def add_fusion_options(p: argparse.ArgumentParser) -> None:
    """Layer fusion (docs/fusion.md), on every command that compiles a model."""
    add_flags(p, FusionOptions)


def add_vta_options(p: argparse.ArgumentParser) -> None:
    """The accelerator's board and GEMM schedule, for ``--target vta`` (docs/vta_network.md)."""
    from edgenn.backends.vta.backend import VtaOptions  # why here: `compile` never needs VTA

    add_flags(p, VtaOptions)


def add_host_options(p: argparse.ArgumentParser) -> None:
    """Threads, schedules and emulated big.LITTLE for ``--target host`` (docs/host.md)."""
    from edgenn.backends.host.backend import HostOptions  # why here: `compile` never needs it

    add_flags(p, HostOptions)


def vta_options(args: argparse.Namespace) -> dict[str, Any]:
    """``VtaOptions`` from the flags of :func:`add_vta_options`."""
    from edgenn.backends.vta.backend import VtaOptions

    return flag_values(args, VtaOptions)


def host_options(args: argparse.Namespace) -> dict[str, Any]:
    """``HostOptions`` from the flags of :func:`add_host_options` (``--schedule`` parsed)."""
    from edgenn.backends.host.backend import HostOptions

    return flag_values(args, HostOptions)


def device_options(args: argparse.Namespace) -> dict[str, Any]:
    """``CortexMOptions``, fusion and skip from the flags of :func:`add_device_options`."""
    return {**flag_values(args, CortexMOptions), **fusion_settings(args)}


def fusion_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Fusion and skip options: they shape the graph on every target, ``ref`` included."""
    return {**_fusion(args), **flag_values(args, SkipOptions)}


def _fusion(args: argparse.Namespace) -> dict[str, Any]:
    """The fusion flags with the command line's defaults: a ``ring_*`` variant alone means
    ``--fuse all``, ``layer_by_layer`` none, no variant the target's default (``auto`` on a
    Cortex-M core with the cycle model, else none); the variant defaults to the best one."""
    fusion = flag_values(args, FusionOptions)
    variant = fusion["fusion_variant"]
    if fusion["fuse"] is None:
        if variant is None:
            target = getattr(args, "target", None)
            fusion["fuse"] = get_backend(target).default_fuse if target else "none"
        else:
            fusion["fuse"] = "none" if variant == LAYER_BY_LAYER else "all"
    fusion["fusion_variant"] = variant or BEST_VARIANT
    return fusion


def target_options(args: argparse.Namespace) -> dict[str, Any]:
    """Compile options for ``args.target``: fusion and skip, plus the flags of the target's
    registered options dataclass (none for ``ref``). The parser must have every target's
    flags (:func:`add_device_options`, :func:`add_vta_options`, :func:`add_host_options`)."""
    return {**fusion_settings(args), **flag_values(args, get_backend(args.target).options)}


def library_name(args: argparse.Namespace) -> str:
    """``--name`` or the model file's stem, as a C identifier (names from files are untrusted)."""
    return c_identifier(args.name if args.name is not None else Path(args.model).stem)


def run(args: argparse.Namespace) -> int:
    name = library_name(args)
    # why a temporary folder: the build (and a failing one) never touches --output; the
    # result moves in only when it is complete (edgenn.outputs.owned_dir)
    with owned_dir(args.output, force=args.force, command=command_line(args)) as tmp:
        graph = load_model(args.model, **model_input_options(args))
        # why the cast: --target's choices are the Cortex-M cores, whose builds have an ELF
        exe = cast(CortexMExecutable, compile_model(
            graph, target=args.target, out_dir=tmp, name=name,
            library_only=args.library_only, **device_options(args)))
        sizes = exe.sizes()
        layer_flash = (layer_flash_report(exe) if exe.elf is not None
                       and exe.manifest.get("board", "generic") == "generic" else [])
    what = f"library lib{name}.a ({name}.h)" + ("" if args.library_only
                                               else f" and {exe.manifest['elf']}")
    caller = sizes.pop("caller_input", 0)
    console.print(f"built {what} in {args.output} for {args.target}: " + ", ".join(
        f"{k} {arena_text(v, caller) if k == 'arena' else f'{v:,} B'}"
        for k, v in sizes.items()))
    if args.name is not None and name != args.name:
        console.print(f"--name {args.name!r} is not a C identifier: the library is {name!r}")
    for part in layer_flash:
        console.print(part)
    if exe.fusion_report is not None:
        for line in exe.fusion_report.lines():
            console.print(line, markup=False)
    return 0


def layer_flash_report(exe: CortexMExecutable) -> list[Any]:
    """Flash per layer (its constants and generated functions) from the ELF's symbol table,
    then the shared kernels, counted once: the renderables to print."""
    fmap = exe.flash_map()
    layers = exe.manifest["layers"]
    rows = [(i, m["name"], m["op"], m["kernel"], f"{fmap.layers[i]:,}")
            for i, m in enumerate(layers)]
    return [table("flash per layer", ["#", "layer", "op", "kernel", "flash B"], rows,
                  right_align_from=4),
            flash_summary({"shared_kernels": fmap.shared_kernels,
                           "runtime": fmap.runtime, "other": fmap.other},
                          sum(fmap.layers), fmap.total)]
