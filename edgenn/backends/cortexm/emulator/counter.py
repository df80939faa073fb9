"""Counting instructions and cycles in unicorn with one UC_HOOK_BLOCK callback.

Each translation block unicorn reports is priced once (:func:`cycles.price_block`) and cached
by address. At run time the hook adds the block's static cost plus the dynamic parts:

- the previous block ended in a *conditional* PC-writer and this block does not start at its
  fall-through address: that branch was taken, add P (unconditional ones carry P statically);
- this block starts at the previous block's fall-through address and the previous block did not
  end in a branch (unicorn splits straight-line code at 1 KiB pages and at its block-size limit):
  the pipelining / address-generation interaction between the previous block's last instruction
  and this block's first is added, exactly as inside a block. After any branch (taken or not)
  there is nothing to carry: a branch is neither a load nor data processing.

So a program's cycle total does not depend on where unicorn happens to cut blocks.

Special addresses (``watch``) are checked only through the cached block entry, so the hot path
costs one tuple lookup per block: a layer mark records the counters on entry (before the mark
block's own cost, after the taken-branch penalty of the call into it), a fault handler stops
emulation. An instruction budget stops runaway loops.

Untimed runs (:meth:`BlockCounter.set_timed`): when only the outputs are wanted (``run``, not
``bench``), the per-block callback is removed and unicorn runs the translated code without
calling back into Python on every block, several times faster. What must still be seen is
watched by callbacks bounded to the watched addresses alone (a layer mark records
``(r0, 0, 0)``, so a fault still names its layer; a fault handler stops emulation), and the
budget becomes unicorn's own instruction count. The translation cache is flushed at each
switch, because translated blocks keep whatever hooks existed when they were translated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edgenn.backends.cortexm.emulator.cycles import (
    PIPELINE_REFILL,
    S_NONE,
    BlockCost,
    boundary_delta,
    price_block_shared,
)

WATCH_MARK = 1  # a layer-boundary function: record (r0, instructions, cycles)
WATCH_FAULT = 2  # a fault / default exception handler: stop and report


@dataclass
class RunStats:
    """What one emulation run counted."""

    instructions: int = 0
    cycles: int = 0
    marks: list[tuple[int, int, int]] = field(default_factory=list)  # (r0, instructions, cycles)
    fault_handler: int | None = None  # address of the handler that was entered
    fault_sp: int = 0  # SP on handler entry (the exception frame is there)
    fault_lr: int = 0  # LR on handler entry: EXC_RETURN (0xFFFFFFxx) if entered by an exception
    budget_exceeded_at: int | None = None  # PC of the block that went over the budget


class BlockCounter:
    """Attach to a ``Uc``; call :meth:`start` before each run, :meth:`finish` after it."""

    def __init__(self, uc: Any, arm_const: Any, watch: dict[int, int], max_instructions: int):
        self._uc = uc
        self._r0 = arm_const.UC_ARM_REG_R0
        self._sp = arm_const.UC_ARM_REG_SP
        self._lr = arm_const.UC_ARM_REG_LR
        self._watch = watch
        self._cache: dict[int, tuple[Any, ...]] = {}
        self.max_instructions = max_instructions
        self._stats = RunStats()
        self.hook_error: BaseException | None = None
        self._hook, self._reset, self._finish = self._make_hook()
        self._block_hook = _add_block_hook(uc, self._hook)
        self._watch_hooks: list[tuple[Any, Any]] = []
        self.timed = True

    def set_timed(self, timed: bool) -> None:
        """Count every block (True, the default) or run untimed (False): outputs only,
        instructions and cycles read 0; marks, fault handlers and the budget still apply."""
        if timed == self.timed:
            return
        if timed:
            for hook in self._watch_hooks:
                _del_hook(self._uc, hook)
            self._watch_hooks = []
            self._block_hook = _add_block_hook(self._uc, self._hook)
        else:
            _del_hook(self._uc, self._block_hook)
            self._watch_hooks = [_add_block_hook(self._uc, self._watch_hook, address, address)
                                 for address in self._watch]
        self._uc.ctl_flush_tb()
        self.timed = timed

    def _watch_hook(self, _handle: Any, address: int, _size: int, _data: Any) -> None:
        """The untimed runs' callback, called only at a watched address."""
        stats = self._stats
        if self._watch.get(address) == WATCH_MARK:
            stats.marks.append((self._uc.reg_read(self._r0), 0, 0))
            return
        stats.fault_handler = address
        stats.fault_sp = self._uc.reg_read(self._sp)
        stats.fault_lr = self._uc.reg_read(self._lr)
        self._uc.emu_stop()

    @property
    def blocks_priced(self) -> int:
        return len(self._cache)

    def start(self) -> None:
        """Zero the counters (the price cache is kept across runs)."""
        self._stats = RunStats()
        self.hook_error = None
        self._reset(self.max_instructions)

    def finish(self, stop_pc: int) -> RunStats:
        """Close the run that stopped at ``stop_pc`` and return its counts."""
        self._finish(stop_pc)
        return self._stats

    def _entry(self, address: int, size: int) -> tuple[Any, ...] | None:
        try:
            block = price_block_shared(bytes(self._uc.mem_read(address, size)), address)
        except Exception as err:  # noqa: BLE001 - why: a raw ctypes hook must not raise
            self.hook_error = err
            self._uc.emu_stop()
            return None
        carry = block if block.last.exit_state != S_NONE else None
        entry = (
            size,
            block.cycles,
            block.instructions,
            block.fallthrough,
            block.ends_in_conditional_branch,
            carry,
            self._watch.get(address, 0),
            block,
        )
        self._cache[address] = entry
        return entry

    def _make_hook(
        self,
    ) -> tuple[Callable[..., None], Callable[[int], None], Callable[[int], None]]:
        cache = self._cache
        new_entry = self._entry
        refill = PIPELINE_REFILL
        n = c = 0
        limit = 0
        prev_ft = -1
        prev_cond = False
        prev_carry: BlockCost | None = None

        uc = self._uc

        def hook(_handle: Any, address: int, size: int, _data: Any) -> None:
            nonlocal n, c, prev_ft, prev_cond, prev_carry
            e = cache.get(address)
            if e is None or e[0] != size:
                e = new_entry(address, size)
                if e is None:
                    return
            if address == prev_ft:
                if prev_carry is not None:
                    c += boundary_delta(prev_carry, e[7])
            elif prev_cond:
                c += refill
            if e[6]:
                stats = self._stats
                if e[6] == WATCH_MARK:
                    stats.marks.append((uc.reg_read(self._r0), n, c))
                else:
                    stats.fault_handler = address
                    stats.fault_sp = uc.reg_read(self._sp)
                    stats.fault_lr = uc.reg_read(self._lr)
                    uc.emu_stop()
                    return
            n += e[2]
            c += e[1]
            prev_ft = e[3]
            prev_cond = e[4]
            prev_carry = e[5]
            if n > limit:
                self._stats.budget_exceeded_at = address
                uc.emu_stop()

        def reset(max_instructions: int) -> None:
            nonlocal n, c, limit, prev_ft, prev_cond, prev_carry
            n = c = 0
            limit = max_instructions
            prev_ft, prev_cond, prev_carry = -1, False, None

        def finish(stop_pc: int) -> None:
            # why: unicorn does not run the block hook at emu_start's `until` address, so a
            # conditional return into it (e.g. `it eq; bxeq lr`) is settled here.
            nonlocal c, prev_cond
            if prev_cond and stop_pc != prev_ft:
                c += refill
            prev_cond = False
            self._stats.instructions, self._stats.cycles = n, c

        return hook, reset, finish


