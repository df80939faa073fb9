"""Run a foreign bare-metal ELF (not built by edgenn) from reset to its breakpoint, counted.

Used to measure peers in the same emulator and under the same cycle model as edgenn's own
firmware, e.g. the TensorFlow Lite Micro + CMSIS-NN builds of
``shared/baselines/tflm_cmsis_nn_m4/``. The protocol such a firmware follows:

- flash at 0x00000000 with the initial SP and the reset vector in its first two words, RAM
  at 0x20000000 (the same map as edgenn's firmware; ``Board``);
- it calls a global function (``mark`` by default; argument in r0) around the region to time:
  every entry of it is recorded as ``(r0, instructions, cycles)``, on entry, exactly as
  edgenn's layer marks are, so the cycles between two marks compare with edgenn's figures;
- it stops on ``bkpt`` (the immediate says why; the TFLM harness uses 0 for success), by
  returning from the reset handler, or (``halt_symbol``) when the PC reaches a named function
  (the operator-fixture harness's ``edgenn_halt``, a ``bkpt`` loop).

Nothing is written into the image: the firmware runs on the inputs embedded in it, or on what
:meth:`Firmware.write` put into RAM before the run (the operator-fixture harness reads its
input from a fixed address); read its results afterwards with :meth:`Firmware.read`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgenn.backends.cortexm.emulator.board import RAM_BASE, TRAP, Board, round_up
from edgenn.backends.cortexm.emulator.counter import WATCH_FAULT, WATCH_MARK
from edgenn.backends.cortexm.emulator.elf import ElfImage
from edgenn.backends.cortexm.emulator.faults import EmulatorFault
from edgenn.backends.cortexm.targets import Core, get_core
from edgenn.errors import EdgennError

EXCP_BKPT = 7  # QEMU's exception number for BKPT, as passed to unicorn's interrupt hook
_BKPT_MASK, _BKPT_OPCODE = 0xFF00, 0xBE00  # Thumb BKPT #imm8
_FAULT_HANDLER_NAMES = ("HardFault_Handler", "Default_Handler", "MemManage_Handler",
                        "BusFault_Handler", "UsageFault_Handler")


@dataclass(frozen=True)
class FirmwareRun:
    """One run from reset to the breakpoint."""

    instructions: int
    cycles: int
    marks: list[tuple[int, int, int]] = field(default_factory=list)  # (r0, instructions, cycles)
    breakpoint: int | None = None  # BKPT immediate; None if the reset handler returned
    stop_pc: int = 0
    halted: bool = False  # True: stopped on reaching ``halt_symbol``

    def cycles_between(self, first: int = 0, second: int = 1) -> int:
        """Cycles from the first ``mark(first)`` to the next ``mark(second)`` after it."""
        for k, (arg, _n, c0) in enumerate(self.marks):
            if arg != first:
                continue
            for arg2, _n2, c1 in self.marks[k + 1:]:
                if arg2 == second:
                    return c1 - c0
        raise EdgennError(f"the firmware never called mark({first}) then mark({second}) "
                          f"(marks: {[m[0] for m in self.marks]})")

    def instructions_between(self, first: int = 0, second: int = 1) -> int:
        """Instructions from the first ``mark(first)`` to the next ``mark(second)``."""
        for k, (arg, n0, _c) in enumerate(self.marks):
            if arg != first:
                continue
            for arg2, n1, _c1 in self.marks[k + 1:]:
                if arg2 == second:
                    return n1 - n0
        raise EdgennError(f"the firmware never called mark({first}) then mark({second})")


class Firmware:
    """A foreign firmware ELF loaded into the emulator; :meth:`run` boots it once."""

    def __init__(self, elf_path: str | Path, core: str | Core = "cortex-m4", *,
                 mark_symbol: str = "mark", halt_symbol: str | None = None,
                 max_instructions: int = 2_000_000_000):
        self.core = core if isinstance(core, Core) else get_core(core)
        self.elf = ElfImage(elf_path)
        self.max_instructions = max_instructions
        image = next((s for s in self.elf.segments if s.paddr == 0), None)
        if image is None or len(image.data) < 8:
            raise EdgennError(f"{self.elf.path}: no vector table at 0x00000000")
        self._initial_sp = int.from_bytes(image.data[0:4], "little")
        self._reset = int.from_bytes(image.data[4:8], "little") & ~1
        self._halt = self.elf.symbol(halt_symbol) & ~1 if halt_symbol else None
        watch = {self.elf.symbol(mark_symbol): WATCH_MARK}
        # why: only named handlers are watched. A minimal vector table (SP + reset, as in the
        # TFLM harness) is followed by code, so its later words are not handler addresses.
        for name in _FAULT_HANDLER_NAMES:
            if name in self.elf.symbols:
                watch.setdefault(self.elf.symbols[name] & ~1, WATCH_FAULT)
        flash_end = max((s.paddr + len(s.data) for s in self.elf.segments
                         if s.paddr < RAM_BASE), default=0)
        ram_end = max([self._initial_sp] + [s.paddr + s.memsz for s in self.elf.segments
                                            if s.paddr >= RAM_BASE])
        self.board = Board(
            self.core,
            flash_bytes=max(self.core.flash_kb * 1024, round_up(flash_end)),
            ram_bytes=max(self.core.ram_kb * 1024, round_up(ram_end - RAM_BASE)),
            max_instructions=max_instructions, watch=watch)
        self._interrupt: int | None = None
        self.board.uc.hook_add(self.board.unicorn.UC_HOOK_INTR, self._on_interrupt)
        self._ran = False
        self._ram_writes: list[tuple[int, bytes]] = []

    def write(self, address: int, data: bytes) -> None:
        """Put ``data`` at ``address`` (RAM) before the run, after the image is loaded."""
        if self._ran:
            raise EdgennError(f"{self.elf.path.name}: write before run()")
        ram = RAM_BASE, RAM_BASE + self.board.ram_bytes
        if not (ram[0] <= address and address + len(data) <= ram[1]):
            raise EdgennError(f"{self.elf.path.name}: 0x{address:08x}+{len(data)} is not in RAM")
        self._ram_writes.append((address, bytes(data)))

    def run(self) -> FirmwareRun:
        """Boot from the reset vector and run until BKPT (or the reset handler returns)."""
        if self._ran:
            raise EdgennError(f"{self.elf.path.name}: a Firmware runs once; load it again")
        self._ran = True
        for seg in self.elf.segments:
            self.board.write_flash(seg.paddr, seg.data)
        for address, data in self._ram_writes:
            self.board.uc.mem_write(address, data)
        self._interrupt = None
        self.board.set_reg("sp", self._initial_sp)
        self.board.set_reg("lr", TRAP | 1)
        stop = TRAP if self._halt is None else self._halt
        stats, error = self.board.run(self._reset, stop)
        pc = self.board.reg("pc")
        where = f"{self.elf.function_at(pc)} (pc 0x{pc:08x})"
        if self.board.memory_fault is not None:
            f = self.board.memory_fault
            raise EmulatorFault(f"{f.kind} at 0x{f.address:08x} in "
                                f"{self.elf.function_at(f.pc)} (pc 0x{f.pc:08x})",
                                f.pc, self.elf.function_at(f.pc))
        if stats.fault_handler is not None:
            raise EmulatorFault(f"{self.elf.function_at(stats.fault_handler)} entered",
                                stats.fault_handler)
        if stats.budget_exceeded_at is not None:
            raise EmulatorFault(f"runaway: more than {self.max_instructions:,} instructions, "
                                f"stopped in {where}", pc, self.elf.function_at(pc))
        breakpoint_imm = None
        if self._halt is not None and self._interrupt is None and error is None \
                and pc == self._halt:
            return FirmwareRun(stats.instructions, stats.cycles, list(stats.marks), None, pc,
                               halted=True)
        if self._interrupt is not None:
            halfword = int.from_bytes(self.board.uc.mem_read(pc, 2), "little")
            if self._interrupt != EXCP_BKPT or halfword & _BKPT_MASK != _BKPT_OPCODE:
                raise EmulatorFault(f"exception {self._interrupt} in {where}", pc,
                                    self.elf.function_at(pc))
            breakpoint_imm = halfword & 0xFF
        elif error is not None or pc != TRAP:
            raise EmulatorFault(f"{error or 'stopped'} in {where}", pc, self.elf.function_at(pc))
        return FirmwareRun(stats.instructions, stats.cycles, list(stats.marks),
                           breakpoint_imm, pc)

    def read(self, symbol: str, nbytes: int | None = None, offset: int = 0) -> bytes:
        """Memory at ``symbol + offset`` now (after :meth:`run`: the firmware's results);
        ``nbytes`` defaults to the symbol's size."""
        if nbytes is None:
            nbytes = self.symbol_size(symbol) - offset
        return bytes(self.board.uc.mem_read(self.elf.symbol(symbol) + offset, nbytes))

    def read_word(self, symbol: str) -> int:
        return int.from_bytes(self.read(symbol, 4), "little")

    def symbol_size(self, symbol: str) -> int:
        """``st_size`` of a FUNC / OBJECT symbol (a one-line EdgennError if it has none)."""
        for sym in self.elf.sized_symbols:
            if sym.name == symbol:
                return sym.size
        raise EdgennError(f"{self.elf.path}: no sized symbol {symbol!r}")

    def image_bytes(self, symbol: str, nbytes: int | None = None) -> bytes:
        """The initial contents of a symbol stored in the ELF (e.g. an embedded input), read
        from the loadable segments without running anything."""
        address = self.elf.symbol(symbol)
        n = self.symbol_size(symbol) if nbytes is None else nbytes
        for seg in self.elf.segments:
            if seg.paddr <= address and address + n <= seg.paddr + len(seg.data):
                return seg.data[address - seg.paddr:address - seg.paddr + n]
        raise EdgennError(f"{self.elf.path}: {symbol!r} is not stored in a loadable segment")

    def sizes(self) -> dict[str, int]:
        """text / rodata / data / bss and flash_bytes (text + rodata + data) of the ELF."""
        return self.elf.sizes()

    def _on_interrupt(self, uc: Any, intno: int, _data: Any) -> None:
        self._interrupt = intno
        uc.emu_stop()
