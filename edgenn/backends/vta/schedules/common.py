"""What every GEMM schedule shares: the problem, the operands' DRAM addresses, the token
queues, micro-op kernels for a tile, accumulator initialisation and the epilogue.

SRAM conventions (indices in elements of each buffer):

* accumulator tile of ``rows x tn`` output vectors at ``acc0``: row r, column block j at
  ``acc0 + r * tn + j``;
* input panel of ``rows x tk`` at ``inp0``, loaded from A's 16-row tiles: A[16 g + r, kb] at
  ``inp0 + (g * tk + kb) * 16 + r`` (tile after tile, as in DRAM);
* weight block of ``tn x tk`` tiles at ``wgt0``: B tile (j, kb) at ``wgt0 + j * tk + kb``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.dram import Dram
from edgenn.backends.vta.errors import VtaScheduleError
from edgenn.backends.vta.isa import AluOp, MemType, Stage, Uop
from edgenn.backends.vta.layout import blocks, pack_a, pack_b, pack_bias
from edgenn.backends.vta.runtime import Loop, ProgramBuilder, TokenQueue, UopKernel

OUTPUTS = ("int8", "int32")


@dataclass(frozen=True)
class GemmProblem:
    """``C[M, N] = A[M, K] @ B[K, N] (+ bias)``, int8 x int8 -> int32, then ``out`` handling."""

    m: int
    k: int
    n: int
    out: str = "int8"
    shift: int = 0
    has_bias: bool = False

    @property
    def mt(self) -> int:
        """16-row tiles of A (M rounded up)."""
        return blocks(self.m)

    @property
    def kb(self) -> int:
        return blocks(self.k)

    @property
    def nb(self) -> int:
        return blocks(self.n)

    @property
    def planes(self) -> int:
        return 4 if self.out == "int32" else 1

    @property
    def packed_operand_bytes(self) -> int:
        """A and B in their tiled DRAM layouts (16-row tiles of A, 16x16 tiles of B), plus the
        bias: what the host packs before a call."""
        return (self.mt * self.kb + self.nb * self.kb) * 256 + (self.nb * 64 if self.has_bias
                                                                 else 0)


@dataclass(frozen=True)
class Operands:
    """DRAM element addresses: A (MT, KB, 16) inp vectors, B (NB, KB) wgt tiles, bias (NB)
    acc vectors, C planes (M, NB) out vectors each (one plane for int8, four for int32)."""

    a: int
    b: int
    bias: int | None
    c: tuple[int, ...]

    def a_tile(self, problem: GemmProblem, mt: int, kb: int) -> int:
        """DRAM element of A's 16-row tile (mt, kb): 16 consecutive input vectors."""
        return self.a + (mt * problem.kb + kb) * 16

    def b_tile(self, problem: GemmProblem, nb: int, kb: int) -> int:
        return self.b + nb * problem.kb + kb


@dataclass
class Sync:
    """The four dependence queues as counters (see ``runtime.TokenQueue``)."""

    ld2c: TokenQueue  # load -> compute: "data loaded"
    c2ld: TokenQueue  # compute -> load: "buffer consumed"
    c2st: TokenQueue  # compute -> store: "results ready"
    st2c: TokenQueue  # store -> compute: "results written out, SRAM free"

    @classmethod
    def of(cls, b: ProgramBuilder) -> Sync:
        return cls(b.tokens(Stage.LOAD, Stage.COMPUTE), b.tokens(Stage.COMPUTE, Stage.LOAD),
                   b.tokens(Stage.COMPUTE, Stage.STORE), b.tokens(Stage.STORE, Stage.COMPUTE))


