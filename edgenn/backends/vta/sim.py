"""Functional simulator of the accelerator, run by the event-driven timing model.

Semantics follow VTA's functional simulator (``fsim``): LOAD is a 2-D strided copy with zero
padding, STORE writes the low 8 bits of the accumulators (wraps, never saturates), GEMM
accumulates ``inp[src] @ wgt[wgt].T`` into ``acc[dst]`` in int32 (wrapping), ALU applies
MIN / MAX / ADD / SHR / MUL with an accumulator or a signed 16-bit immediate operand. As in
the HLS design, every GEMM / ALU write to ``acc[i]`` also writes ``out[i]`` (its low byte):
STORE reads the output buffer, so a program must not change an accumulator before the STORE
that reads it has completed.

The three modules (load, compute, store) run their own instruction streams in order and meet
only through the four dependence-token queues. ``run`` executes instructions in the order of
their simulated start times, so the functional result is the one the timed hardware would
produce; wrong token usage shows up as a deadlock, as tokens left at FINISH, or as a race
between two modules on one SRAM region (``races.py``).
Big GEMM / ALU instructions are executed with numpy over all their micro-ops at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.dram import Dram
from edgenn.backends.vta.errors import VtaProgramError
from edgenn.backends.vta.isa import (
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    Opcode,
    Stage,
    uop_fields,
)
from edgenn.backends.vta.races import Access, RaceChecker
from edgenn.backends.vta.timing import (
    Channel,
    SimStats,
    compute_cycles,
    dma_cost,
    insn_kind,
)

# token queues, named by (producer, consumer)
L2C, C2L, C2S, S2C = "load->compute", "compute->load", "compute->store", "store->compute"
_POPS = {  # stage -> {flag: queue}
    Stage.LOAD: {"pop_next": C2L},
    Stage.COMPUTE: {"pop_prev": L2C, "pop_next": S2C},
    Stage.STORE: {"pop_prev": C2S},
}
_PUSHES = {
    Stage.LOAD: {"push_next": L2C},
    Stage.COMPUTE: {"push_prev": C2L, "push_next": C2S},
    Stage.STORE: {"push_prev": S2C},
}
_MODULE = {Stage.LOAD: "load", Stage.COMPUTE: "compute", Stage.STORE: "store"}


def describe(index: int, insn: Insn) -> str:
    return f"#{index} {insn_kind(insn)}"


@dataclass
class Sram:
    """The on-chip buffers, in elements."""

    uop: npt.NDArray[np.uint32]
    inp: npt.NDArray[np.int8]
    wgt: npt.NDArray[np.int8]
    acc: npt.NDArray[np.int32]
    out: npt.NDArray[np.int8]

    @classmethod
    def zeros(cls, config: VtaConfig) -> Sram:
        return cls(
            uop=np.zeros(config.uop_depth, np.uint32),
            inp=np.zeros((config.inp_depth, 16), np.int8),
            wgt=np.zeros((config.wgt_depth, 16, 16), np.int8),
            acc=np.zeros((config.acc_depth, 16), np.int32),
            out=np.zeros((config.acc_depth, 16), np.int8),
        )

    def buffer(self, mem: MemType) -> np.ndarray:
        buffers: dict[MemType, np.ndarray] = {
            MemType.UOP: self.uop, MemType.INP: self.inp, MemType.WGT: self.wgt,
            MemType.ACC: self.acc, MemType.OUT: self.out}
        return buffers[mem]


class Machine:
    """DRAM plus SRAM plus the functional semantics of each instruction."""

    def __init__(self, config: VtaConfig, dram: Dram | None = None) -> None:
        self.config = config
        self.dram = dram if dram is not None else Dram(config)
        self.sram = Sram.zeros(config)
        (self._dst_off, self._dst_w), (self._src_off, self._src_w), (self._wgt_off, self._wgt_w) = (
            uop_fields(config))
        self._decode_cache: dict[tuple[object, ...], _Decoded] = {}

    # ----- functional semantics -----
    def execute(self, index: int, insn: Insn) -> list[Access]:
        """Run one instruction; return the SRAM ranges it touched (for the race checker)."""
        if isinstance(insn, MemInsn):
            if insn.x_size == 0:
                return []
            if insn.opcode == Opcode.LOAD:
                return self._load(index, insn)
            return self._store(index, insn)
        if isinstance(insn, GemmInsn):
            return self._gemm(index, insn)
        if isinstance(insn, AluInsn):
            return self._alu(index, insn)
        return []

    def _dram_rows(self, index: int, insn: MemInsn, length: int) -> npt.NDArray[np.int64]:
        """DRAM element indices of a 2-D access, shape (y_size, x_size)."""
        rows = insn.dram_base + np.arange(insn.y_size, dtype=np.int64)[:, None] * insn.x_stride
        idx = rows + np.arange(insn.x_size, dtype=np.int64)[None, :]
        if insn.y_size > 1 and insn.x_stride < insn.x_size and insn.opcode == Opcode.STORE:
            raise VtaProgramError(f"{describe(index, insn)}: x_stride {insn.x_stride} < x_size "
                                  f"{insn.x_size} makes STORE rows overlap")
        if int(idx.max()) >= length:
            raise VtaProgramError(f"{describe(index, insn)}: DRAM element {int(idx.max())} beyond "
                                  f"the {length} allocated")
        return idx

    def _load(self, index: int, insn: MemInsn) -> list[Access]:
        if insn.mem_type == MemType.OUT:
            raise VtaProgramError(f"{describe(index, insn)}: LOAD cannot target the output buffer")
        sram = self.sram.buffer(insn.mem_type)
        xtotal = insn.x_pad0 + insn.x_size + insn.x_pad1
        ytotal = insn.y_pad0 + insn.y_size + insn.y_pad1
        end = insn.sram_base + xtotal * ytotal
        if end > len(sram):
            raise VtaProgramError(f"{describe(index, insn)}: SRAM [{insn.sram_base}, {end}) beyond "
                                  f"the {insn.mem_type.name} buffer's {len(sram)} elements")
        src = self.dram.elems(insn.mem_type)
        n = insn.y_size * insn.x_size
        if xtotal == insn.x_size and ytotal == insn.y_size and (
                insn.y_size == 1 or insn.x_stride == insn.x_size):  # one contiguous run
            if insn.dram_base + n > len(src):
                raise VtaProgramError(f"{describe(index, insn)}: DRAM element "
                                      f"{insn.dram_base + n - 1} beyond the {len(src)} allocated")
            sram[insn.sram_base:end] = src[insn.dram_base:insn.dram_base + n]
        else:
            data = src[self._dram_rows(index, insn, len(src))]
            region = sram[insn.sram_base:end].reshape(ytotal, xtotal, *sram.shape[1:])
            if xtotal != insn.x_size or ytotal != insn.y_size:
                region[...] = 0
            region[insn.y_pad0:insn.y_pad0 + insn.y_size,
                   insn.x_pad0:insn.x_pad0 + insn.x_size] = data
        if insn.mem_type == MemType.UOP:
            self._decode_cache.clear()  # expanded micro-op loops may be stale now
        return [(insn.mem_type.name.lower(), insn.sram_base, end - 1, True)]

    def _store(self, index: int, insn: MemInsn) -> list[Access]:
        if insn.mem_type != MemType.OUT:
            raise VtaProgramError(f"{describe(index, insn)}: STORE only reads the output buffer")
        if insn.y_pad0 or insn.y_pad1 or insn.x_pad0 or insn.x_pad1:
            raise VtaProgramError(f"{describe(index, insn)}: STORE has no padding")
        n = insn.y_size * insn.x_size
        if insn.sram_base + n > len(self.sram.out):
            raise VtaProgramError(f"{describe(index, insn)}: SRAM [{insn.sram_base}, "
                                  f"{insn.sram_base + n}) beyond the output buffer")
        dst = self.dram.elems(MemType.OUT)
        idx = self._dram_rows(index, insn, len(dst))
        dst[idx] = self.sram.out[insn.sram_base:insn.sram_base + n].reshape(
            insn.y_size, insn.x_size, 16)
        return [("out", insn.sram_base, insn.sram_base + n - 1, False)]

    def _decoded(self, index: int, insn: GemmInsn | AluInsn) -> _Decoded:
        """The micro-op loop nest expanded to index arrays, in execution order (outer, inner,
        micro-op), with what the checks and the vectorised execution need. Cached until the
        next LOAD UOP: schedules reuse a handful of kernels thousands of times."""
        key = (type(insn), insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in,
               insn.dst_factor_out, insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in,
               getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0))
        hit = self._decode_cache.get(key)
        if hit is not None:
            return hit
        if not 0 <= insn.uop_bgn <= insn.uop_end <= len(self.sram.uop):
            raise VtaProgramError(f"{describe(index, insn)}: micro-ops [{insn.uop_bgn}, "
                                  f"{insn.uop_end}) outside the micro-op buffer")
        words = self.sram.uop[insn.uop_bgn:insn.uop_end].astype(np.int64)
        o = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
        i = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]

        def field(off: int, width: int, fo: int, fi: int) -> np.ndarray:
            base = (words >> off) & ((1 << width) - 1)
            return (base[None, None, :] + o * fo + i * fi).ravel()

        dst = field(self._dst_off, self._dst_w, insn.dst_factor_out, insn.dst_factor_in)
        src = field(self._src_off, self._src_w, insn.src_factor_out, insn.src_factor_in)
        wgt = (field(self._wgt_off, self._wgt_w, insn.wgt_factor_out, insn.wgt_factor_in)
               if isinstance(insn, GemmInsn) else src[:0])
        decoded = _Decoded.of(dst, src, wgt)
        self._decode_cache[key] = decoded
        return decoded

    def _check_range(self, index: int, insn: Insn, name: str, top: int, depth: int) -> None:
        if top >= depth:
            raise VtaProgramError(f"{describe(index, insn)}: {name} index {top} out of "
                                  f"range (buffer depth {depth})")

    def _gemm(self, index: int, insn: GemmInsn) -> list[Access]:
        if insn.uops_executed == 0:
            return []
        u = self._decoded(index, insn)
        dst = u.dst
        self._check_range(index, insn, "acc", u.dst_span[1], len(self.sram.acc))
        writes = [("acc", *u.dst_span, True), ("out", *u.dst_span, True)]
        if insn.reset:
            self.sram.acc[dst] = 0
            self.sram.out[dst] = 0
            return writes
        self._check_range(index, insn, "inp", u.src_span[1], len(self.sram.inp))
        self._check_range(index, insn, "wgt", u.wgt_span[1], len(self.sram.wgt))
        if u.hazard is not None:
            # the GEMM pipeline has no forwarding: a micro-op must not write the accumulator
            # written by either of the two micro-ops before it
            raise VtaProgramError(f"{describe(index, insn)}: micro-op {u.hazard} writes "
                                  f"acc[{dst[u.hazard]}] within two micro-ops of a previous "
                                  f"write (no forwarding)")
        # exact in float32: one dot of 16 int8 x int8 products is below 2**24
        x = self.sram.inp[u.src].astype(np.float32)
        w = self.sram.wgt[u.wgt].astype(np.float32)
        prod = np.matmul(w, x[:, :, None])[:, :, 0].astype(np.int64)
        self._accumulate(u, prod)
        return [("inp", *u.src_span, False), ("wgt", *u.wgt_span, False), *writes]

    def _accumulate(self, u: _Decoded, values: np.ndarray) -> None:
        acc, out = self.sram.acc, self.sram.out
        if u.inverse is None:  # every destination once
            total = acc[u.dst].astype(np.int64) + values
            acc[u.dst] = total.astype(np.int32)  # wraps modulo 2**32
            out[u.dst] = acc[u.dst].astype(np.int8)
            return
        lanes = values.shape[1]
        flat = (u.inverse[:, None] * lanes + np.arange(lanes)[None, :]).ravel()
        # float64 sums are exact: |sum| < 2**53 for any buffer-sized instruction
        sums = np.bincount(flat, weights=values.ravel().astype(np.float64),
                           minlength=u.uniq.size * lanes).reshape(u.uniq.size, lanes)
        total = acc[u.uniq].astype(np.int64) + sums.astype(np.int64)
        acc[u.uniq] = total.astype(np.int32)
        out[u.uniq] = acc[u.uniq].astype(np.int8)

    def _alu(self, index: int, insn: AluInsn) -> list[Access]:
        if insn.uops_executed == 0:
            return []
        u = self._decoded(index, insn)
        dst, src = u.dst, u.src
        touched: list[Access] = [("acc", *u.dst_span, True), ("out", *u.dst_span, True)]
        depth = len(self.sram.acc)
        self._check_range(index, insn, "acc dst", u.dst_span[1], depth)
        if not insn.use_imm:
            self._check_range(index, insn, "acc src", u.src_span[1], depth)
            touched.append(("acc", *u.src_span, False))
        acc = self.sram.acc
        if u.inverse is None and (insn.use_imm or u.src_is_dst or not u.src_meets_dst):
            operand = (np.full((dst.size, 16), insn.imm, np.int64) if insn.use_imm
                       else acc[src].astype(np.int64))
            acc[dst] = alu_apply(insn.alu_op, acc[dst].astype(np.int64), operand)
            self.sram.out[dst] = acc[dst].astype(np.int8)
            return touched
        for d, s in zip(dst.tolist(), src.tolist(), strict=True):  # order matters: sequential
            operand = (np.full(16, insn.imm, np.int64) if insn.use_imm
                       else acc[s].astype(np.int64))
            acc[d] = alu_apply(insn.alu_op, acc[d].astype(np.int64), operand)
            self.sram.out[d] = acc[d].astype(np.int8)
        return touched


@dataclass(frozen=True)
class _Decoded:
    """One expanded micro-op loop nest and facts about it, computed once."""

    dst: np.ndarray
    src: np.ndarray
    wgt: np.ndarray
    dst_span: tuple[int, int]
    src_span: tuple[int, int]
    wgt_span: tuple[int, int]
    uniq: np.ndarray
    inverse: np.ndarray | None  # None: every destination appears once
    hazard: int | None  # first micro-op writing an accumulator written 1 or 2 micro-ops before
    src_is_dst: bool
    src_meets_dst: bool

    @classmethod
    def of(cls, dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> _Decoded:
        uniq, inverse = np.unique(dst, return_inverse=True)
        near = np.concatenate([np.flatnonzero(dst[1:] == dst[:-1]) + 1,
                               np.flatnonzero(dst[2:] == dst[:-2]) + 2])

        def span(x: np.ndarray) -> tuple[int, int]:
            return (int(x.min()), int(x.max())) if x.size else (0, -1)

        return cls(dst, src, wgt, span(dst), span(src), span(wgt), uniq,
                   None if uniq.size == dst.size else inverse,
                   int(near.min()) if near.size else None,
                   bool(np.array_equal(src, dst)), bool(np.isin(src, dst).any()))


def alu_apply(op: AluOp, x: np.ndarray, y: np.ndarray) -> npt.NDArray[np.int32]:
    """One ALU operation on int64-widened int32 lanes, wrapped back to int32 (fsim semantics)."""
    if op == AluOp.MIN:
        r = np.minimum(x, y)
    elif op == AluOp.MAX:
        r = np.maximum(x, y)
    elif op == AluOp.ADD:
        r = x + y
    elif op == AluOp.MUL:
        r = x * y
    elif op == AluOp.SHR:
        # the shift amount is 5 bits of magnitude: right for y >= 0, left for y < 0
        amount = np.minimum(np.abs(y), 31)
        r = np.where(y >= 0, x >> amount, x << amount)
    else:  # pragma: no cover - AluOp is closed
        raise VtaProgramError(f"unknown ALU opcode {op}")
    return (r & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def run(machine: Machine, program: list[Insn], *, functional: bool = True,
        trace: bool = False) -> SimStats:
    """Run ``program`` on ``machine``: timing always, data too unless ``functional=False``."""
    config = machine.config
    plan = [_route(index, insn) for index, insn in enumerate(program)]
    streams: dict[Stage, deque[int]] = {s: deque() for s in Stage}
    for index, (stage, _, _) in enumerate(plan):
        streams[stage].append(index)
    if not any(isinstance(i, FinishInsn) for i in program):
        raise VtaProgramError("program has no FINISH")
    tokens: dict[str, deque[int]] = {q: deque() for q in (L2C, C2L, C2S, S2C)}
    free = dict.fromkeys(Stage, 0)
    busy = dict.fromkeys(Stage, 0)
    read, write = Channel(), Channel()
    stats = SimStats(instructions=len(program), trace=[] if trace else None)
    stats.dram_bytes["insn"] = len(program) * config.insn_bytes
    max_tokens = dict.fromkeys(tokens, 0)
    last: dict[Stage, int | None] = dict.fromkeys(Stage)
    fetch = _Fetch(config, [p[0] for p in plan])
    races = RaceChecker()
    active = [s for s in Stage if streams[s]]
    while active:
        best_start = best_index = -1
        best_stage = Stage.LOAD
        for stage in active:
            index = streams[stage][0]
            start = fetch.time[index]
            if start < 0:
                continue  # not fetched yet
            if free[stage] > start:
                start = free[stage]
            for queue in plan[index][1]:
                waiting = tokens[queue]
                if not waiting:
                    break
                if waiting[0] > start:
                    start = waiting[0]
            else:
                if best_index < 0 or (start, index) < (best_start, best_index):
                    best_start, best_index, best_stage = start, index, stage
        if best_index < 0:
            raise VtaProgramError(_deadlock_message(streams, tokens, program, plan, fetch))
        start, index, stage = best_start, best_index, best_stage
        streams[stage].popleft()
        fetch.started(stage, start)
        if not streams[stage]:
            active.remove(stage)
        insn = program[index]
        _, pops, pushes = plan[index]
        for queue in pops:
            tokens[queue].popleft()
        end = _timed(config, insn, start, read, write, stats)
        if functional:
            touched = machine.execute(index, insn)
            if touched:
                races.record(index, insn_kind(insn), _MODULE[stage], start, end, touched)
        for queue in pushes:
            tokens[queue].append(end)
            if len(tokens[queue]) > max_tokens[queue]:
                max_tokens[queue] = len(tokens[queue])
                if max_tokens[queue] > config.token_queue_depth:
                    raise VtaProgramError(
                        f"{describe(index, insn)}: {max_tokens[queue]} tokens waiting in "
                        f"{queue}, deeper than the hardware queue ({config.token_queue_depth}): "
                        f"the producer would stall")
        free[stage] = end
        busy[stage] += end - start
        if end > stats.cycles:
            stats.cycles = end
        if stats.trace is not None:
            stats.trace.append((index, _MODULE[stage], start, end))
        last[stage] = index
        if isinstance(insn, FinishInsn):
            pending = [describe(streams[s][0], program[streams[s][0]]) for s in active]
            pending += [describe(i, program[i]) for s in Stage
                        if free[s] > end and (i := last[s]) is not None]
            left = {q: len(t) for q, t in tokens.items() if t}
            if pending:
                raise VtaProgramError(f"{describe(index, insn)} at cycle {end} with "
                                      f"{', '.join(pending)} still to run (synchronise first)")
            if left:
                raise VtaProgramError(f"{describe(index, insn)}: tokens left in "
                                      f"{', '.join(f'{q} ({n})' for q, n in left.items())}")
    stats.busy = {_MODULE[s]: busy[s] for s in Stage}
    stats.max_tokens = max_tokens
    for insn in program:
        kind = insn_kind(insn)
        stats.insn_counts[kind] = stats.insn_counts.get(kind, 0) + 1
    return stats


def _timed(config: VtaConfig, insn: Insn, start: int, read: Channel, write: Channel,
           stats: SimStats) -> int:
    if isinstance(insn, MemInsn):
        cost = dma_cost(config, insn)
        if insn.x_size:
            key = insn.mem_type.name.lower()
            stats.dram_bytes[key] += cost.dram_bytes
        channel = write if insn.opcode == Opcode.STORE else read
        return channel.transfer(start, cost, config.dispatch)
    if isinstance(insn, GemmInsn):
        n = insn.uops_executed
        if insn.reset:
            stats.gemm_reset_uops += n
        else:
            stats.gemm_uops += n
        return start + compute_cycles(config, insn)
    if isinstance(insn, AluInsn):
        stats.alu_uops += insn.uops_executed
        return start + compute_cycles(config, insn)
    return start + config.dispatch


_ROUTES = {  # (stage, pop_prev, pop_next, push_prev, push_next) -> (pops, pushes) or None
    (stage, pp, pn, up, un): (
        tuple(q for f, q in _POPS[stage].items() if {"pop_prev": pp, "pop_next": pn}[f]),
        tuple(q for f, q in _PUSHES[stage].items() if {"push_prev": up, "push_next": un}[f]))
    if all(not v or f in _POPS[stage] or f in _PUSHES[stage] for f, v in
           (("pop_prev", pp), ("pop_next", pn), ("push_prev", up), ("push_next", un)))
    else None
    for stage in Stage for pp in (False, True) for pn in (False, True) for up in (False, True)
    for un in (False, True)
}


def _route(index: int, insn: Insn) -> tuple[Stage, tuple[str, ...], tuple[str, ...]]:
    """The instruction's module and the token queues it pops and pushes (checked once)."""
    stage = insn.stage
    route = _ROUTES[(stage, bool(insn.pop_prev), bool(insn.pop_next), bool(insn.push_prev),
                     bool(insn.push_next))]
    if route is None:
        bad = [f for f in ("pop_prev", "pop_next", "push_prev", "push_next")
               if getattr(insn, f) and f not in _POPS[stage] and f not in _PUSHES[stage]]
        raise VtaProgramError(f"{describe(index, insn)}: {bad[0]} has no queue on the "
                              f"{_MODULE[stage]} module")
    if (isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD and insn.x_size
            and insn.y_size == 0):
        raise VtaProgramError(f"{describe(index, insn)}: y_size 0 with x_size {insn.x_size}")
    return stage, route[0], route[1]


