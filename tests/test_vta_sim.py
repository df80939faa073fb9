"""VTA simulator: each instruction's semantics against numpy, tokens, errors, timing."""

from __future__ import annotations

import numpy as np
import pytest

from edgenn.backends.vta import sim
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
    Uop,
)
from edgenn.backends.vta.runtime import Loop, ProgramBuilder, UopKernel

CONFIG = VtaConfig()
RNG = np.random.default_rng(7)


def machine() -> sim.Machine:
    return sim.Machine(CONFIG, Dram(CONFIG))


def put_uops(m: sim.Machine, uops: list[Uop], at: int = 0) -> None:
    m.sram.uop[at:at + len(uops)] = [u.encode() for u in uops]


def run(m: sim.Machine, *insns: Insn, trace: bool = False) -> sim.SimStats:
    """Run ``insns``, then synchronise: load and store report to compute, then FINISH."""
    sync = [MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 0, 0, 0, push_next=True),
            MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 0, 0, 0, push_prev=True),
            FinishInsn(pop_prev=True, pop_next=True)]
    return sim.run(m, [*insns, *sync], trace=trace)


def load(mem: MemType, sram: int, dram: int, y: int, x: int, stride: int,
         pad: tuple[int, int, int, int] = (0, 0, 0, 0), **flags: bool) -> MemInsn:
    return MemInsn(Opcode.LOAD, mem, sram, dram, y, x, stride, *pad, **flags)


# ----- LOAD / STORE -----
def test_load_2d_strided_with_padding() -> None:
    m = machine()
    base = m.dram.alloc_elems(MemType.INP, 64)
    data = RNG.integers(-128, 128, (64, 16), dtype=np.int8)
    m.dram.write_elems(MemType.INP, base, data)
    m.sram.inp[:] = 99  # padding must overwrite, not skip
    stats = run(m, load(MemType.INP, 5, base + 2, 3, 4, 10, (1, 2, 1, 1)))
    expected = np.zeros((6, 6, 16), np.int8)
    for y in range(3):
        expected[1 + y, 1:5] = data[2 + 10 * y: 2 + 10 * y + 4]
    assert np.array_equal(m.sram.inp[5:41].reshape(6, 6, 16), expected)
    assert m.sram.inp[4, 0] == 99 and m.sram.inp[41, 0] == 99
    assert stats.dram_bytes["inp"] == 3 * 4 * 16  # zero padding is not traffic


def test_load_weights_and_accumulators() -> None:
    m = machine()
    wbase = m.dram.alloc_elems(MemType.WGT, 4)
    abase = m.dram.alloc_elems(MemType.ACC, 4)
    w = RNG.integers(-128, 128, (4, 16, 16), dtype=np.int8)
    acc = RNG.integers(-(2**31), 2**31, (4, 16), dtype=np.int64).astype(np.int32)
    m.dram.write_elems(MemType.WGT, wbase, w)
    m.dram.write_elems(MemType.ACC, abase, acc)
    stats = run(m, load(MemType.WGT, 10, wbase, 2, 2, 2), load(MemType.ACC, 7, abase, 1, 4, 4))
    assert np.array_equal(m.sram.wgt[10:14], w) and np.array_equal(m.sram.acc[7:11], acc)
    assert stats.dram_bytes == {"uop": 0, "inp": 0, "wgt": 4 * 256, "acc": 4 * 64, "out": 0,
                                "insn": 5 * 16}


def test_store_writes_the_low_byte_and_wraps() -> None:
    m = machine()
    out = m.dram.alloc_elems(MemType.OUT, 20)
    m.sram.acc[:6] = RNG.integers(-(2**31), 2**31, (6, 16), dtype=np.int64).astype(np.int32)
    put_uops(m, [Uop(0, 0)])
    # GEMM / ALU writes update the output buffer; an ALU ADD 0 touches all six vectors
    add0 = AluInsn(AluOp.ADD, 0, 1, 6, 1, 1, 0, 1, 0, True, 0, push_next=True)
    store = MemInsn(Opcode.STORE, MemType.OUT, 0, out + 1, 2, 3, 5, pop_prev=True,
                    push_prev=True)
    sim.run(m, [add0, store, FinishInsn(pop_next=True)])
    got = m.dram.elems(MemType.OUT)[out: out + 20]
    low = m.sram.acc[:6].astype(np.int8)  # two's complement truncation
    assert np.array_equal(got[1:4], low[0:3]) and np.array_equal(got[6:9], low[3:6])
    assert not got[4].any() and not got[0].any()


