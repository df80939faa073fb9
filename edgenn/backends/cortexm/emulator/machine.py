"""A loaded firmware ELF that runs ``NAME_invoke`` on demand, counting instructions and cycles.

Life cycle: ``Machine(elf, manifest, core)`` maps flash at 0x00000000 and RAM at 0x20000000,
loads the PT_LOAD segments, takes SP and the reset vector from the vector table and runs
Reset_Handler (.data copy, .bss zeroing) until PC == main, then the manifest's "init_symbol".
Each :meth:`Machine.invoke` then writes the inputs into the arena (or, for an input the
library reads from the caller's buffer, into the buffer the manifest names: the
application's, outside the arena), paints the stack, calls
``NAME_invoke`` (manifest "invoke_symbol") with LR = a trap address and runs until it returns
there. One Machine serves any number of invokes; the block
price cache persists across them.

Layer attribution: ``edgenn_mark(i)`` is called just before layer i and ``edgenn_mark(n)``
after the last layer. Layer i is charged with everything from the entry of ``edgenn_mark(i)``
up to the entry of ``edgenn_mark(i + 1)``: the mark function's own body and return, the layer's
kernel, and the argument set-up and BL of the next mark call. What runs before the first mark
(the prologue of NAME_invoke) and from the final mark on (its body, the epilogue, the return)
is in the totals only, so ``sum(layer_cycles) <= cycles``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.cortexm.emulator.board import FLASH_BASE, RAM_BASE, TRAP, Board, round_up
from edgenn.backends.cortexm.emulator.counter import WATCH_FAULT, WATCH_MARK, RunStats
from edgenn.backends.cortexm.emulator.elf import ElfImage
from edgenn.backends.cortexm.emulator.faults import EmulatorFault
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import EdgennError, ShapeError

STACK_PAINT = 0xDEADBEEF
BOOT_BUDGET = 100_000_000
_N_SYSTEM_VECTORS = 16  # initial SP, Reset, NMI, HardFault, ... SysTick


@dataclass(frozen=True)
class InvokeResult:
    """One inference: output bytes (manifest order) and what it cost."""

    outputs: list[bytes]
    instructions: int  # 0 for an untimed run
    cycles: int | None  # None unless timed on a core with the cycle model (Core.cycle_model)
    layer_cycles: list[int]  # zeros when cycles is None
    layer_instructions: list[int]
    stack_bytes: int  # stack high-water mark of NAME_invoke (painted-region scan)


@dataclass(frozen=True)
class CallResult:
    """One call of a firmware function: its return value (r0) and what the call cost."""

    value: int
    cycles: int | None  # None unless the core has the cycle model
    instructions: int
    stack_bytes: int = 0  # stack high-water mark of the call (painted-region scan)


class Machine:
    """Firmware loaded into unicorn, ready for many :meth:`invoke` calls."""

    def __init__(self, elf_path: str | Path, manifest: dict[str, Any], core: Core, *,
                 max_instructions: int = 1_000_000_000):
        self.core = core
        self.manifest = manifest
        self.max_instructions = max_instructions
        self.elf = ElfImage(elf_path)
        sym = self.elf.symbol
        self._invoke = sym(manifest.get("invoke_symbol", "edgenn_invoke"))
        self._arena = sym(manifest.get("arena_symbol", "edgenn_arena"))
        main = sym(manifest.get("main_symbol", "main"))
        # why optional: an application built without the layer hook has no marks (whole
        # inferences are still counted)
        mark_name = manifest.get("mark_symbol", "edgenn_mark")
        mark = sym(mark_name) if mark_name else None
        self._n_layers = len(manifest.get("layers", []))

        flash_end = max((s.paddr + len(s.data) for s in self.elf.segments
                         if s.paddr < RAM_BASE), default=0)
        vectors = self._vector_table()
        initial_sp = vectors[0]
        self._estack = self.elf.symbols.get("_estack", initial_sp)
        self._sstack = self.elf.symbols.get(
            "_sstack", self._estack - int(manifest.get("stack_bytes", 8192)))
        ram_end = max([self._estack] + [s.paddr + s.memsz for s in self.elf.segments
                                        if s.paddr >= RAM_BASE])
        watch = {addr: WATCH_FAULT for addr in self._fault_handlers(vectors)}
        if mark is not None:
            watch[mark] = WATCH_MARK
        self.board = Board(
            core,
            flash_bytes=max(core.flash_kb * 1024, round_up(flash_end)),
            # why the ELF's and not the core's: the linker script's RAM is the device's
            # (--ram-kb), smaller or larger; an access past it faults here as on the part
            ram_bytes=round_up(ram_end - RAM_BASE),
            max_instructions=max_instructions,
            watch=watch,
        )
        for seg in self.elf.segments:
            self.board.write_flash(seg.paddr, seg.data)
        self.board.set_reg("sp", initial_sp)
        self._run(vectors[1] & ~1, main, "Reset_Handler", BOOT_BUDGET)
        init = manifest.get("init_symbol")
        if init:  # the library's init (the emulator calls the model itself, main never runs)
            status = self.call(str(init)).value
            if status != 0:
                raise EdgennError(f"firmware {self.elf.path.name}: {init}() returned status "
                                  f"{status - (1 << 32) if status >> 31 else status}")

    # ----------------------------------------------------------------------------- public API
    def invoke(self, inputs: list[bytes], timed: bool = True) -> InvokeResult:
        """Run one inference on raw input bytes (one buffer per manifest input).

        ``timed=False``: outputs only, several times faster (``BlockCounter.set_timed``):
        instructions and cycles read 0, faults and the instruction budget still apply. Later
        :meth:`call` s run in the same mode."""
        self.set_timed(timed)
        specs = self.manifest.get("inputs", [])
        if len(inputs) != len(specs):
            raise ShapeError(f"firmware {self.elf.path.name} takes {len(specs)} input(s), "
                             f"got {len(inputs)}")
        uc = self.board.uc
        for spec, data in zip(specs, inputs, strict=True):
            if len(data) != int(spec["bytes"]):
                raise ShapeError(f"input {spec.get('name', '?')!r} of {self.elf.path.name} needs "
                                 f"{spec['bytes']} bytes, got {len(data)}")
            uc.mem_write(self.input_address(spec), bytes(data))
        self._paint_stack()
        self.board.set_reg("xpsr", 0x0100_0000)  # Thumb, no IT state left by an earlier fault
        self.board.set_reg("sp", self._estack)
        self.board.set_reg("lr", TRAP | 1)
        stats = self._run(self._invoke, TRAP, "edgenn_invoke", self.max_instructions)
        outputs = [bytes(uc.mem_read(self._arena + int(s["offset"]), int(s["bytes"])))
                   for s in self.manifest.get("outputs", [])]
        layer_cycles, layer_insns = self._attribute(stats)
        with_cycles = self.core.cycle_model and timed
        return InvokeResult(
            outputs=outputs,
            instructions=stats.instructions,
            cycles=stats.cycles if with_cycles else None,
            layer_cycles=layer_cycles if with_cycles else [0] * len(layer_cycles),
            layer_instructions=layer_insns,
            stack_bytes=self._stack_high_water(),
        )

    def input_address(self, spec: dict[str, Any]) -> int:
        """Where the manifest input ``spec`` is written: its arena offset, or its own buffer
        (``symbol``) when the library reads it from the caller's buffer."""
        if spec.get("in_arena", True):
            return self._arena + int(spec["offset"])
        if not spec.get("symbol"):
            raise EdgennError(f"firmware {self.elf.path.name}: input {spec.get('name', '?')!r} "
                              "is the caller's buffer and the application names none")
        return self.elf.symbol(str(spec["symbol"])) + int(spec["offset"])

    def call(self, symbol: str, *args: int) -> CallResult:
        """Call the firmware function ``symbol`` with up to four integer arguments (r0-r3,
        AAPCS) on a fresh stack and run it until it returns; e.g.
        ``call("model_set_skip_mask", 2)``. The cost counts from its first instruction to
        its return (the caller's argument set-up and BL are not included)."""
        if len(args) > 4:
            raise EdgennError(f"{symbol}: at most 4 register arguments, got {len(args)}")
        try:
            entry = self.elf.symbol(symbol)
        except EdgennError:
            raise EdgennError(f"firmware {self.elf.path.name} has no function {symbol!r}") \
                from None
        for k, value in enumerate(args):
            self.board.set_reg(f"r{k}", int(value) & 0xFFFF_FFFF)
        self._paint_stack()
        self.board.set_reg("xpsr", 0x0100_0000)
        self.board.set_reg("sp", self._estack)
        self.board.set_reg("lr", TRAP | 1)
        stats = self._run(entry & ~1, TRAP, symbol, self.max_instructions)
        timed = self.core.cycle_model and self.timed
        return CallResult(self.board.reg("r0"), stats.cycles if timed else None,
                          stats.instructions, self._stack_high_water(symbol))

    def set_timed(self, timed: bool) -> None:
        """Count instructions and cycles in what runs next (True) or run untimed (False)."""
        self.board.counter.set_timed(timed)

    @property
    def timed(self) -> bool:
        return bool(self.board.counter.timed)

    def address(self, symbol: str) -> int:
        """Address of a firmware symbol (a one-line EdgennError if the ELF has none)."""
        return self.elf.symbol(symbol)

    def read(self, symbol: str, nbytes: int, offset: int = 0) -> bytes:
        """``nbytes`` of memory at ``symbol + offset`` (e.g. a static array's contents)."""
        return bytes(self.board.uc.mem_read(self.address(symbol) + offset, nbytes))

    def write(self, symbol: str, data: bytes, offset: int = 0) -> None:
        """Write ``data`` at ``symbol + offset`` (e.g. fill a static input array)."""
        self.board.uc.mem_write(self.address(symbol) + offset, bytes(data))

    def elf_sizes(self) -> dict[str, int]:
        """flash_bytes (.text+.rodata+.data image), ram_bytes (.data+.bss+stack), sections."""
        return self.elf.sizes((self._sstack, self._estack))

    @property
    def blocks_priced(self) -> int:
        return self.board.counter.blocks_priced

    # ---------------------------------------------------------------------------- internals
    def _vector_table(self) -> list[int]:
        image = next((s for s in self.elf.segments if s.paddr == FLASH_BASE), None)
        if image is None or len(image.data) < 8 * 4:
            raise EdgennError(f"{self.elf.path}: no vector table at 0x00000000")
        n = min(_N_SYSTEM_VECTORS, len(image.data) // 4)
        return [int.from_bytes(image.data[4 * i:4 * i + 4], "little") for i in range(n)]

    def _fault_handlers(self, vectors: list[int]) -> set[int]:
        reset = vectors[1] & ~1
        found = {v & ~1 for v in vectors[2:] if v}
        for name in ("HardFault_Handler", "Default_Handler"):
            if name in self.elf.symbols:
                found.add(self.elf.symbols[name] & ~1)
        return found - {reset}

    def _run(self, entry: int, until: int, what: str, budget: int) -> RunStats:
        counter = self.board.counter
        counter.max_instructions = budget
        stats, error = self.board.run(entry, until)
        pc = self.board.reg("pc")
        where = self._where
        layer = self._current_layer(stats)
        if self.board.memory_fault is not None:
            f = self.board.memory_fault
            if f.kind.startswith("jump"):  # PC is the bad target: name the caller instead
                caller = (f.lr & ~1) - 2
                raise EmulatorFault(f"{f.kind} at 0x{f.address:08x}, called from "
                                    f"{where(caller)}{layer}", caller, self.elf.function_at(caller))
            raise EmulatorFault(f"{f.kind} at 0x{f.address:08x} in {where(f.pc)}{layer}",
                                f.pc, self.elf.function_at(f.pc))
        if stats.fault_handler is not None:
            handler = self.elf.function_at(stats.fault_handler)
            if stats.fault_lr >> 8 == 0xFFFFFF:  # EXC_RETURN: the frame holds the faulting PC
                origin = self._stacked_pc(stats.fault_sp)
            else:  # called or jumped to directly
                origin = (stats.fault_lr & ~1) - 2
            raise EmulatorFault(f"{handler} reached from {where(origin)}{layer}",
                                origin, self.elf.function_at(origin))
        if stats.budget_exceeded_at is not None:
            raise EmulatorFault(f"runaway: more than {budget:,} instructions in {what}, "
                                f"stopped in {where(pc)}{layer}", pc, self.elf.function_at(pc))
        if error is not None or pc != until:
            raise EmulatorFault(f"{error or 'stopped'} in {where(pc)}{layer}",
                                pc, self.elf.function_at(pc))
        return stats

    def _where(self, pc: int) -> str:
        return f"{self.elf.function_at(pc)} (pc 0x{pc:08x})"

    def _stacked_pc(self, sp: int) -> int:
        try:  # the exception frame: r0 r1 r2 r3 r12 lr pc xpsr
            return self.board.read_word(sp + 24) & ~1
        except self.board.unicorn.UcError:
            return self.board.reg("pc")

    def _current_layer(self, stats: RunStats) -> str:
        layers = self.manifest.get("layers", [])
        if not stats.marks or not layers:
            return ""
        index = stats.marks[-1][0]
        if index < len(layers):
            return f", layer {index} ({layers[index].get('name', '?')})"
        return ""

    def _attribute(self, stats: RunStats) -> tuple[list[int], list[int]]:
        marks = stats.marks
        n = self._n_layers or max((m[0] for m in marks), default=0)
        cycles, insns = [0] * n, [0] * n
        for (index, n0, c0), (_, n1, c1) in zip(marks, marks[1:], strict=False):
            if index < n:
                cycles[index] += c1 - c0
                insns[index] += n1 - n0
        return cycles, insns

    def _paint_stack(self) -> None:
        stack_size = self._estack - self._sstack
        self.board.uc.mem_write(self._sstack,
                                STACK_PAINT.to_bytes(4, "little") * (stack_size // 4))

    def _stack_high_water(self, what: str = "edgenn_invoke") -> int:
        raw = self.board.uc.mem_read(self._sstack, self._estack - self._sstack)
        words = np.frombuffer(bytes(raw), dtype="<u4")
        touched = np.flatnonzero(words != STACK_PAINT)
        if touched.size == 0:
            return 0
        if touched[0] == 0:
            raise EmulatorFault(
                f"stack overflow: {what} used all {self._estack - self._sstack} bytes "
                f"between _sstack 0x{self._sstack:08x} and _estack 0x{self._estack:08x}")
        return int(self._estack - (self._sstack + 4 * int(touched[0])))