def place_operands(problem: GemmProblem, config: VtaConfig, a: np.ndarray | None = None,
                   b: np.ndarray | None = None, bias: np.ndarray | None = None
                   ) -> tuple[Dram, Operands]:
    """Allocate the operands in a fresh DRAM and, given data, pack them in (host work)."""
    m, kb, nb = problem.m, problem.kb, problem.nb
    dram = Dram(config, capacity=(problem.packed_operand_bytes + m * nb * 16 * problem.planes
                                  + nb * 64 + (1 << 16)))
    a_base = dram.alloc_elems(MemType.INP, problem.mt * kb * 16, "A")
    b_base = dram.alloc_elems(MemType.WGT, nb * kb, "B")
    bias_base = dram.alloc_elems(MemType.ACC, nb, "bias") if problem.has_bias else None
    c_bases = tuple(dram.alloc_elems(MemType.OUT, m * nb, f"C{p}") for p in range(problem.planes))
    if a is not None and b is not None:
        dram.write_elems(MemType.INP, a_base, pack_a(a))
        dram.write_elems(MemType.WGT, b_base, pack_b(b))
        if bias is not None and bias_base is not None:
            dram.write_elems(MemType.ACC, bias_base, pack_bias(bias, problem.n))
    return dram, Operands(a_base, b_base, bias_base, c_bases)


def load_a(b: ProgramBuilder, problem: GemmProblem, ops: Operands, inp0: int, mt0: int,
           groups: int, kb0: int, tk: int) -> None:
    """A rows [16 mt0, 16 (mt0 + groups)) x k blocks [kb0, kb0 + tk) -> input panel at inp0:
    one DMA row of ``16 tk`` vectors per 16-row group."""
    b.load_2d(MemType.INP, inp0, ops.a_tile(problem, mt0, kb0), groups, 16 * tk,
              16 * problem.kb)


def load_b(b: ProgramBuilder, problem: GemmProblem, ops: Operands, wgt0: int, nb0: int,
           tn: int, kb0: int, tk: int) -> None:
    """B tiles (nb0..nb0+tn) x (kb0..kb0+tk) -> weight block at wgt0: one DMA row per column."""
    b.load_2d(MemType.WGT, wgt0, ops.b_tile(problem, nb0, kb0), tn, tk, problem.kb)


def gemm_kernel(acc0: int, inp0: int, wgt0: int, groups: int, tk: int, tn: int,
                acc_row_stride: int | None = None, rows: int = 16) -> UopKernel:
    """acc tile (16 groups x tn) += input panel (16 groups x tk) @ weight block (tn x tk).

    One micro-op per 16-row group and column block (so a tile of ``groups * tn`` micro-ops);
    the inner loop runs over the rows of a group (``rows`` < 16 computes only the first rows
    of a single group), so consecutive micro-ops write different accumulators (the GEMM
    pipeline has no forwarding); the outer loop runs over k blocks.
    """
    stride = tn if acc_row_stride is None else acc_row_stride
    if groups * tn * rows < 3:  # the micro-op sequence repeats with this period
        raise VtaScheduleError(f"a {rows}-row x {tn}-column GEMM tile repeats an accumulator "
                               f"within two micro-ops (the pipeline has no forwarding)")
    uops = tuple(Uop(acc0 + 16 * g * stride + j, inp0 + g * tk * 16, wgt0 + j * tk)
                 for g in range(groups) for j in range(tn))
    return UopKernel(uops, (Loop(tk, dst=0, src=16, wgt=1),
                            Loop(rows, dst=stride, src=1, wgt=0)))


def tile_kernel(acc0: int, rows: int, cols: int, row_stride: int, src0: int | None = None,
                src_row_stride: int = 0) -> UopKernel:
    """One micro-op looping over an accumulator tile: for ALU ops (``src0`` = second operand's
    tile; ``src_row_stride`` 0 broadcasts one row) and GEMM reset."""
    src = acc0 if src0 is None else src0
    s_row = row_stride if src0 is None else src_row_stride
    return UopKernel((Uop(acc0, src, 0),),
                     (Loop(rows, dst=row_stride, src=s_row), Loop(cols, dst=1, src=1)))


