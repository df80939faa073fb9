"""Instruction-stream builder in the spirit of VTA's runtime (``VTALoadBuffer2D``,
``VTAUopLoopBegin`` / ``VTAUopPush``, ``VTAPushGEMMOp`` / ``VTAPushALUOp``, ``VTADepPush`` /
``VTADepPop``, ``VTASynchronize``).

* ``load_2d`` / ``store_2d`` emit one 2-D strided DMA.
* A ``UopKernel`` is a micro-op list plus up to two loop levels (extent and dst / src / wgt
  index factors). ``gemm`` / ``alu`` make the kernel resident in the micro-op buffer (a LOAD UOP
  from its DRAM copy when it is not cached) and emit the instruction. Kernels are cached by
  value; when the buffer is full it is reused from the start (safe: micro-op loads and their
  users all run in order on the compute module).
* ``dep_push(a, b)`` sets a push flag on the last instruction stage ``a`` issued when it is free
  to take one, otherwise emits a no-op that pushes; ``dep_pop(a, b)`` is folded into the next
  instruction of stage ``b`` (a pending pop), as VTA's runtime does.
* ``finish()`` synchronises: it pops every token still outstanding, makes the load and store
  modules report to compute, then emits FINISH, so no token is left and nothing runs after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.dram import Dram
from edgenn.backends.vta.errors import VtaProgramError
from edgenn.backends.vta.isa import (
    LOOP_ITER_BITS,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    Opcode,
    Stage,
    Uop,
    encode_program,
)
from edgenn.backends.vta.sim import C2L, C2S, L2C, S2C


@dataclass(frozen=True)
class Loop:
    """One level of a micro-op loop: ``extent`` iterations, index factors per iteration."""

    extent: int
    dst: int = 0
    src: int = 0
    wgt: int = 0


@dataclass(frozen=True)
class UopKernel:
    """Micro-ops plus up to two loops (outer first): a reusable GEMM or ALU body."""

    uops: tuple[Uop, ...]
    loops: tuple[Loop, ...] = ()

    def __post_init__(self) -> None:
        if not self.uops:
            raise VtaProgramError("a micro-op kernel needs at least one micro-op")
        if len(self.loops) > 2:
            raise VtaProgramError(f"a micro-op kernel has at most 2 loops, got {len(self.loops)}")
        for loop in self.loops:
            if not 1 <= loop.extent < 1 << LOOP_ITER_BITS:
                raise VtaProgramError(f"loop extent {loop.extent} outside 1..16383")

    @property
    def executed(self) -> int:
        n = len(self.uops)
        for loop in self.loops:
            n *= loop.extent
        return n

    def _levels(self) -> tuple[Loop, Loop]:
        loops = (*self.loops, Loop(1), Loop(1))
        return loops[0], loops[1]


@dataclass(frozen=True)
class Program:
    """A finished instruction stream."""

    insns: tuple[Insn, ...]
    config: VtaConfig
    uop_loads: int = 0

    def encode(self) -> bytes:
        return encode_program(list(self.insns), self.config)

    def disassemble(self) -> str:
        return "\n".join(f"{i:6d}  {insn}" for i, insn in enumerate(self.insns))


_PUSH_FLAG = {True: "push_next", False: "push_prev"}  # key: towards a later stage?
_POP_FLAG = {True: "pop_prev", False: "pop_next"}  # key: from an earlier stage?
_QUEUE = {(Stage.LOAD, Stage.COMPUTE): L2C, (Stage.COMPUTE, Stage.LOAD): C2L,
          (Stage.COMPUTE, Stage.STORE): C2S, (Stage.STORE, Stage.COMPUTE): S2C}


@dataclass
class _UopCache:
    depth: int
    top: int = 0
    resident: dict[UopKernel, tuple[int, int]] = field(default_factory=dict)
    dram: dict[UopKernel, int] = field(default_factory=dict)  # kernel -> DRAM element base


class ProgramBuilder:
    """Emits instructions into a list; see the module docstring for the API's semantics."""

    def __init__(self, config: VtaConfig, dram: Dram) -> None:
        self.config = config
        self.dram = dram
        self.insns: list[Insn] = []
        self._last: dict[Stage, Insn | None] = dict.fromkeys(Stage)
        self._pending: dict[Stage, set[str]] = {s: set() for s in Stage}
        self._tokens: dict[str, int] = {q: 0 for q in _QUEUE.values()}
        self._uops = _UopCache(config.uop_depth)
        self.uop_loads = 0

    # ----- emission -----
    def _emit(self, insn: Insn) -> Insn:
        stage = insn.stage
        for flag in self._pending[stage]:
            setattr(insn, flag, True)
            self._count_pop(stage, flag)
        self._pending[stage].clear()
        self.insns.append(insn)
        self._last[stage] = insn
        return insn

    def _count_pop(self, stage: Stage, flag: str) -> None:
        src = Stage(stage - 1) if flag == "pop_prev" else Stage(stage + 1)
        queue = _QUEUE[(src, stage)]
        self._tokens[queue] -= 1  # may go negative for a while: a pop may precede its push

    def nop(self, stage: Stage) -> MemInsn:
        if stage == Stage.LOAD:
            insn = MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 0, 0, 0)
        elif stage == Stage.COMPUTE:
            insn = MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 0, 0, 0)
        else:
            insn = MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 0, 0, 0)
        self._emit(insn)
        return insn

    def load_2d(self, mem: MemType, sram: int, dram: int, y_size: int, x_size: int,
                x_stride: int, pad: tuple[int, int, int, int] = (0, 0, 0, 0)) -> MemInsn:
        """DRAM -> SRAM: ``y_size`` rows of ``x_size`` elements, rows ``x_stride`` apart in DRAM;
        ``pad`` = (y before, y after, x before, x after) rows / elements of zeros (no traffic)."""
        if x_size <= 0 or y_size <= 0:
            raise VtaProgramError(f"LOAD {mem.name}: empty transfer {y_size}x{x_size}")
        insn = MemInsn(Opcode.LOAD, mem, sram, dram, y_size, x_size, x_stride, *pad)
        self._emit(insn)
        return insn

    def store_2d(self, sram: int, dram: int, y_size: int, x_size: int, x_stride: int) -> MemInsn:
        """Output SRAM -> DRAM (low 8 bits of the accumulators), ``y_size`` x ``x_size``."""
        if x_size <= 0 or y_size <= 0:
            raise VtaProgramError(f"STORE: empty transfer {y_size}x{x_size}")
        insn = MemInsn(Opcode.STORE, MemType.OUT, sram, dram, y_size, x_size, x_stride)
        self._emit(insn)
        return insn

    def _resident(self, kernel: UopKernel) -> tuple[int, int]:
        cache = self._uops
        if kernel in cache.resident:
            return cache.resident[kernel]
        n = len(kernel.uops)
        if n > cache.depth:
            raise VtaProgramError(f"micro-op kernel of {n} micro-ops exceeds the {cache.depth}-"
                                  f"entry micro-op buffer")
        if kernel not in cache.dram:
            words = np.array([u.encode(self.config) for u in kernel.uops], dtype=np.uint32)
            base = self.dram.alloc_elems(MemType.UOP, n, "")
            self.dram.write_elems(MemType.UOP, base, words)
            cache.dram[kernel] = base
        if cache.top + n > cache.depth:  # reuse the buffer from the start
            cache.top = 0
            cache.resident.clear()
        bgn = cache.top
        cache.top += n
        # evict cached kernels that overlap the new placement
        for other, (b, e) in list(cache.resident.items()):
            if b < bgn + n and bgn < e:
                del cache.resident[other]
        cache.resident[kernel] = (bgn, bgn + n)
        self.load_2d(MemType.UOP, bgn, cache.dram[kernel], 1, n, n)
        self.uop_loads += 1
        return bgn, bgn + n

    def gemm(self, kernel: UopKernel, *, reset: bool = False) -> GemmInsn:
        """``acc[dst] += inp[src] @ wgt[wgt].T`` over the kernel (``acc[dst] = 0`` if ``reset``)."""
        bgn, end = self._resident(kernel)
        outer, inner = kernel._levels()
        insn = GemmInsn(bgn, end, outer.extent, inner.extent, outer.dst, inner.dst, outer.src,
                        inner.src, outer.wgt, inner.wgt, reset)
        self._emit(insn)
        return insn

    def alu(self, kernel: UopKernel, op: AluOp, imm: int | None = None) -> AluInsn:
        """``acc[dst] = op(acc[dst], imm)`` or ``op(acc[dst], acc[src])`` over the kernel."""
        bgn, end = self._resident(kernel)
        outer, inner = kernel._levels()
        insn = AluInsn(op, bgn, end, outer.extent, inner.extent, outer.dst, inner.dst,
                       outer.src, inner.src, imm is not None, 0 if imm is None else int(imm))
        self._emit(insn)
        return insn

    # ----- dependences -----
    def dep_push(self, src: Stage, dst: Stage) -> None:
        """After everything ``src`` has issued so far, give ``dst`` a token."""
        queue = _QUEUE[(src, dst)]
        flag = _PUSH_FLAG[dst > src]
        last = self._last[src]
        if self._pending[src] or last is None or getattr(last, flag):
            last = self.nop(src)  # carries the pending pops, if any, before the push
        setattr(last, flag, True)
        self._tokens[queue] += 1

    def dep_pop(self, src: Stage, dst: Stage) -> None:
        """Before ``dst``'s next instruction, wait for a token from ``src``."""
        _QUEUE[(src, dst)]  # validates the pair
        flag = _POP_FLAG[src < dst]
        if flag in self._pending[dst]:
            self.nop(dst)
        self._pending[dst].add(flag)

    def outstanding(self, src: Stage, dst: Stage) -> int:
        """Tokens pushed on the queue src -> dst and not yet popped (program order)."""
        return self._tokens[_QUEUE[(src, dst)]]

    def tokens(self, src: Stage, dst: Stage) -> TokenQueue:
        """A counted view of one queue: ``signal()`` returns token ids, ``wait(id)`` pops to it."""
        return TokenQueue(self, src, dst)

    # ----- end of program -----
    def finish(self) -> Program:
        """Synchronise (drain every queue, load and store report to compute) and FINISH."""
        short = {q: -n for q, n in self._tokens.items() if n < 0}
        if short:
            raise VtaProgramError("more pops than pushes on " + ", ".join(
                f"{q} ({n})" for q, n in short.items()) + ": the program would deadlock")
        for _ in range(self._tokens[C2L]):
            self.dep_pop(Stage.COMPUTE, Stage.LOAD)
            self.nop(Stage.LOAD)
        for _ in range(self._tokens[C2S]):
            self.dep_pop(Stage.COMPUTE, Stage.STORE)
            self.nop(Stage.STORE)
        for stage in (Stage.LOAD, Stage.STORE):
            if self._pending[stage]:
                self.nop(stage)
            self.dep_push(stage, Stage.COMPUTE)
        while self._tokens[L2C] or self._tokens[S2C]:
            if self._tokens[L2C]:
                self.dep_pop(Stage.LOAD, Stage.COMPUTE)
            if self._tokens[S2C]:
                self.dep_pop(Stage.STORE, Stage.COMPUTE)
            self.nop(Stage.COMPUTE)
        if self._pending[Stage.COMPUTE]:
            self.nop(Stage.COMPUTE)  # FINISH itself carries no pop (as in VTA's runtime)
        self._emit(FinishInsn())
        program = Program(tuple(self.insns), self.config, self.uop_loads)
        for insn in program.insns:  # every field must fit its bit width
            insn.encode(self.config)
        return program


class TokenQueue:
    """One dependence queue seen as a counter, so schedules can say *which* event they need.

    ``signal()`` pushes a token from ``src`` (after everything ``src`` has issued) and returns its
    id (0, 1, 2, ...). ``wait(id)`` makes ``dst``'s next instruction pop until token ``id`` has
    been received: tokens are FIFO, so waiting for a later one waits for all earlier ones too.
    ``wait(None)`` is a no-op (nothing to wait for yet).
    """

    def __init__(self, builder: ProgramBuilder, src: Stage, dst: Stage) -> None:
        self.builder, self.src, self.dst = builder, src, dst
        self.pushed = 0
        self.popped = 0

    def signal(self) -> int:
        self.builder.dep_push(self.src, self.dst)
        self.pushed += 1
        return self.pushed - 1

    def wait(self, token: int | None) -> None:
        if token is None:
            return
        if token >= self.pushed:
            raise VtaProgramError(f"waiting for token {token} of {self.src.name}->{self.dst.name} "
                                  f"before it is signalled ({self.pushed} so far)")
        while self.popped <= token:
            self.builder.dep_pop(self.src, self.dst)
            self.popped += 1
