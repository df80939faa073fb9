"""Every Cortex-M core as a compile target (``cortex-m4``, ``cortex-m7``, ``cortex-m0plus``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from edgenn.backends.cortexm.codegen.memory import INPUT_BUFFERS
from edgenn.backends.cortexm.codegen.project import ARENA_KINDS
from edgenn.backends.cortexm.executable import EMULATORS, compile_cortexm
from edgenn.backends.cortexm.fusion_auto import compile_auto
from edgenn.backends.cortexm.targets import CORES
from edgenn.backends.options import option
from edgenn.backends.registry import Backend, register_backend
from edgenn.ir import Graph


@dataclass(frozen=True)
class CortexMOptions:
    """The firmware build (``compile_cortexm``'s keyword arguments; None: its default). The
    fields with a flag are the options every firmware-building command takes (their order is
    the order of ``-h``)."""

    board: str | None = option(
        "--board", default="generic", metavar="BOARD",
        help="the application around the library: generic (the cycle-model emulator's, "
             "default), mps2-an386 or netduinoplus2 (an example application for that board, "
             "run in qemu-system-arm)")
    emulator: str | None = option(
        "--emulator", choices=EMULATORS,
        help="where run / eval / validate execute the firmware: unicorn (the cycle-model "
             "emulator, for --board generic) or qemu (a real board's model; the default for "
             "mps2-an386 and netduinoplus2)")
    arena: str | None = option(
        "--arena", choices=ARENA_KINDS, default="static",
        help="static: the library owns its arena (NAME_init); external: you pass it in "
             "(NAME_init_with_arena)")
    input_buffer: str | None = option(
        "--input-buffer", choices=INPUT_BUFFERS, default="arena",
        help="arena: the inputs are buffers in the arena, filled through NAME_input(i) "
             "(default); caller: read in place from your buffers (NAME_set_input(i, buffer), "
             "e.g. a camera's frame buffer), never written, and left out of the arena")
    ram_kb: int | None = option(
        "--ram-kb", type=int, minimum=1,
        help="device RAM in KiB: the arena, stack and every static variable must fit it "
             "(default: the board's, else the core's reference part)")
    opt: str | None = option("--opt", default="-O2",
                             help="optimisation flag for arm-none-eabi-gcc")
    flash_kb: float | None = option(
        "--flash-kb", type=float, minimum=1,
        help="device flash in KiB: code and constants must fit it (default: the board's, "
             "else the core's reference part); also the budget of --flash-budget-kb when "
             "that is not given")
    flash_budget_kb: float | None = option(
        "--flash-budget-kb", type=float, minimum=1,
        help="flash in KiB the fast (unrolled) generated code may fill; a fast build over it "
             "gets compact code in as few layers as it needs, those it slows least first "
             "(default: --flash-kb if given, else the int8 parameters + 48 KiB; at most the "
             "device's); a build that cannot fit it even compact is an error")
    out_dir: Any = None
    stack_bytes: int | None = None
    skippable: bool | None = option(
        "--skippable", type=bool,
        help="build skip-capable firmware: NAME_set_skip_mask switches residual blocks off "
             "between inferences, one arena for every configuration (up to 10 blocks every "
             "combination, beyond that each block alone; docs/skipping.md). Off by default: "
             "a plain build has no mask code")
    skip_configs: Iterable[Iterable[str]] | None = None
    skip_copy: bool | None = None
    skip: str | Iterable[str] | None = None  # --skip on a Cortex-M: planned, the run default
    compact: bool | None = None
    name: str | None = None
    library_only: bool | None = None


def _compile(core: str, graph: Graph, **options: Any) -> Any:
    return compile_cortexm(graph, core=core, **options)


for _i, _core in enumerate(CORES):
    # why auto only with the cycle model: it chooses by measured cycles
    register_backend(Backend(_core, CortexMOptions, partial(_compile, _core),
                             skip_in_firmware=True,
                             default_fuse="auto" if CORES[_core].cycle_model else "none",
                             fuse_auto=partial(compile_auto, _core) if CORES[_core].cycle_model
                             else None,
                             description=f"bare-metal C for a {_core}, emulated",
                             order=10 + _i))
