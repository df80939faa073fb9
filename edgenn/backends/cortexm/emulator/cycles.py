"""The Cortex-M4 cycle model of docs/cycle_model.md, priced one basic block at a time.

Every instruction gets a *static* cost from the timing table (Arm DDI 0439, table 3-1, zero wait
states). Interactions between neighbouring instructions (load pipelining, the address-generation
stall) are resolved inside a block when it is first priced; what can only be known at run time
(was the branch ending the previous block taken? does this block continue the previous one
without a branch?) is added by :mod:`counter` with :func:`boundary_delta`.

Rules, as stated in the shared file:

- data processing, multiplies (MUL/MLA/MLS, long and all DSP multiplies), SIMD add/sub,
  SXTB16/SXTAB16, PKHBT/PKHTB, IT, NOP: 1
- SDIV/UDIV: 12 (TRM worst case)
- single load (LDR/LDRB/LDRH/LDRSB/LDRSH, also LDREX*/LDR*T): 2, or 1 directly after a single load
  whose destination is not one of this load's address registers
- single store, immediate offset: 1; register offset: 2, or 1 directly after a single load
- LDRD/STRD 3; LDM/STM/PUSH/POP 1 + N; VLDR/VSTR 2 (3 for a D register);
  VPUSH/VPOP/VLDM/VSTM 1 + number of 32-bit words
- branches: not taken 1; taken B/Bcc/CBZ/CBNZ/BL/BX/BLX 1 + P; POP/LDM with PC 1 + N + P
  (N counts PC); LDR pc 2 + P; TBB/TBH 2 + P; MOV/ADD writing PC 1 + P (TRM); P = 2
- +1 when a load/store's base or index register was written by the immediately preceding
  data-processing instruction ("data processing" here = any instruction that is not a load,
  store or branch and writes a core register: ALU, shifts, moves, extends, multiplies, divides,
  saturates, VMOV core<-FP)
- condition-failed instructions (inside IT blocks) cost their static cost; they also take part in
  the pipelining/stall interactions as if executed (the model does not look at the flags).

FP data processing is not in the shared file. ASSUMED values, from the Cortex-M4 TRM FPU table
(DDI 0439, section 7.2.3): VADD/VSUB/VMUL/VNMUL/VABS/VNEG/VCMP/VCVT/VMOV/VMRS/VMSR 1,
VMOV of two core registers <-> a D register or two S registers 2, VMLA/VMLS/VNMLA/VNMLS and the
fused VFMA/VFMS/VFNMA/VFNMS 3, VDIV 14, VSQRT 14.

Branch taken-ness: an *unconditional* PC-writing instruction is always taken, so its P is part of
the block's static cost (this also prices a BL to the very next address correctly). A
*conditional* one (Bcc, CBZ/CBNZ, or any PC-writer inside an IT block) is taken exactly when the
next executed block does not start at this block's fall-through address.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

PIPELINE_REFILL = 2  # P of the shared timing file

# Instruction classes (small ints: the per-block hook compares them cheaply).
K_OTHER = 0  # data processing / FP / anything priced by a fixed number
K_LOAD = 1  # single load (can pipeline after a single load)
K_STORE_IMM = 2  # single store with immediate offset
K_STORE_REG = 3  # single store with register offset
K_MEM_OTHER = 4  # LDRD/STRD, LDM/STM/PUSH/POP, VLDR/VSTR, VLDM/VSTM/VPUSH/VPOP
K_BRANCH = 5  # any PC-writing instruction

# Exit state of an instruction, seen by the next instruction.
S_NONE = 0
S_LOAD = 1  # a single load; payload = destination register name
S_DP = 2  # data processing writing core registers; payload = frozenset of their names

_SINGLE_LOADS = frozenset({
    "ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "ldrt", "ldrbt", "ldrht", "ldrsbt", "ldrsht",
    "ldrex", "ldrexb", "ldrexh", "lda", "ldab", "ldah", "ldaex", "ldaexb", "ldaexh",
})
_SINGLE_STORES = frozenset({
    "str", "strb", "strh", "strt", "strbt", "strht", "strex", "strexb", "strexh", "stl", "stlb",
    "stlh", "stlex", "stlexb", "stlexh",
})
_DOUBLE = frozenset({"ldrd", "strd"})
_MULTI = frozenset({
    "ldm", "ldmia", "ldmdb", "ldmda", "ldmib", "stm", "stmia", "stmdb", "stmda", "stmib", "push",
    "pop",
})
_VMULTI = frozenset(["vldmia", "vldmdb", "vstmia", "vstmdb", "vpush", "vpop", "vldm", "vstm"])
_VSINGLE = frozenset({"vldr", "vstr"})
_DIVIDES = frozenset({"sdiv", "udiv"})
_BRANCHES = frozenset({"b", "bl", "blx", "bx", "cbz", "cbnz", "tbb", "tbh"})
_FP_COSTS = {  # ASSUMED (TRM FPU table), see the module docstring
    "vdiv": 14, "vsqrt": 14,
    "vmla": 3, "vmls": 3, "vnmla": 3, "vnmls": 3,
    "vfma": 3, "vfms": 3, "vfnma": 3, "vfnms": 3,
}
_CORE_REGS = frozenset(f"r{i}" for i in range(13)) | {"sp", "lr", "r13", "r14", "sb", "sl", "fp",
                                                       "ip"}
_ALIASES = {"sb": "r9", "sl": "r10", "fp": "r11", "ip": "r12", "r13": "sp", "r14": "lr"}
_CC_AL = 15  # capstone ARM_CC_AL
_OP_REG = 1  # capstone ARM_OP_REG
_OP_MEM = 3  # capstone ARM_OP_MEM


def _reg(name: str) -> str:
    return _ALIASES.get(name, name)


@dataclass(frozen=True)
class Insn:
    """One decoded instruction with what the cycle model needs to know about it."""

    address: int
    size: int
    text: str
    kind: int
    cost: int  # static cost before neighbour interactions
    conditional_branch: bool  # a PC-writer whose taken-ness is decided at run time
    address_regs: frozenset[str]  # base and index of a load/store
    exit_state: int
    exit_regs: frozenset[str]


@dataclass(frozen=True)
class BlockCost:
    """A basic block's static price and what the run-time boundary logic needs."""

    address: int
    size: int
    instructions: int
    cycles: int
    ends_in_conditional_branch: bool
    first: Insn
    last: Insn

    @property
    def fallthrough(self) -> int:
        return self.address + self.size