def _add_block_hook(uc: Any, hook: Callable[..., None], begin: int = 1,
                    end: int = 0) -> tuple[Any, Any]:
    """Register ``hook(handle, address, size, data)`` as a UC_HOOK_BLOCK callback for blocks
    starting in ``[begin, end]`` (``begin > end``: every block); returns ``(handle, thunk)``
    for :func:`_del_hook`.

    why: the binding's ``hook_add`` wraps every call in two extra Python frames (exception
    guard + argument adapter), which halves the block rate (1.8 M -> 3.9 M empty hook
    calls/s measured). We register a ctypes callback with the C library directly when the
    binding exposes it, and fall back to ``hook_add`` otherwise. The hook never raises.
    """
    from edgenn.backends.cortexm.emulator.deps import require

    unicorn = require("unicorn")
    try:
        import ctypes

        from unicorn.unicorn_py3 import unicorn as binding

        fptr = binding.HOOK_CODE_CFUNC(hook)
        handle = binding.uc_hook_h()
        status = binding.uclib.uc_hook_add(
            uc._uch, ctypes.byref(handle), unicorn.UC_HOOK_BLOCK, fptr, ctypes.c_void_p(0),
            ctypes.c_uint64(begin), ctypes.c_uint64(end))
        if status != unicorn.UC_ERR_OK:
            raise unicorn.UcError(status)
        return handle, fptr  # the thunk must stay alive as long as the hook
    except (ImportError, AttributeError):
        return uc.hook_add(unicorn.UC_HOOK_BLOCK, hook, begin=begin, end=end), None


def _del_hook(uc: Any, hook: tuple[Any, Any]) -> None:
    handle, thunk = hook
    if thunk is None:  # registered through the binding's hook_add
        uc.hook_del(handle)
        return
    from unicorn.unicorn_py3 import unicorn as binding

    binding.uclib.uc_hook_del(uc._uch, handle)