class _Fetch:
    """The fetch module: reads the program in order, one instruction per bus-width of 16 bytes
    per cycle after the first read latency, into each module's command queue; it blocks while
    the queue of the next instruction is full (``cmd_queue_depth``)."""

    def __init__(self, config: VtaConfig, stages: list[Stage]) -> None:
        self.stages = stages
        self.depth = config.cmd_queue_depth
        self.step = -(-config.insn_bytes // config.bus_bytes)
        self.clock = config.dram_read_latency
        self.next = 0
        self.time = [-1] * len(stages)  # fetch cycle of each instruction, -1: not yet
        self.queued = dict.fromkeys(Stage, 0)
        self._advance()

    def _advance(self) -> None:
        while self.next < len(self.stages):
            stage = self.stages[self.next]
            if self.queued[stage] >= self.depth:
                return
            self.clock += self.step
            self.time[self.next] = self.clock
            self.queued[stage] += 1
            self.next += 1

    def started(self, stage: Stage, cycle: int) -> None:
        """An instruction of ``stage`` left its queue at ``cycle``: the fetch may go on."""
        self.queued[stage] -= 1
        if self.next < len(self.stages) and self.stages[self.next] == stage:
            self.clock = max(self.clock, cycle)  # it was blocked on exactly this queue
            self._advance()

    @property
    def blocked_on(self) -> Stage | None:
        return self.stages[self.next] if self.next < len(self.stages) else None


def _deadlock_message(streams: dict[Stage, deque[int]], tokens: dict[str, deque[int]],
                      program: list[Insn], plan: list[tuple[Stage, tuple[str, ...],
                                                            tuple[str, ...]]],
                      fetch: _Fetch) -> str:
    waits = []
    for stage, stream in streams.items():
        if not stream:
            continue
        index = stream[0]
        if fetch.time[index] < 0:
            continue
        empty = [q for q in plan[index][1] if not tokens[q]]
        waits.append(f"{describe(index, program[index])} ({_MODULE[stage]}) waits on "
                     f"{' and '.join(empty)}")
    blocked = fetch.blocked_on
    if blocked is not None:
        waits.append(f"fetch waits at #{fetch.next} for room in the full {_MODULE[blocked]} "
                     f"command queue (depth {fetch.depth})")
    return "deadlock: " + "; ".join(waits) + "; nothing left can push those tokens"