def interaction(prev_state: int, prev_regs: frozenset[str], insn: Insn) -> int:
    """Cycles to add to ``insn`` (negative for pipelining) given the previous instruction."""
    if prev_state == S_LOAD:
        if insn.kind == K_LOAD and not (prev_regs & insn.address_regs):
            return -1  # pipelined behind the previous load
        if insn.kind == K_STORE_REG:
            return -1
        return 0
    if prev_state == S_DP and insn.address_regs and (prev_regs & insn.address_regs):
        return 1  # address-generation stall
    return 0


def boundary_delta(prev: BlockCost, block: BlockCost) -> int:
    """Interaction across a block boundary when ``block`` directly continues ``prev``."""
    last = prev.last
    return interaction(last.exit_state, last.exit_regs, block.first)


# why ``ops`` is passed: each read of capstone's ``insn.operands`` copies the detail structure
def _operand_regs(insn: Any, ops: list[Any]) -> list[str]:
    return [_reg(insn.reg_name(op.reg)) for op in ops if op.type == _OP_REG]


def _mem_regs(insn: Any, ops: list[Any]) -> frozenset[str]:
    regs: set[str] = set()
    for op in ops:
        if op.type == _OP_MEM:
            for r in (op.mem.base, op.mem.index):
                if r:
                    regs.add(_reg(insn.reg_name(r)))
    return frozenset(regs)