# ----- GEMM -----
def gemm_reference(acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, uops: list[Uop],
                   insn: GemmInsn) -> np.ndarray:
    """fsim's loop, literally."""
    acc = acc.astype(np.int64).copy()
    for o in range(insn.iter_out):
        for i in range(insn.iter_in):
            for u in uops[insn.uop_bgn:insn.uop_end]:
                d = u.dst + o * insn.dst_factor_out + i * insn.dst_factor_in
                s = u.src + o * insn.src_factor_out + i * insn.src_factor_in
                w = u.wgt + o * insn.wgt_factor_out + i * insn.wgt_factor_in
                if insn.reset:
                    acc[d] = 0
                else:
                    acc[d] += wgt[w].astype(np.int64) @ inp[s].astype(np.int64)
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("reset", [False, True])
def test_gemm_matches_the_reference_loop(reset: bool) -> None:
    m = machine()
    m.sram.inp[:] = RNG.integers(-128, 128, m.sram.inp.shape, dtype=np.int8)
    m.sram.wgt[:] = RNG.integers(-128, 128, m.sram.wgt.shape, dtype=np.int8)
    m.sram.acc[:] = RNG.integers(-(2**31), 2**31, m.sram.acc.shape, dtype=np.int64)
    uops = [Uop(3 * r, 40 + r, 7 + r % 2) for r in range(5)]  # 5 rows, 3 accumulators apart
    put_uops(m, uops)
    # outer: 3 column blocks (acc +1, wgt +32); inner: 4 k blocks (inp +5, wgt +2), reducing
    insn = GemmInsn(0, 5, 3, 4, 1, 0, 0, 5, 32, 2, reset=reset)
    expected = gemm_reference(m.sram.acc, m.sram.inp, m.sram.wgt, uops, insn)
    stats = run(m, insn)
    assert np.array_equal(m.sram.acc, expected)
    touched = sorted({3 * r + c for r in range(5) for c in range(3)})
    assert np.array_equal(m.sram.out[touched], expected[touched].astype(np.int8))
    assert (stats.gemm_reset_uops if reset else stats.gemm_uops) == 60


def test_gemm_accumulator_wraps_at_32_bits() -> None:
    m = machine()
    m.sram.acc[0] = 2**31 - 10
    m.sram.inp[0] = 1
    m.sram.wgt[0] = 1  # each lane gains 16
    put_uops(m, [Uop(0, 0, 0), Uop(1, 0, 0), Uop(2, 0, 0)])
    run(m, GemmInsn(0, 3))
    assert m.sram.acc[0, 0] == -(2**31) + 6


def test_gemm_pipeline_hazard_is_reported() -> None:
    m = machine()
    put_uops(m, [Uop(0, 0, 0), Uop(1, 1, 0)])
    # the inner loop repeats the 2-micro-op body: acc[0] is rewritten two micro-ops later
    with pytest.raises(VtaProgramError, match=r"#0 GEMM: micro-op 2 writes acc\[0\] within two"):
        run(m, GemmInsn(0, 2, 1, 2, 0, 0, 0, 1, 0, 0))


def test_index_out_of_range_names_the_instruction() -> None:
    m = machine()
    put_uops(m, [Uop(2040, 0, 0), Uop(2041, 0, 0), Uop(2042, 0, 0)])
    with pytest.raises(VtaProgramError, match=r"#1 GEMM: acc index 2050 out of range"):
        run(m, MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 0, 0, 0), GemmInsn(0, 3, 2, 1, 8))
    with pytest.raises(VtaProgramError, match=r"#0 LOAD INP: SRAM \[2040, 2056\) beyond"):
        run(machine(), load(MemType.INP, 2040, 0, 1, 16, 16))
    with pytest.raises(VtaProgramError, match="micro-ops .* outside the micro-op buffer"):
        run(machine(), GemmInsn(8190, 8200))


