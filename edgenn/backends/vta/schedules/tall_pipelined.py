"""``tall_pipelined``: past the ``optimized`` schedule of the ZCU102 study.

What changes, and why (docs/vta.md has the numbers):

1. **Taller output tiles.** ``tm`` rows of A (16 to 512) share every B tile instead of 16, so
   B traffic per GEMM cycle drops from 16 B (the bus's whole bandwidth: the ``optimized``
   schedule sits on the ridge point) to ``256 / tm`` B.
2. **Long DMA rows.** A block is ``tm / 16`` contiguous rows of ``16 tk`` vectors, a B block
   ``tn`` rows of ``tk`` tiles: the read latency is paid per kilobytes, not per 256-byte tile.
3. **Big instructions.** One GEMM instruction covers a whole ``tm x tk x tn`` block (thousands
   of micro-ops from a ``tm / 16 x tn`` micro-op kernel with two loops), so the per-instruction
   dispatch and drain vanish; kernels are cached in the micro-op buffer.
4. **All three modules overlap.** A and B blocks are double-buffered (load runs ahead of GEMM),
   accumulator tiles are double-buffered (STORE of tile t runs under the GEMMs of tile t + 1),
   and for int32 output the byte planes of tile t are interleaved with tile t + 1's GEMMs so the
   compute module never waits for a plane's STORE.
5. **Reuse where it pays.** Blocks already in SRAM are not loaded again: when K fits one
   block, iterating n inside m keeps the A panel resident (weight streaming), m inside n keeps
   the B panel resident (weight-stationary).
6. **Tile sizes from the buffers plus a small search.** Every (tm, tn, tk, order) that fits
   the buffers is costed analytically (``estimate``), and the best few are run through the
   timing model; the fastest program wins. Plans are cached per shape and configuration.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from typing import Any

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.errors import VtaScheduleError
from edgenn.backends.vta.isa import AluOp, MemType
from edgenn.backends.vta.runtime import ProgramBuilder
from edgenn.backends.vta.schedules.common import (
    GemmProblem,
    Operands,
    Sync,
    gemm_kernel,
    load_a,
    load_b,
    place_operands,
    requantize,
    store_tile,
    tile_kernel,
)
from edgenn.backends.vta.timing import row_cycles

TOP_CANDIDATES = 3  # plans simulated after the analytic ranking


@dataclass(frozen=True)
class Plan:
    tm: int  # rows per output tile (multiple of 16)
    tn: int  # column blocks per output tile
    tk: int  # k blocks per GEMM block
    order: str  # "mn": n varies fastest (A panel reuse); "nm": m varies fastest (B reuse)


BIAS_ROW_MAX = 128  # accumulator vectors kept for the bias: all of N up to 2048 columns


def _bias_row(problem: GemmProblem) -> int:
    """Accumulator vectors reserved for the bias (all of it when it fits, else one tile's)."""
    return min(problem.nb, BIAS_ROW_MAX) if problem.has_bias else 0


def _chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(size, total - s)) for s in range(0, total, size)]


