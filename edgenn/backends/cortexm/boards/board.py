"""The boards an example application is generated for: memory map, console UART, QEMU machine.

The maps are the real chips' and were checked against QEMU 7.2 (``info mtree`` of
``qemu-system-arm -M mps2-an386`` / ``-M netduinoplus2``):

- mps2-an386 (Arm MPS2, AN386 FPGA image, Cortex-M4): ZBT SSRAM1 (code) at 0x00000000,
  4 MiB; SSRAM2/3 (data) at 0x20000000, 4 MiB; CMSDK APB UART0 at 0x40004000 (QEMU's
  serial port 0).
- netduinoplus2 (STM32F405RG): flash at 0x08000000, 1 MiB (aliased at 0 for the boot
  vector fetch); SRAM at 0x20000000, 128 KiB on the chip (QEMU 7.2 maps 192 KiB there and
  no CCM, so the 64 KiB CCM at 0x10000000 is not used); USART1 at 0x40011000 (serial 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.errors import EdgennError

GENERIC = "generic"


@dataclass(frozen=True)
class Board:
    """One board: its core, memory map, console UART and the QEMU machine that models it.

    ``generic`` is today's layout for the project's own cycle-model emulator: no QEMU
    machine and no UART, and its memory sizes are the core's (``flash_kb``/``ram_kb`` None).
    """

    name: str
    core: str | None  # the core the board carries; None: any (generic)
    qemu_machine: str | None  # ``qemu-system-arm -M`` value; None: not run in QEMU
    flash_origin: int
    flash_bytes: int | None  # None: the core's default (generic)
    ram_origin: int
    ram_bytes: int | None
    uart: str | None  # console UART model: "cmsdk-apb" or "stm32-usart"; None: no console
    uart_base: int = 0
    clock_hz: int = 0  # the UART's input clock after reset, for the baud divisor
    description: str = ""

    @property
    def flash_kb(self) -> int | None:
        """Flash (code memory) in KiB; None for generic (use ``Core.flash_kb``)."""
        return None if self.flash_bytes is None else self.flash_bytes // 1024

    @property
    def ram_kb(self) -> int | None:
        """Data RAM in KiB, what the arena plus stack must fit; None for generic."""
        return None if self.ram_bytes is None else self.ram_bytes // 1024

    @property
    def is_generic(self) -> bool:
        return self.qemu_machine is None

    def check_core(self, core: str) -> None:
        """EdgennError unless the board carries ``core`` (any core for generic)."""
        if self.core is not None and self.core != core:
            raise EdgennError(f"board {self.name!r} has a {self.core}, not a {core}: "
                              f"use --target {self.core} (or --board {GENERIC})")


BOARDS: dict[str, Board] = {
    GENERIC: Board(GENERIC, None, None, 0x0000_0000, None, 0x2000_0000, None, None,
                   description="the project's emulator layout: flash at 0, RAM at 0x20000000"),
    "mps2-an386": Board(
        "mps2-an386", "cortex-m4", "mps2-an386",
        flash_origin=0x0000_0000, flash_bytes=4 << 20,
        ram_origin=0x2000_0000, ram_bytes=4 << 20,
        uart="cmsdk-apb", uart_base=0x4000_4000, clock_hz=25_000_000,
        description="Arm MPS2 with the AN386 Cortex-M4 FPGA image"),
    "netduinoplus2": Board(
        "netduinoplus2", "cortex-m4", "netduinoplus2",
        flash_origin=0x0800_0000, flash_bytes=1 << 20,
        ram_origin=0x2000_0000, ram_bytes=128 << 10,
        uart="stm32-usart", uart_base=0x4001_1000, clock_hz=16_000_000,  # HSI after reset
        description="Netduino Plus 2 (STM32F405RG)"),
}


def get_board(name: str | Board) -> Board:
    """The board called ``name``; EdgennError listing the known boards otherwise."""
    if isinstance(name, Board):
        return name
    try:
        return BOARDS[name]
    except KeyError:
        raise EdgennError(f"unknown board {name!r} (known: {', '.join(BOARDS)})") from None