def classify(insn: Any) -> Insn:
    """Price one capstone instruction (decoded with ``detail = True``)."""
    name = insn.insn_name()
    ops = insn.operands
    regs = _operand_regs(insn, ops)
    _, written_ids = insn.regs_access()
    written = frozenset(_reg(insn.reg_name(r)) for r in written_ids)
    conditional = insn.cc != _CC_AL
    kind, cost, addr_regs = K_OTHER, 1, frozenset[str]()
    exit_state, exit_regs = S_NONE, frozenset[str]()
    writes_pc = "pc" in written

    if name in _SINGLE_LOADS:
        addr_regs = _mem_regs(insn, ops)
        if regs and regs[0] == "pc":
            kind, cost = K_BRANCH, 2
        else:
            kind, cost, exit_state, exit_regs = K_LOAD, 2, S_LOAD, frozenset(regs[:1])
    elif name in _SINGLE_STORES:
        addr_regs = _mem_regs(insn, ops)
        has_index = any(op.type == _OP_MEM and op.mem.index for op in ops)
        kind, cost = (K_STORE_REG, 2) if has_index else (K_STORE_IMM, 1)
    elif name in _DOUBLE:
        kind, cost, addr_regs = K_MEM_OTHER, 3, _mem_regs(insn, ops)
    elif name in _MULTI:
        if name in ("push", "pop"):
            base, listed = "sp", regs
        else:
            base, listed = regs[0], regs[1:]
        kind, cost, addr_regs = K_MEM_OTHER, 1 + len(listed), frozenset({base})
        if "pc" in listed:
            kind = K_BRANCH
    elif name in _VMULTI:
        if name in ("vpush", "vpop"):
            base, listed = "sp", regs
        else:
            base, listed = regs[0], regs[1:]
        words = sum(2 if r.startswith("d") else 1 for r in listed)
        kind, cost, addr_regs = K_MEM_OTHER, 1 + words, frozenset({base})
    elif name in _VSINGLE:
        cost = 3 if regs and regs[0].startswith("d") else 2
        kind, addr_regs = K_MEM_OTHER, _mem_regs(insn, ops)
    elif name in _BRANCHES:
        kind, cost = K_BRANCH, 2 if name in ("tbb", "tbh") else 1
        addr_regs = _mem_regs(insn, ops) if name in ("tbb", "tbh") else frozenset()
        conditional = conditional or name in ("cbz", "cbnz")
    elif writes_pc:  # MOV pc / ADD pc
        kind = K_BRANCH
    else:
        if name in _DIVIDES:
            cost = 12
        elif name in _FP_COSTS:
            cost = _FP_COSTS[name]
        elif name == "vmov" and len(regs) >= 3:
            cost = 2  # two core registers <-> D register or two S registers
        core_written = written & _CORE_REGS
        if core_written:
            exit_state, exit_regs = S_DP, frozenset(core_written)

    if kind == K_BRANCH and not conditional:
        cost += PIPELINE_REFILL  # always taken: refill is static
    return Insn(
        address=insn.address,
        size=insn.size,
        text=f"{insn.mnemonic} {insn.op_str}".strip(),
        kind=kind,
        cost=cost,
        conditional_branch=kind == K_BRANCH and conditional,
        address_regs=addr_regs,
        exit_state=exit_state,
        exit_regs=exit_regs,
    )


_local = threading.local()  # why per thread: a capstone handle keeps state (the IT block)


def _disassembler(detail: bool = True) -> Any:
    """This thread's capstone handle (Thumb, M-profile), with or without detail."""
    handles = getattr(_local, "handles", None)
    if handles is None:
        from edgenn.backends.cortexm.emulator.deps import require

        capstone = require("capstone")
        handles = _local.handles = {}
        for d in (True, False):
            md = capstone.Cs(capstone.CS_ARCH_ARM,
                             capstone.CS_MODE_THUMB | capstone.CS_MODE_MCLASS)
            md.detail = d
            handles[d] = md
    return handles[detail]


def decode(code: bytes, address: int) -> list[Insn]:
    """Decode and classify every instruction of ``code`` (Thumb, M-profile) at ``address``."""
    return [classify(i) for i in _disassembler().disasm(code, address)]


def price_block(code: bytes, address: int) -> BlockCost:
    """Static price of a straight-line block, including its internal interactions.

    The first instruction is priced as if the block was entered by a taken branch (no
    neighbour); :func:`boundary_delta` corrects it when the block continues its predecessor.
    """
    insns = decode(code, address)
    decoded = sum(i.size for i in insns)
    if not insns or decoded != len(code):
        from edgenn.backends.cortexm.emulator.faults import EmulatorFault

        raise EmulatorFault(
            f"cannot decode the instructions at 0x{address + decoded:08x} (block 0x{address:08x})"
        )
    cycles = insns[0].cost
    for prev, cur in zip(insns, insns[1:], strict=False):
        cycles += cur.cost + interaction(prev.exit_state, prev.exit_regs, cur)
    return BlockCost(
        address=address,
        size=len(code),
        instructions=len(insns),
        cycles=cycles,
        ends_in_conditional_branch=insns[-1].conditional_branch,
        first=insns[0],
        last=insns[-1],
    )


# What ``classify`` says of an instruction but its address and text, by (encoding, mnemonic):
# kind, cost, conditional_branch, address_regs, exit_state, exit_regs.
_Price = tuple[int, int, bool, frozenset[str], int, frozenset[str]]
_classified: dict[tuple[bytes, str], _Price] = {}
_CLASSIFIED = 1 << 16


def _price_of(insn: Insn) -> _Price:
    return (insn.kind, insn.cost, insn.conditional_branch, insn.address_regs, insn.exit_state,
            insn.exit_regs)


def _insn(address: int, size: int, text: str, p: _Price) -> Insn:
    return Insn(address, size, text, p[0], p[1], p[2], p[3], p[4], p[5])


