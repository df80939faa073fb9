"""Does the firmware fit the device? Its flash and RAM, what an image needs, and the error.

The device's memory comes from the flags (``--ram-kb``, ``--flash-kb``), else the board's,
else the core's reference part (``targets.CORES``). What an image needs is read from its ELF:
flash is the FLASH region's use (code, constants, the initial values of ``.data``), RAM the RAM
region's (``.data`` + ``.bss``, the arena among them, + the stack reserve), which is exactly
what the linker checks. When the real link overflows, the same objects are linked once more
against a map large enough for any model (:func:`probe_script`), so that the error can name
the bytes needed, not only the bytes the linker found missing.

Every does-not-fit error is one line: what is needed and what is available, in bytes, and the
flag value that would fit, rounded up to the next KiB (:func:`kib_to_fit`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgenn.backends.cortexm.targets import Core
from edgenn.errors import EdgennError, PlanError

if TYPE_CHECKING:
    from edgenn.backends.cortexm.boards.board import Board

# why 256 MiB: no model's image reaches it, and it stays below the emulator's trap page
# (emulator/board.py TRAP, just under RAM at 0x20000000) and below any board's RAM
PROBE_KB = 256 * 1024

# the linker's words for "does not fit": a region overflow, or one of our scripts' ASSERTs
_OVERFLOW = re.compile(r"region [`'](\w+)' overflowed by \d+ bytes|\b(RAM|FLASH) overflow:")
_LENGTH = re.compile(r"^(\s*(FLASH|RAM)\s*\([a-z]+\)\s*:\s*ORIGIN\s*=\s*0x[0-9A-Fa-f]+,\s*"
                     r"LENGTH\s*=\s*)\w+", re.MULTILINE)


class FitError(PlanError):
    """The firmware's flash or RAM exceeds the device's (or the flash budget)."""


def kib_to_fit(nbytes: int) -> int:
    """The smallest whole number of KiB that holds ``nbytes``: the flag value to suggest."""
    return max(1, math.ceil(nbytes / 1024))


@dataclass(frozen=True)
class Device:
    """The memory a firmware must fit, in bytes, and how the user set it (for the message).

    ``ram_flag`` / ``flash_flag``: the ``--ram-kb`` / ``--flash-kb`` value given, None when the
    size is the board's or the core's default. ``board``: a real board's name (its memory is
    fixed: a larger device is a ``--board generic`` build), None for the generic layout.
    ``budget_flag``: an explicit ``--flash-budget-kb``, a second flash limit.
    """

    core: str
    ram_bytes: int
    flash_bytes: int
    ram_flag: int | None = None
    flash_flag: float | None = None
    board: str | None = None
    budget_flag: float | None = None

    @property
    def budget_bytes(self) -> int | None:
        return None if self.budget_flag is None else int(self.budget_flag * 1024)


def device_memory(core: Core, board: Board | None, ram_kb: int | None,
                  flash_kb: float | None, flash_budget_kb: float | None = None) -> Device:
    """The device ``core`` (on ``board``, a ``boards.Board`` or None for generic) with the
    user's ``ram_kb`` / ``flash_kb`` (None: the board's, else the core's). A real board's memory
    is fixed: a flag may state less (a limit) but not more (EdgennError)."""
    ram = core.ram_kb * 1024 if ram_kb is None else ram_kb * 1024
    flash = core.flash_kb * 1024 if flash_kb is None else int(flash_kb * 1024)
    name = None
    if board is not None:
        name = board.name
        board_ram, board_flash = board.ram_bytes or ram, board.flash_bytes or flash
        for flag, given, fixed, what in (("--ram-kb", ram_kb, board_ram, "RAM"),
                                         ("--flash-kb", flash_kb, board_flash, "flash")):
            if given is not None and given * 1024 > fixed:
                raise EdgennError(f"board {name!r} has {fixed // 1024:,} KiB of {what}: "
                                  f"{flag} {given:g} is more (for a larger device use "
                                  f"--board generic {flag} {given:g})")
        ram = board_ram if ram_kb is None else ram
        flash = board_flash if flash_kb is None else flash
    if flash <= 0:
        raise EdgennError(f"--flash-kb {flash_kb:g}: must be at least 1 byte of flash")
    return Device(core.name, ram, flash, ram_kb, flash_kb, name, flash_budget_kb)


@dataclass(frozen=True)
class Usage:
    """What one linked image takes, in bytes."""

    flash_bytes: int  # the FLASH region's use: code + constants + .data's initial values
    ram_bytes: int  # the RAM region's use: .data + .bss + the stack reserve
    code_bytes: int
    const_bytes: int
    stack_bytes: int


def elf_usage(elf: str | Path) -> Usage:
    """Read :class:`Usage` from an ELF linked with edgenn's linker script (``codegen/linker``
    defines ``_ebss``, ``_sstack``, ``_estack``; FLASH lies below RAM in every map)."""
    from edgenn.backends.cortexm.emulator.elf import ElfImage

    image = ElfImage(elf)
    syms = image.symbols
    stack = syms["_estack"] - syms["_sstack"]
    ram_origin = syms["_sdata"]  # .data opens the RAM region
    flash = [s for s in image.segments if s.paddr < ram_origin and len(s.data)]
    flash_origin = min(s.paddr for s in flash)
    flash_end = max(s.paddr + len(s.data) for s in flash)
    sizes = image.sizes((syms["_sstack"], syms["_estack"]))
    return Usage(flash_end - flash_origin, syms["_ebss"] - ram_origin + stack,
                 sizes["text"], sizes["rodata"], stack)


def overflowed(stderr: str) -> bool:
    """True when a failed link says the image does not fit a memory region."""
    return _OVERFLOW.search(stderr) is not None


def probe_script(script: str) -> str:
    """``script`` (an edgenn linker script) with FLASH and RAM enlarged to :data:`PROBE_KB`,
    origins and everything else unchanged: the link that measures an image that overflows."""
    return _LENGTH.sub(lambda m: f"{m.group(1)}{PROBE_KB}K", script)


def fit_problems(usage: Usage, device: Device, arena_bytes: int) -> list[str]:
    """One clause per limit the image exceeds (empty when it fits)."""
    out = []
    if usage.ram_bytes > device.ram_bytes:
        other = usage.ram_bytes - arena_bytes - usage.stack_bytes
        out.append(f"RAM needs {usage.ram_bytes:,} bytes (arena {arena_bytes:,} + stack "
                   f"{usage.stack_bytes:,} + other data {other:,}), more than "
                   f"{_available(device, 'RAM')}: {_suggest(device, '--ram-kb', usage.ram_bytes)}")
    if usage.flash_bytes > device.flash_bytes:
        out.append(f"flash needs {usage.flash_bytes:,} bytes (code {usage.code_bytes:,}, "
                   f"constants {usage.const_bytes:,}), more than {_available(device, 'flash')}"
                   f": {_suggest(device, '--flash-kb', usage.flash_bytes)}")
    budget = device.budget_bytes
    if budget is not None and budget < usage.flash_bytes <= device.flash_bytes:
        out.append(f"flash needs {usage.flash_bytes:,} bytes, more than --flash-budget-kb "
                   f"{device.budget_flag:g} ({budget:,} bytes): use --flash-budget-kb "
                   f"{kib_to_fit(usage.flash_bytes)}")
    return out


def _available(device: Device, what: str) -> str:
    """``the 16 KiB (16,384 bytes) of --ram-kb 16``, or of the board / the core's part."""
    nbytes, flag, spelling = ((device.ram_bytes, device.ram_flag, "--ram-kb") if what == "RAM"
                              else (device.flash_bytes, device.flash_flag, "--flash-kb"))
    if flag is not None:
        source = f"{spelling} {flag:g}"
    else:
        source = f"board {device.board}" if device.board else f"{device.core}'s reference part"
    return f"the {nbytes / 1024:,g} KiB ({nbytes:,} bytes) of {what} of {source}"


def _suggest(device: Device, flag: str, nbytes: int) -> str:
    if device.board is not None:
        return f"a larger device is --board generic {flag} {kib_to_fit(nbytes)}"
    return f"use {flag} {kib_to_fit(nbytes)}"


def check_fit(usage: Usage, device: Device, arena_bytes: int, what: str) -> None:
    """FitError (one line, ``what`` first) when ``usage`` exceeds ``device``."""
    problems = fit_problems(usage, device, arena_bytes)
    if problems:
        raise FitError(f"{what} does not fit {device.core}: {'; '.join(problems)}")