# ----- ALU -----
def alu_reference(acc: np.ndarray, insn: AluInsn, uops: list[Uop]) -> np.ndarray:
    acc = acc.astype(np.int64).copy()
    for o in range(insn.iter_out):
        for i in range(insn.iter_in):
            for u in uops[insn.uop_bgn:insn.uop_end]:
                d = u.dst + o * insn.dst_factor_out + i * insn.dst_factor_in
                s = u.src + o * insn.src_factor_out + i * insn.src_factor_in
                y = np.full(16, insn.imm) if insn.use_imm else acc[s].copy()
                x = acc[d]
                for lane in range(16):
                    a, b = int(x[lane]), int(y[lane])
                    r = {AluOp.MIN: min(a, b), AluOp.MAX: max(a, b), AluOp.ADD: a + b,
                         AluOp.MUL: a * b,
                         AluOp.SHR: a >> min(b, 31) if b >= 0 else a << min(-b, 31)}[insn.alu_op]
                    acc[d, lane] = (r + 2**31) % 2**32 - 2**31
    return acc.astype(np.int32)


@pytest.mark.parametrize("op", list(AluOp))
@pytest.mark.parametrize("use_imm", [True, False])
def test_alu_matches_the_reference(op: AluOp, use_imm: bool) -> None:
    m = machine()
    acc = RNG.integers(-(2**31), 2**31, (64, 16), dtype=np.int64)
    if op == AluOp.SHR and not use_imm:
        acc[32:] = RNG.integers(-40, 40, (32, 16))  # shift amounts, both directions
    m.sram.acc[:64] = acc.astype(np.int32)
    uops = [Uop(r, 32 + r) for r in range(4)]
    put_uops(m, uops)
    imm = {AluOp.SHR: -3, AluOp.MUL: -1234}.get(op, 31000)
    insn = AluInsn(op, 0, 4, 2, 3, 4, 8, 4, 8, use_imm, imm if use_imm else 0)
    expected = alu_reference(m.sram.acc[:64], insn, uops)
    stats = run(m, insn)
    assert np.array_equal(m.sram.acc[:64], expected)
    assert stats.alu_uops == 24


def test_alu_with_overlapping_operands_runs_in_order() -> None:
    m = machine()
    m.sram.acc[:8] = np.arange(8)[:, None]
    uops = [Uop(r + 1, r) for r in range(7)]  # acc[r+1] += acc[r]: a running sum
    put_uops(m, uops)
    insn = AluInsn(AluOp.ADD, 0, 7)
    expected = alu_reference(m.sram.acc[:8], insn, uops)
    run(m, insn)
    assert np.array_equal(m.sram.acc[:8, 0], np.cumsum(np.arange(8)))
    assert np.array_equal(m.sram.acc[:8], expected)


# ----- tokens -----
def test_deadlock_is_reported() -> None:
    program = [GemmInsn(0, 0, pop_prev=True), FinishInsn()]
    with pytest.raises(VtaProgramError, match=r"deadlock: #0 GEMM \(compute\) waits on "
                                               r"load->compute"):
        sim.run(machine(), program)


def test_tokens_left_at_finish() -> None:
    program = [load(MemType.INP, 0, 0, 1, 1, 1, push_next=True),
               load(MemType.INP, 0, 0, 0, 0, 0, push_next=True), FinishInsn(pop_prev=True)]
    with pytest.raises(VtaProgramError, match=r"tokens left in load->compute \(1\)"):
        sim.run(machine(), program)


def test_unsynchronised_finish_and_missing_finish() -> None:
    program: list[Insn] = [load(MemType.INP, 0, 0, 64, 16, 16), FinishInsn()]
    with pytest.raises(VtaProgramError, match="#1 FINISH at cycle 53 with #0 LOAD INP still"):
        sim.run(machine(), program)
    with pytest.raises(VtaProgramError, match="no FINISH"):
        sim.run(machine(), [GemmInsn(0, 0)])