def _tiles(problem: GemmProblem, plan: Plan) -> list[tuple[int, int, int, int]]:
    """(mt0, groups, nb0, tn) of every output tile, in emission order."""
    ms = _chunks(problem.mt, plan.tm // 16)
    ns = _chunks(problem.nb, plan.tn)
    if plan.order == "mn":
        return [(m0, g, n0, tn) for m0, g in ms for n0, tn in ns]
    return [(m0, g, n0, tn) for n0, tn in ns for m0, g in ms]


# ----- candidates and the analytic cost -----
def candidates(problem: GemmProblem, config: VtaConfig) -> list[Plan]:
    """Every plan whose double buffers fit: A block tm x tk and B block tn x tk in half of inp
    and wgt, two tm x tn accumulator tiles plus the bias scratch in acc."""
    mp = problem.mt * 16
    tms = sorted({t for t in (16, 32, 48, 64, 96, 128, 192, 256, 384, 512) if t <= mp}
                 | ({mp} if mp <= 512 else set()))
    tns = sorted({t for t in range(1, problem.nb + 1)
                  if problem.nb % t == 0 or t & (t - 1) == 0 or t == problem.nb})
    plans = []
    for tm in tms:
        for tn in tns:
            if 2 * tm * tn + _bias_row(problem) > config.acc_depth:
                continue
            tk_max = min(config.inp_depth // 2 // tm, config.wgt_depth // 2 // tn, problem.kb)
            if tk_max < 1:
                continue
            chunks = -(-problem.kb // tk_max)
            tk = -(-problem.kb // chunks)  # balanced k blocks
            for order in ("mn", "nm"):
                plans.append(Plan(tm, tn, tk, order))
    return plans


def estimate(problem: GemmProblem, config: VtaConfig, plan: Plan) -> float:
    """Cycles, roughly: the busiest module plus pipeline fill and drain."""
    d, lat, wlat = config.dispatch, config.dram_read_latency, config.write_latency
    gemm_fixed = d + config.gemm_drain
    alu_fixed = d + config.alu_drain
    ks = _chunks(problem.kb, plan.tk)
    compute = load = store = 0.0
    a_key = b_key = None
    for m0, groups, n0, tn in _tiles(problem, plan):
        full, rem = _row_split(min(16 * groups, problem.m - 16 * m0), tn)
        rows = 16 * full + rem
        v = rows * tn
        compute += gemm_fixed + v  # reset
        if problem.has_bias:
            compute += alu_fixed + config.alu_cycles_per_uop * v
        requant_ops = (3 if problem.shift else 2) if problem.out == "int8" else 3
        compute += requant_ops * (alu_fixed + config.alu_cycles_per_uop * v)
        for k0, tk in ks:
            compute += gemm_fixed * (bool(full) + bool(rem)) + rows * tk * tn
            if len(ks) > 1 or a_key != (m0, k0):
                load += d + groups * row_cycles(config, 16 * tk * config.inp_elem_bytes, lat)
                a_key = (m0, k0)
            if len(ks) > 1 or b_key != (n0, k0):
                load += d + tn * row_cycles(config, tk * config.wgt_elem_bytes, lat)
                b_key = (n0, k0)
        out_rows = 1 if tn == problem.nb else min(rows, problem.m - 16 * m0)
        store += problem.planes * (d + out_rows * row_cycles(
            config, rows * tn * config.out_elem_bytes // out_rows, wlat))
    tiles = _tiles(problem, plan)
    _, groups, _, tn = tiles[0]
    tk = ks[0][1]
    fill = (2 * d + groups * row_cycles(config, 16 * tk * config.inp_elem_bytes, lat)
            + tn * row_cycles(config, tk * config.wgt_elem_bytes, lat))  # before the 1st GEMM
    return max(compute, load, store) + fill + store / len(tiles)  # + the last tile's STORE


def _row_split(valid: int, tn: int) -> tuple[int, int]:
    """Whole 16-row groups and leftover rows to compute for ``valid`` rows: leftovers are
    computed exactly unless too few accumulators separate repeated writes (then padded)."""
    full, rem = divmod(valid, 16)
    if rem and rem * tn < 3:
        return full + 1, 0
    return full, rem


# ----- emission -----
class _Blocks:
    """Two halves of one SRAM buffer holding operand blocks, with what each holds and the
    compute -> load token of the last GEMM that read it."""

    def __init__(self, half: int) -> None:
        self.half = half
        self.key: list[Any] = [None, None]
        self.last_use: list[int | None] = [None, None]
        self.recent = 0  # the half used most recently

    def find(self, key: Any) -> int | None:
        for h in (0, 1):
            if self.key[h] == key:
                return h
        return None

    def victim(self) -> int:
        return 1 - self.recent


def emit(problem: GemmProblem, b: ProgramBuilder, ops: Operands, plan: Plan) -> None:
    config = b.config
    sync = Sync.of(b)
    a_blocks = _Blocks(config.inp_depth // 2)
    b_blocks = _Blocks(config.wgt_depth // 2)
    acc_tile = plan.tm * plan.tn
    scratch0 = 2 * acc_tile
    scratch_n = _bias_row(problem)
    bias_key: int | None = None
    acc_free: list[int | None] = [None, None]
    pending: deque[Callable[[], None]] = deque()  # epilogue steps of the previous tile
    ks = _chunks(problem.kb, plan.tk)

    def ensure(blocks: _Blocks, key: Any, load: Callable[[int], None]) -> tuple[int, bool]:
        h = blocks.find(key)
        if h is not None:
            blocks.recent = h
            return h, False
        h = blocks.victim()
        sync.c2ld.wait(blocks.last_use[h])
        load(h * blocks.half)
        blocks.key[h] = key
        blocks.recent = h
        return h, True

    for t, (m0, groups, n0, tn) in enumerate(_tiles(problem, plan)):
        half = t % 2
        acc0 = half * acc_tile
        valid = min(16 * groups, problem.m - 16 * m0)
        full, rem = _row_split(valid, tn)
        rows = 16 * full + rem  # rows computed: the valid ones (or a whole padded group)
        sync.st2c.wait(acc_free[half])
        b.gemm(tile_kernel(acc0, rows, tn, tn), reset=True)
        if problem.has_bias:
            assert ops.bias is not None
            # the scratch row holds bias[bias_base:]: all of it when it fits, else this tile's
            bias_base = 0 if problem.nb <= scratch_n else n0
            if bias_key != bias_base:
                count = min(scratch_n, problem.nb - bias_base)
                b.load_2d(MemType.ACC, scratch0, ops.bias + bias_base, 1, count, count)
                bias_key = bias_base
            b.alu(tile_kernel(acc0, rows, tn, tn, src0=scratch0 + n0 - bias_base,
                              src_row_stride=0), AluOp.ADD)
        for k0, tk in ks:
            ah, a_new = ensure(a_blocks, (m0, k0),
                               partial(load_a, b, problem, ops, mt0=m0, groups=groups, kb0=k0,
                                       tk=tk))
            bh, b_new = ensure(b_blocks, (n0, k0),
                               partial(load_b, b, problem, ops, nb0=n0, tn=tn, kb0=k0, tk=tk))
            if a_new or b_new:
                sync.ld2c.wait(sync.ld2c.signal())
            inp0, wgt0 = ah * a_blocks.half, bh * b_blocks.half
            if full:
                b.gemm(gemm_kernel(acc0, inp0, wgt0, full, tk, tn))
            if rem:  # the valid rows of a ragged last group only
                b.gemm(gemm_kernel(acc0 + 16 * full * tn, inp0 + 16 * full * tk, wgt0, 1, tk,
                                   tn, rows=rem))
            a_blocks.last_use[ah] = b_blocks.last_use[bh] = sync.c2ld.signal()
            if pending:
                pending.popleft()()
        while pending:
            pending.popleft()()
        requantize(b, problem, acc0, valid, tn)
        _epilogue(b, sync, problem, ops, acc0, valid, tn, m0, n0, half, acc_free, pending)
    while pending:
        pending.popleft()()


def _epilogue(b: ProgramBuilder, sync: Sync, problem: GemmProblem, ops: Operands, acc0: int,
              rows: int, tn: int, m0: int, n0: int, half: int, acc_free: list[int | None],
              pending: deque[Callable[[], None]]) -> None:
    """STORE plane 0 now; queue the remaining byte planes (int32) as steps that the next
    tile's GEMMs interleave with, so the compute module never idles waiting for a STORE."""
    kernel = tile_kernel(acc0, rows, tn, tn)

    def store(c_base: int) -> None:
        sync.c2st.wait(sync.c2st.signal())
        store_tile(b, problem, c_base, acc0, rows, tn, 16 * m0, n0)
        acc_free[half] = sync.st2c.signal()

    store(ops.c[0])
    for c_base in ops.c[1:]:
        def step(c_base: int = c_base) -> None:
            sync.st2c.wait(acc_free[half])  # the previous plane's STORE has read the tile
            b.alu(kernel, AluOp.SHR, 8)
            store(c_base)
        pending.append(step)


# ----- plan selection -----
@lru_cache(maxsize=256)
def choose_plan(problem: GemmProblem, config: VtaConfig) -> Plan:
    """The fastest plan: analytic ranking, then the timing model on the best few."""
    from edgenn.backends.vta import sim  # here: sim imports nothing of the schedules

    plans = candidates(problem, config)
    if not plans:
        raise VtaScheduleError(f"tall_pipelined: no tiling of {problem.m}x{problem.k}x"
                               f"{problem.n} fits the buffers")
    ranked = sorted(plans, key=lambda p: (estimate(problem, config, p), -p.tm * p.tn))
    best: tuple[int, Plan] | None = None
    for plan in ranked[:TOP_CANDIDATES]:
        dram, ops = place_operands(problem, config)
        builder = ProgramBuilder(config, dram)
        emit(problem, builder, ops, plan)
        program = builder.finish()
        stats = sim.run(sim.Machine(config, dram), list(program.insns), functional=False)
        if best is None or stats.cycles < best[0]:
            best = (stats.cycles, plan)
    assert best is not None
    return best[1]


def build(problem: GemmProblem, b: ProgramBuilder, ops: Operands) -> dict[str, Any]:
    plan = choose_plan(problem, b.config)
    emit(problem, b, ops, plan)
    info: dict[str, Any] = asdict(plan)
    info["tile"] = [plan.tm, 16 * plan.tn, 16 * plan.tk]
    return info
