"""``edgenn compile MODEL --target cortex-m4 -o DIR``: a self-contained bare-metal C project."""

from __future__ import annotations

import argparse
from typing import Any

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.targets import CORES
from edgenn.cli.console import console
from edgenn.fusion import (
    BEST_VARIANT,
    FUSE_MODES,
    FUSION_VARIANTS,
    LAYER_BY_LAYER,
    fusion_variant_name,
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compile", help="generate and build a bare-metal C project for a Cortex-M")
    p.add_argument("model", help="int8 .tflite (or a quantized graph)")
    p.add_argument("--target", required=True, choices=tuple(CORES))
    p.add_argument("-o", "--output", required=True,
                   help="directory for the C library (and the application's ELF)")
    p.add_argument("--name", default=None,
                   help="the library's name: NAME.h, NAME_init, NAME_invoke, libNAME.a "
                        "(default: the model file's name, made a C identifier)")
    p.add_argument("--library-only", action="store_true",
                   help="only the library: no startup code, main or linker script")
    add_device_options(p)
    p.set_defaults(func=run)


def add_device_options(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds firmware."""
    p.add_argument("--board", default="generic", metavar="BOARD",
                   help="the application around the library: generic (the cycle-model "
                        "emulator's, default), mps2-an386 or netduinoplus2 (an example "
                        "application for that board, run in qemu-system-arm)")
    p.add_argument("--emulator", choices=("unicorn", "qemu"), default=None,
                   help="where run / eval / validate execute the firmware: unicorn (the "
                        "cycle-model emulator, for --board generic) or qemu (a real board's "
                        "model; the default for mps2-an386 and netduinoplus2)")
    p.add_argument("--arena", choices=("static", "external"), default="static",
                   help="static: the library owns its arena (NAME_init); external: you pass "
                        "it in (NAME_init_with_arena)")
    p.add_argument("--ram-kb", type=int, default=None,
                   help="device RAM in KiB (default: the core's reference board)")
    p.add_argument("--opt", default="-O2", help="optimisation flag for arm-none-eabi-gcc")
    p.add_argument("--flash-kb", type=float, default=None,
                   help="flash budget in KiB for constants and code (default: the int8 "
                        "parameters + 48 KiB); kernels with pre-widened int16 weights are "
                        "used only where the budget leaves room and they measure faster")
    add_fusion_options(p)
    add_skip_option(p)


def add_skip_option(p: argparse.ArgumentParser) -> None:
    """Runtime layer skipping (docs/skipping.md)."""
    p.add_argument("--skip", default=None, metavar="BLOCKS",
                   help="skip these residual blocks, e.g. block2 or block2,block3 "
                        "(names as `edgenn inspect` shows them)")


def add_fusion_options(p: argparse.ArgumentParser) -> None:
    """Layer fusion (docs/fusion.md), on every command that compiles a model."""
    p.add_argument("--fuse", choices=FUSE_MODES, default=None,
                   help="fuse Conv2D chains through rolling row buffers (default: none, or all "
                        "when a ring_* --fusion-variant is given)")
    p.add_argument("--fusion-variant", choices=FUSION_VARIANTS, default=None,
                   type=fusion_variant_name, metavar="VARIANT",
                   help="layer_by_layer (no fusion); ring_modulo (fused, per-pixel modulo "
                        "into the ring); ring_hoisted (fused, row addresses hoisted per output "
                        "row); ring_hoisted_pair (ring_hoisted + two output pixels per step "
                        "with SMLAD; the default). Aliases: a, b, c, d in that order")
    p.add_argument("--ram-budget", type=int, default=None,
                   help="with --fuse auto: the fastest plan whose arena fits this many bytes")
    p.add_argument("--latency-bound", type=float, default=None,
                   help="with --fuse auto and no budget: the smallest arena within N cycles")


def add_vta_options(p: argparse.ArgumentParser) -> None:
    """The accelerator's board and GEMM schedule, for ``--target vta`` (docs/vta_network.md)."""
    from edgenn.backends.vta.config import PRESETS

    p.add_argument("--vta-preset", default=None, choices=tuple(PRESETS),
                   help="with --target vta: the board (default: zcu102, 333 MHz, 128-bit AXI)")
    p.add_argument("--vta-schedule", default=None, metavar="SCHEDULE",
                   help="with --target vta: GEMM schedule tiled2, optimized or tall_pipelined "
                        "(the default; ours is an alias of it)")
    p.add_argument("--vta-bus-bits", type=int, default=None, metavar="BITS",
                   help="with --target vta: AXI bus width instead of the preset's (64 or 128)")


def vta_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"preset": getattr(args, "vta_preset", None),
            "schedule": getattr(args, "vta_schedule", None),
            "bus_bits": getattr(args, "vta_bus_bits", None)}


def add_host_options(p: argparse.ArgumentParser) -> None:
    """Threads, schedules and emulated big.LITTLE for ``--target host`` (docs/host.md)."""
    p.add_argument("--threads", type=int, default=None, metavar="T",
                   help="with --target host: at most T threads per layer (the default "
                        "schedule uses exactly T; default: the smallest cluster's core count)")
    p.add_argument("--schedule", default="tuned", metavar="MODE",
                   help="with --target host: tuned (best tuning records, default where none; "
                        "the default), default (rule-based: ACL's method rules, threads = "
                        "smallest cluster, equal split, unpinned) or an explicit schedule "
                        "CLUSTER:THREADS:SHARE+..., e.g. 0:1:0.7+1:1:0.3")
    p.add_argument("--db", default=None, metavar="URL",
                   help="with --target host: tuning database (SQLite or PostgreSQL URL; "
                        "default: the tuner's, ~/.cache/edgenn/)")
    p.add_argument("--emulate-hetero", default=None, metavar="SPEC",
                   help="with --target host: emulate big.LITTLE on this machine, e.g. 1+1:0.43 "
                        "(1 big + 1 LITTLE CPU at 0.43 of its speed); figures are labelled "
                        "emulated")


def host_options(args: argparse.Namespace) -> dict[str, Any]:
    from edgenn.backends.host.schedule import parse_schedule

    mode = getattr(args, "schedule", "tuned") or "tuned"
    return {"threads": getattr(args, "threads", None),
            "schedule": mode if mode in ("tuned", "default") else parse_schedule(mode),
            "db": getattr(args, "db", None),
            "emulate_hetero": getattr(args, "emulate_hetero", None)}


def device_options(args: argparse.Namespace) -> dict[str, Any]:
    options = {"ram_kb": getattr(args, "ram_kb", None), "opt": getattr(args, "opt", "-O2"),
               "flash_kb": getattr(args, "flash_kb", None),
               "board": getattr(args, "board", "generic"),
               "arena": getattr(args, "arena", "static"),
               **fusion_settings(args)}
    if getattr(args, "emulator", None) is not None:
        options["emulator"] = args.emulator
    return options


def fusion_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Fusion and skip options: they shape the graph on every target, ``ref`` included."""
    return {**_fusion(args), "skip": getattr(args, "skip", None)}


def _fusion(args: argparse.Namespace) -> dict[str, Any]:
    variant = getattr(args, "fusion_variant", None)
    fuse = getattr(args, "fuse", None)
    if fuse is None:
        fuse = "none" if variant in (None, LAYER_BY_LAYER) else "all"
    return {"fuse": fuse, "fusion_variant": variant or BEST_VARIANT,
            "ram_budget": getattr(args, "ram_budget", None),
            "latency_bound": getattr(args, "latency_bound", None)}


def target_options(args: argparse.Namespace) -> dict[str, Any]:
    """Compile options for ``args.target``: fusion and skip for ``ref``, the accelerator's for
    ``vta``, threads and schedule for ``host``, device options for a core."""
    if args.target == "ref":
        return fusion_settings(args)
    if args.target == "vta":
        return {**fusion_settings(args), **vta_options(args)}
    if args.target == "host":
        return {**fusion_settings(args), **host_options(args)}
    return device_options(args)


def library_name(args: argparse.Namespace) -> str:
    """``--name`` or the model file's stem, as a C identifier (names from files are untrusted)."""
    from pathlib import Path

    from edgenn.backends.cortexm.codegen.names import c_identifier

    return c_identifier(args.name if args.name is not None else Path(args.model).stem)


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model)
    name = library_name(args)
    exe = compile_model(graph, target=args.target, out_dir=args.output, name=name,
                        library_only=args.library_only, **device_options(args))
    sizes = exe.sizes()
    what = f"library lib{name}.a ({name}.h)" + ("" if args.library_only else " and model.elf")
    console.print(f"built {what} in {args.output} for {args.target}: " + ", ".join(
        f"{k} {v:,} B" for k, v in sizes.items()))
    if args.name is not None and name != args.name:
        console.print(f"--name {args.name!r} is not a C identifier: the library is {name!r}")
    if exe.elf is not None and exe.manifest.get("board", "generic") == "generic":
        print_layer_flash(exe)
    return 0


def print_layer_flash(exe: Any) -> None:
    """Flash per layer (its constants and generated functions) from the ELF's symbol table,
    then the shared kernels, counted once."""
    from edgenn.cli.bench_cmd import flash_summary
    from edgenn.cli.console import table

    fmap = exe.flash_map()
    layers = exe.manifest["layers"]
    rows = [(i, m["name"], m["op"], m["kernel"], f"{fmap.layers[i]:,}")
            for i, m in enumerate(layers)]
    console.print(table("flash per layer", ["#", "layer", "op", "kernel", "flash B"], rows,
                        right_align_from=4))
    console.print(flash_summary({"shared_kernels": fmap.shared_kernels,
                                 "runtime": fmap.runtime, "other": fmap.other},
                                sum(fmap.layers), fmap.total))