def test_fetch_blocks_on_a_full_command_queue() -> None:
    """Nine GEMMs wait for a token that the LOAD behind them in program order would push:
    with 8-deep command queues the fetch never reaches the LOAD (a real VTA deadlock)."""
    gemms: list[Insn] = [GemmInsn(0, 0, pop_prev=i == 0) for i in range(9)]
    program = [*gemms, load(MemType.INP, 0, 0, 1, 1, 1, push_next=True), FinishInsn()]
    with pytest.raises(VtaProgramError, match="fetch waits at #8 for room in the full compute "
                                               "command queue"):
        sim.run(machine(), program)
    deep = CONFIG.replace(cmd_queue_depth=16)
    sim.run(sim.Machine(deep, Dram(deep)), program)  # deeper queues: it runs


def test_token_queue_depth_is_enforced() -> None:
    pushes: list[Insn] = [load(MemType.INP, 0, 0, 0, 0, 0, push_next=True) for _ in range(9)]
    pops: list[Insn] = [GemmInsn(0, 0, pop_prev=True) for _ in range(9)]
    slow = GemmInsn(0, 1, 1000, reset=True)  # compute is busy while the tokens pile up
    with pytest.raises(VtaProgramError, match="9 tokens waiting in load->compute, deeper than"):
        sim.run(machine(), [*pushes, slow, *pops, FinishInsn()])


def test_a_missing_token_is_a_race() -> None:
    """The LOAD overwrites the inputs a running GEMM reads: numbers may still come out right
    in start-time order, but on the hardware the two overlap."""
    m = machine()
    put_uops(m, [Uop(0, 0, 0), Uop(1, 1, 0), Uop(2, 2, 0)])
    gemm = GemmInsn(0, 3, 300)  # 900 cycles reading inp[0..2]
    with pytest.raises(VtaProgramError, match=r"race on the inp buffer: #1 LOAD INP \(load, "
                                               r"cycles 50-117, \[0, 15\]\) overlaps #0 GEMM"):
        run(m, gemm, load(MemType.INP, 0, 0, 1, 16, 16))
    m = machine()  # with the token, the LOAD waits for the GEMM: no race
    put_uops(m, [Uop(0, 0, 0), Uop(1, 1, 0), Uop(2, 2, 0)])
    gemm.push_prev = True
    run(m, gemm, load(MemType.INP, 0, 0, 1, 16, 16, pop_next=True))


def test_flags_without_a_queue() -> None:
    with pytest.raises(VtaProgramError, match="#0 LOAD INP: pop_prev has no queue on the load"):
        sim.run(machine(), [load(MemType.INP, 0, 0, 1, 1, 1, pop_prev=True), FinishInsn()])
    with pytest.raises(VtaProgramError, match="push_next has no queue on the store"):
        sim.run(machine(), [MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 0, 0, 0, push_next=True),
                            FinishInsn()])


# ----- timing -----
def test_hand_computed_cycles() -> None:
    """One 16x16x16 tile: every number below follows from config.py's constants."""
    m = machine()
    a = m.dram.alloc_elems(MemType.INP, 16)
    c = m.dram.alloc_elems(MemType.OUT, 16)
    uops = m.dram.alloc_elems(MemType.UOP, 1)
    m.dram.write_elems(MemType.UOP, uops, np.array([Uop(0, 0, 0).encode()], np.uint32))
    # fetch: the first instruction arrives after the read latency (48), then one per cycle
    program: list[Insn] = [
        load(MemType.INP, 0, a, 1, 16, 16, push_next=True),  # 49 + 3 + 48 + 16 beats = 116
        load(MemType.UOP, 0, uops, 1, 1, 1),  # from 50: 3 + 48 + 1 -> 102, but the read
        # channel carries #0's 16 beats until 116: this beat follows -> 117
        GemmInsn(0, 1, 16, 1, 1, 0, 1, 0, 0, 0, pop_prev=True, push_next=True),  # + 3 + 6 + 16
        MemInsn(Opcode.STORE, MemType.OUT, 0, c, 1, 16, 16, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),  # store: 142 + 3 + 24 + 16 = 185; finish: 185 + 3
    ]
    stats = sim.run(m, program, trace=True)
    assert stats.trace == [(0, "load", 49, 116), (1, "compute", 50, 117),
                           (2, "compute", 117, 142), (3, "store", 142, 185),
                           (4, "compute", 185, 188)]
    assert stats.cycles == 188
    assert stats.busy == {"load": 67, "compute": 67 + 25 + 3, "store": 43}
    assert stats.gemm_uops == 16 and stats.gemm_utilization == pytest.approx(16 / 188)


