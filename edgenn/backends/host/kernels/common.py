"""Pieces every generated operator shares: the file head, partitions, kernel variants."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from edgenn.backends.host.kernels.cwriter import CWriter
from edgenn.backends.host.kernels.isa import Isa
from edgenn.backends.host.kernels.tiles import Tile
from edgenn.backends.host.kernels.ukernel import DirectGeometry, KernelSpec, emit_kernel

#: Upper bound on partitions: fine enough for share steps of a few percent, coarse enough
#: that a partition (the unit the emulated LITTLE core spins after) is real work.
MAX_PARTITIONS = 64


def head(out: CWriter, isa: Isa, what: str) -> None:
    """The comment and include every generated file starts with."""
    out(f"/* edgenn host kernel (generated): {what}; isa {isa.name} */",
        f"#define EDGENN_SIMD {1 if isa.simd else 0}",
        '#include "edgenn_host_vec.h"', "")


def entry(name: str) -> str:
    """The ABI entry point's signature (kept identical for every operator)."""
    return (f"void {name}_run(const float *EV_RESTRICT in, const float *EV_RESTRICT w, "
            "const float *EV_RESTRICT bias, float *EV_RESTRICT out, float *EV_RESTRICT scratch, "
            "int32_t part_begin, int32_t part_end)")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def partition_unit(extent: int, quantum: int) -> int:
    """Partition size: a multiple of ``quantum`` giving at most ``MAX_PARTITIONS`` parts."""
    units = ceil_div(extent, quantum)
    return quantum * ceil_div(units, MAX_PARTITIONS)


def choose_split(split: str, row_units: int, col_units: int) -> str:
    """``auto``: rows unless the channels offer clearly more (and finer) pieces of work.

    why rows first: row partitions share nothing, where a channel partition repeats the
    per-row work (im2col packing, pointer tables, Winograd input transforms) on every thread.
    """
    if split != "auto":
        return split
    return "rows" if row_units >= min(16, col_units) else "channels"


@dataclass(frozen=True)
class Variants:
    """The micro-kernel functions of one feed: full tile and the row / column tails."""

    feed: str
    full_rows: int
    tail_rows: int  # 0: no row tail
    full_cols: int
    tail_cols: int  # 0: no column tail

    def name(self, rows: int, cols: int) -> str:
        return f"uk_{self.feed}_{rows}x{cols}"


def emit_variants(out: CWriter, tile: Tile, feed: str, rows_total: int, cols_total: int,
                  ldc: int, lo: float = -math.inf, hi: float = math.inf,
                  direct: DirectGeometry | None = None, lda: int = 0) -> Variants:
    """Emit the kernels needed to cover ``rows_total`` x ``cols_total`` with ``tile``."""
    full_rows = min(tile.mr, rows_total)
    tail_rows = rows_total % tile.mr if rows_total > tile.mr else 0
    full_cols = min(tile.nr, cols_total)
    tail_cols = cols_total % tile.nr if cols_total > tile.nr else 0
    v = Variants(feed, full_rows, tail_rows, full_cols, tail_cols)
    for rows in (full_rows, tail_rows):
        for cols in (full_cols, tail_cols):
            if rows and cols:
                emit_kernel(out, KernelSpec(v.name(rows, cols), tile, rows, cols, ldc, feed,
                                            lo, hi, direct, lda))
    return v


def emit_dispatch(out: CWriter, v: Variants, rows_var: str, cols_cond: str,
                  args: str) -> None:
    """Call the variant for ``rows_var`` rows; ``cols_cond`` is true for a full column tile."""

    def by_rows(cols: int) -> None:
        if v.tail_rows:
            out(f"if ({rows_var} == {v.full_rows}) {v.name(v.full_rows, cols)}({args});",
                f"else {v.name(v.tail_rows, cols)}({args});")
        else:
            out(f"{v.name(v.full_rows, cols)}({args});")

    if v.tail_cols:
        with out.block(f"if ({cols_cond})"):
            by_rows(v.full_cols)
        with out.block("else"):
            by_rows(v.tail_cols)
    else:
        by_rows(v.full_cols)


def ranges(out: CWriter, axis: str, size: int, rows_total: int, cols_total: int,
           row_names: Sequence[str] = ("m_lo", "m_hi"),
           col_names: Sequence[str] = ("n_lo", "n_hi")) -> None:
    """Declare the row and column ranges of partitions ``[part_begin, part_end)``."""
    r0, r1 = row_names
    c0, c1 = col_names
    if axis == "rows":
        out(f"const int {r0} = part_begin * {size};",
            f"const int {r1} = ev_min_i({rows_total}, part_end * {size});",
            f"const int {c0} = 0, {c1} = {cols_total};")
    else:
        out(f"const int {r0} = 0, {r1} = {rows_total};",
            f"const int {c0} = part_begin * {size};",
            f"const int {c1} = ev_min_i({cols_total}, part_end * {size});")


def emit_interleave(out: CWriter, tile: Tile, kc_max: int) -> None:
    """``interleave``: ``mr`` rows (``zpanel`` for rows past the end) -> a ``[k][mr]`` panel.

    why register transposes: element-by-element strided stores were the packing cost of the
    8-row tiles (Winograd F(4x4) with ``8x12`` on a 56x56x64 layer: 1.27 -> 1.07 ms);
    8x8 transposes write whole vectors.
    """
    mr = tile.mr
    out(f"static const float zpanel[{kc_max + 8}];  /* rows past the last output pixel */")
    with out.block("static void interleave(const float *const *rows, float *EV_RESTRICT panel, "
                   "int kc)"):
        out("int k = 0;")
        if mr == 8 and tile.lanes == 8:
            with out.block("for (; k + 8 <= kc; k += 8)"):
                out("ev8 t[8];",
                    "for (int r = 0; r < 8; ++r) t[r] = LD8(rows[r] + k);",
                    "ev_transpose8(t);",
                    "for (int j = 0; j < 8; ++j) ST8(panel + (k + j) * 8, t[j]);")
        with out.block("for (; k < kc; ++k)"):
            out(f"float *EV_RESTRICT pk = panel + (size_t)k * {mr};",
                f"for (int r = 0; r < {mr}; ++r) pk[r] = rows[r][k];")
