"""A bare unicorn Cortex-M with memory, a return trap and fault capture (shared by Machine and
the snippet runner)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.cortexm.emulator.counter import BlockCounter, RunStats
from edgenn.backends.cortexm.emulator.deps import require
from edgenn.backends.cortexm.targets import Core

FLASH_BASE = 0x0000_0000
RAM_BASE = 0x2000_0000
SYSTEM_BASE = 0xE000_0000  # private peripheral bus (SCB, SysTick, NVIC): plain RAM here
SYSTEM_SIZE = 0x0010_0000
# why: code returns here (LR = TRAP | 1); emu_start(until=TRAP) stops before executing it. It
# sits in the code region just below RAM, far above any flash size we map.
TRAP = 0x1FFF_F000
PAGE = 0x1000


def round_up(n: int, to: int = PAGE) -> int:
    return (n + to - 1) // to * to


@dataclass
class MemoryFault:
    """An invalid access seen by the UC_HOOK_MEM_INVALID hook."""

    kind: str  # "read from unmapped memory", "write to read-only memory", ...
    address: int
    pc: int
    lr: int  # for a bad jump, the return address names the caller


class Board:
    """unicorn in Thumb M-profile mode with flash, RAM, the system region and the trap page."""

    def __init__(self, core: Core, flash_bytes: int, ram_bytes: int, max_instructions: int,
                 watch: dict[int, int] | None = None):
        self.unicorn = require("unicorn")
        self.arm = require("unicorn.arm_const")
        u = self.unicorn
        self.uc = u.Uc(u.UC_ARCH_ARM, u.UC_MODE_THUMB | u.UC_MODE_MCLASS)
        self.uc.ctl_set_cpu_model(getattr(self.arm, core.unicorn_cpu))
        self.flash_bytes = round_up(flash_bytes)
        self.ram_bytes = round_up(ram_bytes)
        self.uc.mem_map(FLASH_BASE, self.flash_bytes, u.UC_PROT_READ | u.UC_PROT_EXEC)
        self.uc.mem_map(RAM_BASE, self.ram_bytes, u.UC_PROT_ALL)
        self.uc.mem_map(SYSTEM_BASE, SYSTEM_SIZE, u.UC_PROT_READ | u.UC_PROT_WRITE)
        self.uc.mem_map(TRAP, PAGE, u.UC_PROT_READ | u.UC_PROT_EXEC)
        self.uc.mem_write(TRAP, b"\xfe\xe7")  # b .
        self.counter = BlockCounter(self.uc, self.arm, watch or {}, max_instructions)
        self.memory_fault: MemoryFault | None = None
        self.uc.hook_add(u.UC_HOOK_MEM_INVALID, self._on_invalid)

    def write_flash(self, address: int, data: bytes) -> None:
        self.uc.mem_write(address, data)

    def reg(self, name: str) -> int:
        return int(self.uc.reg_read(getattr(self.arm, f"UC_ARM_REG_{name.upper()}")))

    def set_reg(self, name: str, value: int) -> None:
        self.uc.reg_write(getattr(self.arm, f"UC_ARM_REG_{name.upper()}"), value)

    def read_word(self, address: int) -> int:
        return int.from_bytes(self.uc.mem_read(address, 4), "little")

    def run(self, entry: int, until: int) -> tuple[RunStats, Any]:
        """Run from ``entry`` (Thumb bit added) until PC == ``until``.

        Returns the counts and what stopped it early (a UcError or an error raised while
        pricing a block), None on a clean stop.
        """
        self.memory_fault = None
        counter = self.counter
        counter.start()
        # why count only when untimed: timed runs enforce the budget in the block callback
        # (counting there is free); untimed runs have no callback to count in
        count = 0 if counter.timed else counter.max_instructions
        error: BaseException | None = None
        try:
            self.uc.emu_start(entry | 1, until, count=count)
        except self.unicorn.UcError as err:
            error = err
        if counter.hook_error is not None:
            error = counter.hook_error
        pc = self.reg("pc")
        stats = counter.finish(pc)
        if (count and error is None and pc != until and stats.fault_handler is None
                and self.memory_fault is None):
            stats.budget_exceeded_at = pc  # unicorn stopped at its instruction count
        return stats, error

    def _on_invalid(self, uc: Any, access: int, address: int, size: int, value: int,
                    _data: Any) -> bool:
        u = self.unicorn
        kinds = {
            u.UC_MEM_READ_UNMAPPED: "read from unmapped memory",
            u.UC_MEM_WRITE_UNMAPPED: "write to unmapped memory",
            u.UC_MEM_FETCH_UNMAPPED: "jump to unmapped memory",
            u.UC_MEM_WRITE_PROT: "write to read-only memory",
            u.UC_MEM_READ_PROT: "read from protected memory",
            u.UC_MEM_FETCH_PROT: "jump to non-executable memory",
        }
        pc = int(uc.reg_read(self.arm.UC_ARM_REG_PC))
        lr = int(uc.reg_read(self.arm.UC_ARM_REG_LR))
        self.memory_fault = MemoryFault(kinds.get(access, f"bad access {access}"), address, pc, lr)
        return False