def test_cost_formulas_follow_the_config() -> None:
    slow = CONFIG.replace(dram_read_latency=64, dispatch=4)
    m = sim.Machine(slow, Dram(slow))
    stats = sim.run(m, [load(MemType.WGT, 0, 0, 3, 2, 2, push_next=True),
                        FinishInsn(pop_prev=True)], trace=True)
    assert stats.trace is not None
    start, end = stats.trace[0][2:]
    assert end - start == 4 + 3 * (64 + 2 * 16)  # rows pay latency, tiles 16 beats each
    narrow = CONFIG.with_bus_bits(64)
    m = sim.Machine(narrow, Dram(narrow))
    stats = sim.run(m, [load(MemType.WGT, 0, 0, 1, 1, 1, push_next=True),
                        FinishInsn(pop_prev=True)], trace=True)
    assert stats.trace is not None
    start, end = stats.trace[0][2:]
    assert end - start == 3 + 48 + 32  # half the bus: twice the beats
    assert start == 48 + 2  # and two fetch cycles per 16-byte instruction


# ----- runtime builder -----
def test_builder_folds_dependences_and_balances_tokens() -> None:
    b = ProgramBuilder(CONFIG, Dram(CONFIG))
    b.load_2d(MemType.INP, 0, 0, 1, 1, 1)
    b.dep_push(Stage.LOAD, Stage.COMPUTE)  # folded into the LOAD
    b.dep_pop(Stage.LOAD, Stage.COMPUTE)  # pending: folded into the next compute instruction
    kernel = UopKernel((Uop(0, 0, 0), Uop(1, 0, 0), Uop(2, 0, 0)), (Loop(2, src=1, wgt=1),))
    b.gemm(kernel)
    b.dep_push(Stage.COMPUTE, Stage.LOAD)
    program = b.finish()
    kinds = [str(i).split()[0] for i in program.insns]
    assert kinds[:3] == ["LOAD", "LOAD", "GEMM"]  # LOAD INP, LOAD UOP, GEMM
    first = program.insns[0]
    assert isinstance(first, MemInsn) and first.push_next
    assert program.insns[1].pop_prev and not program.insns[2].pop_prev  # the pop reached the
    # LOAD UOP, the first compute instruction after dep_pop
    assert program.insns[2].push_prev
    stats = sim.run(sim.Machine(CONFIG, b.dram), list(program.insns))
    assert stats.insn_counts["FINISH"] == 1


def test_micro_op_kernels_are_cached() -> None:
    b = ProgramBuilder(CONFIG, Dram(CONFIG))
    kernel = UopKernel((Uop(0, 0, 0), Uop(1, 0, 0), Uop(2, 0, 0)))
    b.gemm(kernel, reset=True)
    b.gemm(kernel, reset=True)
    assert b.uop_loads == 1
    big = [UopKernel(tuple(Uop((i + j) % 2048, 0, 0) for j in range(2000))) for i in range(5)]
    for k in big:  # 5 x 2000 micro-ops overflow the 8192-entry buffer: it is reused
        b.gemm(k, reset=True)
    b.gemm(kernel, reset=True)
    assert b.uop_loads == 7
    sim.run(sim.Machine(CONFIG, b.dram), list(b.finish().insns))