def price_block_memoised(code: bytes, address: int) -> BlockCost:
    """:func:`price_block`, equal to it field by field, classifying each instruction once per
    process by its encoding and mnemonic.

    Why that key is enough: nothing :func:`classify` prices reads an address (a PC-relative
    load's base is ``pc`` whatever its target, a branch's target is not read), and the one
    piece of context capstone carries from instruction to instruction, the IT block, shows in
    the mnemonic (``addeq`` in an IT block, ``adds`` outside it) -- the state is reset at
    each ``disasm`` call, which here as in :func:`decode` is one block. A block is listed
    with capstone's light decode (no detail: address, size, mnemonic, operand text, which
    give each instruction's exact ``text``); only a block with an instruction not seen yet is
    decoded with detail, and only those instructions are classified.

    Unrolled kernels repeat a few encodings thousands of times, so most blocks of a firmware
    (and nearly all of a second candidate build's) are priced without detail."""
    listed = list(_disassembler(False).disasm_lite(code, address))
    decoded = sum(x[1] for x in listed)
    if not listed or decoded != len(code):
        return price_block(code, address)  # the reference raises the fault
    memo = _classified
    keys = [(code[a - address:a - address + n], m) for a, n, m, _ in listed]
    if any(k not in memo for k in keys):
        if len(memo) > _CLASSIFIED:  # bounded (a long-lived process)
            memo.clear()
        if not _classify_missing(code, address, listed, keys):
            return price_block(code, address)  # never seen: the two decodes disagree
    prices = [memo[k] for k in keys]
    cycles = 0
    prev: _Price | None = None
    for p in prices:
        cycles += p[1]
        if prev is not None:
            if prev[4] == S_LOAD:
                if (p[0] == K_LOAD and not (prev[5] & p[3])) or p[0] == K_STORE_REG:
                    cycles -= 1  # see interaction()
            elif prev[4] == S_DP and p[3] and (prev[5] & p[3]):
                cycles += 1
        prev = p

    def text(x: tuple[int, int, str, str]) -> str:
        return f"{x[2]} {x[3]}".strip()

    first, last = listed[0], listed[-1]
    return BlockCost(
        address=address,
        size=len(code),
        instructions=len(listed),
        cycles=cycles,
        ends_in_conditional_branch=prices[-1][2],
        first=_insn(first[0], first[1], text(first), prices[0]),
        last=_insn(last[0], last[1], text(last), prices[-1]),
    )


def _classify_missing(code: bytes, address: int, listed: list[tuple[int, int, str, str]],
                      keys: list[tuple[bytes, str]]) -> bool:
    """Classify (into the memo) the instructions of ``listed`` whose key is not in it, each
    decoded with detail from where capstone's decode of the whole block has the same
    context: the instruction itself, or the IT instruction whose block it is in. False when
    a detailed decode does not match the light one."""
    md = _disassembler()
    memo = _classified
    it_at, it_left = 0, 0  # the IT instruction governing the current one, slots left
    for j, (a, _n, m, _) in enumerate(listed):
        start = it_at if it_left else j
        it_left = max(0, it_left - 1)
        if m.startswith("it") and _IT.fullmatch(m):
            it_at, it_left = j, len(m) - 1
        if keys[j] in memo:
            continue
        offset = listed[start][0] - address
        detailed = list(md.disasm(code[offset:a - address + _n], listed[start][0]))
        insn = detailed[-1] if detailed else None
        if insn is None or len(detailed) != j - start + 1 or (insn.address, insn.mnemonic) != (
                a, m):
            return False
        memo[keys[j]] = _price_of(classify(insn))
    return True


_IT = re.compile(r"it[te]{0,3}")

_SHARED_BLOCKS = 1 << 16


@lru_cache(maxsize=_SHARED_BLOCKS)
def _price_code(code: bytes, address: int) -> BlockCost:
    return price_block_memoised(code, address)


_seen_at: dict[bytes, int] = {}  # where each cached block was first priced


def price_block_shared(code: bytes, address: int) -> BlockCost:
    """:func:`price_block`, shared by every emulator of the process: a block's price follows
    from its bytes alone (no rule above reads an address), so the same code at another address
    (the flash policy's and ``--fuse auto``'s candidate builds share their kernels, runtime and
    most layers) is decoded once and rebased (``address``, ``first`` / ``last``; an
    instruction's ``text``, for messages only, keeps the first placement's branch target)."""
    if len(_seen_at) > _SHARED_BLOCKS:  # bounded like the price cache (a long-lived process)
        _seen_at.clear()
    first_at = _seen_at.setdefault(code, address)
    block = _price_code(code, first_at)
    if first_at == address:
        return block
    shift = address - first_at
    return replace(block, address=address, first=replace(block.first, address=address),
                   last=replace(block.last, address=block.last.address + shift))


def sequence_cycles(code: bytes, address: int = 0) -> int:
    """Cycles of a straight-line sequence executed once, no branch taken (for tests and docs)."""
    block = price_block(code, address)
    return block.cycles