def init_acc(b: ProgramBuilder, problem: GemmProblem, ops: Operands, acc0: int, rows: int,
             tn: int, nb0: int, scratch: int | None = None, load_bias: bool = True) -> None:
    """Zero the tile, or set every row to bias[nb0 : nb0 + tn].

    With a ``scratch`` accumulator row (tn vectors) the bias is loaded into it (unless
    ``load_bias`` is False: the row already holds these columns) and added by the ALU (reset 1
    + ADD 2 cycles per vector); this is the path every schedule uses. Without one it is
    broadcast by a LOAD ACC with row stride 0 (one DMA row, one latency, per tile row).
    """
    if not problem.has_bias:
        b.gemm(tile_kernel(acc0, rows, tn, tn), reset=True)
        return
    assert ops.bias is not None
    if scratch is None:
        b.load_2d(MemType.ACC, acc0, ops.bias + nb0, rows, tn, 0)
        return
    if load_bias:
        b.load_2d(MemType.ACC, scratch, ops.bias + nb0, 1, tn, tn)
    b.gemm(tile_kernel(acc0, rows, tn, tn), reset=True)
    b.alu(tile_kernel(acc0, rows, tn, tn, src0=scratch, src_row_stride=0), AluOp.ADD)


def acc_block(problem: GemmProblem, acc_depth: int, max_panels: int) -> tuple[int, int]:
    """(columns, 16-row panels) of the largest accumulator block a baseline keeps on chip:
    as many 16-vector columns as fit, then as many panels; with a bias, one scratch row of
    ``columns`` vectors is reserved after the block (the bias path of ``init_acc``)."""
    # why 17: 16 rows of the block + 1 scratch row per column when there is a bias
    per_column = 17 if problem.has_bias else 16
    columns = min(problem.nb, acc_depth // per_column)
    scratch = columns if problem.has_bias else 0
    panels = min(max_panels, (acc_depth - scratch) // (16 * columns))
    return columns, panels


def store_tile(b: ProgramBuilder, problem: GemmProblem, c_base: int, acc0: int, rows: int,
               tn: int, m0: int, nb0: int) -> None:
    """STORE rows x tn output vectors to C[m0:, nb0:]; one DMA row when the tile spans N."""
    dram = c_base + m0 * problem.nb + nb0
    if tn == problem.nb:
        b.store_2d(acc0, dram, 1, rows * tn, rows * tn)
    else:
        b.store_2d(acc0, dram, rows, tn, problem.nb)


def requantize(b: ProgramBuilder, problem: GemmProblem, acc0: int, rows: int, tn: int) -> None:
    """int8 output: arithmetic shift right, then clip to [-128, 127] (STORE only truncates)."""
    if problem.out != "int8":
        return
    kernel = tile_kernel(acc0, rows, tn, tn)
    if problem.shift:
        b.alu(kernel, AluOp.SHR, problem.shift)
    b.alu(kernel, AluOp.MIN, 127)
    b.alu(kernel, AluOp.MAX, -128)


def store_planes(b: ProgramBuilder, sync: Sync, problem: GemmProblem, ops: Operands, acc0: int,
                 rows: int, tn: int, m0: int, nb0: int) -> int:
    """STORE a finished tile (int8: one plane; int32: four byte planes, ALU SHR 8 between).

    Returns the store -> compute token meaning "the tile's SRAM is free again". Between planes
    compute waits for the previous STORE: it reads the output buffer the next shift rewrites.
    """
    freed: int | None = None
    kernel = tile_kernel(acc0, rows, tn, tn)
    for plane, c_base in enumerate(ops.c):
        if plane:
            sync.st2c.wait(freed)
            b.alu(kernel, AluOp.SHR, 8)
        sync.c2st.wait(sync.c2st.signal())
        store_tile(b, problem, c_base, acc0, rows, tn, m0, nb0)
        freed = sync.st2c.signal()
    assert freed is not None
    return freed
