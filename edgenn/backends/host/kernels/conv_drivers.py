"""Convolutions without an im2col copy: indirect GEMM and direct convolution.

*Indirect* (XNNPACK's indirection buffer, ACL's "hybrid indirect"): for a chunk of output
pixels a table of row pointers, one per pixel and window tap (a shared zero row for
padding), is built in scratch; the hybrid micro-kernel walks taps as segments of ``Cin``
contiguous values. Taps are blocked so a ``taps x Cin x nr`` B micro-panel stays small.

*Direct*: tiles of ``mr`` neighbouring pixels of one output row. Inside the image every
A address is the tile's base pointer plus a compile-time offset (pixel ``r``, tap
``(ky, kx)``, channel ``ci``), so the kernel needs no pointer table at all; tiles touching
the padding fall back to row pointers built on the stack. Loops run B-panel outer so a
``K x nr`` panel stays in L2 while the rows stream past.
"""

from __future__ import annotations

from edgenn.backends.host.kernels.common import (
    ceil_div,
    choose_split,
    emit_dispatch,
    emit_variants,
    entry,
    head,
    partition_unit,
    ranges,
)
from edgenn.backends.host.kernels.cwriter import CWriter
from edgenn.backends.host.kernels.generated import HostPlan
from edgenn.backends.host.kernels.isa import Isa
from edgenn.backends.host.kernels.layer import ConvShape
from edgenn.backends.host.kernels.packing import padded
from edgenn.backends.host.kernels.tiles import Tile
from edgenn.backends.host.kernels.ukernel import DirectGeometry

#: Pointer table per chunk of output pixels: at most this many pointers (64 KB).
TABLE_POINTERS = 8192
#: Taps per depth block: ``taps x Cin`` about this many values.
TAP_BLOCK_DEPTH = 384


def _zero_row(out: CWriter, cin: int) -> None:
    out(f"static const float zrow[{cin}];  /* the padding every out-of-image tap reads */", "")


def emit_indirect(name: str, s: ConvShape, tile: Tile, isa: Isa, split: str
                  ) -> tuple[str, HostPlan]:
    """The indirect-GEMM operator for convolution ``s`` (hybrid tiles only)."""
    mr, nr, taps = tile.mr, tile.nr, s.taps
    mc = max(mr, TABLE_POINTERS // taps // mr * mr)
    kt = max(1, min(taps, TAP_BLOCK_DEPTH // s.cin))
    axis = choose_split(split, ceil_div(s.m, mr), ceil_div(s.cout, nr))
    size = partition_unit(s.m if axis == "rows" else s.cout, mr if axis == "rows" else nr)
    count = ceil_div(s.m if axis == "rows" else s.cout, size)
    table = padded(min(mc, padded(s.m, mr)) * taps * 2, 16)  # pointers: 2 floats each
    plan = HostPlan(count, axis, size, table, s.macs)
    out = CWriter()
    head(out, isa, f"indirect GEMM {tile.name}")
    _zero_row(out, s.cin)
    v = emit_variants(out, tile, "rows", s.m, s.cout, s.cout, s.lo, s.hi)
    has_act = s.lo != float("-inf") or s.hi != float("inf")
    with out.block(entry(name)):
        ranges(out, axis, size, s.m, s.cout)
        out("const float **tab = (const float **)(void *)scratch;")
        with out.block(f"for (int m0 = m_lo; m0 < m_hi; m0 += {mc})"):
            out(f"const int mc = ev_min_i({mc}, m_hi - m0);")
            # table[(r / mr)][tap][r % mr]: each tile's taps are contiguous segments
            with out.block(f"for (int r = 0; r < (mc + {mr - 1}) / {mr} * {mr}; ++r)"):
                out("const int m = m0 + ev_min_i(r, mc - 1);",
                    f"const int oy = m / {s.ow}, ox = m - oy * {s.ow};",
                    f"const int iy0 = oy * {s.sh} - {s.pt}, ix0 = ox * {s.sw} - {s.pl};",
                    f"const float **row = tab + (r / {mr}) * {taps * mr} + r % {mr};")
                with out.block(f"for (int t = 0; t < {taps}; ++t)"):
                    out(f"const int iy = iy0 + t / {s.kw}, ix = ix0 + t % {s.kw};",
                        f"row[t * {mr}] = ((unsigned)iy < {s.h}u && (unsigned)ix < {s.w}u) "
                        f"? in + (iy * {s.w} + ix) * {s.cin} : zrow;")
            with out.block(f"for (int t0 = 0; t0 < {taps}; t0 += {kt})"):
                out(f"const int kt = ev_min_i({kt}, {taps} - t0);",
                    "const int mode = (t0 > 0 ? 1 : 0)"
                    + (f" | (t0 + kt == {taps} ? 2 : 0);" if has_act else ";"))
                with out.block(f"for (int n0 = n_lo; n0 < n_hi; n0 += {nr})"):
                    out(f"const float *EV_RESTRICT bp = w + (size_t)(n0 / {nr}) * "
                        f"{s.k * nr} + (size_t)t0 * {s.cin * nr};")
                    with out.block(f"for (int i = 0; i < mc; i += {mr})"):
                        out(f"const int rows = ev_min_i({mr}, mc - i); (void)rows;",
                            f"float *EV_RESTRICT c = out + (size_t)(m0 + i) * {s.cout} + n0;",
                            f"const float *const *p = tab + (i / {mr}) * {taps * mr} "
                            f"+ t0 * {mr};")
                        emit_dispatch(out, v, "rows", f"n0 + {nr} <= {s.cout}",
                                      f"kt, {s.cin}, p, bp, c, bias + n0, mode")
    return out.text(), plan


def emit_direct(name: str, s: ConvShape, tile: Tile, isa: Isa, split: str
                ) -> tuple[str, HostPlan]:
    """The direct convolution for ``s`` (hybrid tiles only)."""
    mr, nr, taps = tile.mr, tile.nr, s.taps
    axis = choose_split(split, s.oh * ceil_div(s.ow, mr), ceil_div(s.cout, nr))
    size = partition_unit(s.oh if axis == "rows" else s.cout, 1 if axis == "rows" else nr)
    count = ceil_div(s.oh if axis == "rows" else s.cout, size)
    plan = HostPlan(count, axis, size, 0, s.macs)
    out = CWriter()
    head(out, isa, f"direct convolution {tile.name}")
    _zero_row(out, s.cin)
    geo = DirectGeometry(s.w, s.cin, s.kh, s.kw, s.sw)
    fast = emit_variants(out, tile, "direct", s.ow, s.cout, s.cout, s.lo, s.hi, geo)
    slow = emit_variants(out, tile, "rows", s.ow, s.cout, s.cout, s.lo, s.hi)
    mode = "2" if s.lo != float("-inf") or s.hi != float("inf") else "0"
    with out.block(entry(name)):
        out("(void)scratch;")
        ranges(out, axis, size, s.oh, s.cout, ("y_lo", "y_hi"))
        with out.block(f"for (int n0 = n_lo; n0 < n_hi; n0 += {nr})"):
            out(f"const float *EV_RESTRICT bp = w + (size_t)(n0 / {nr}) * {s.k * nr};",
                f"const int full = n0 + {nr} <= {s.cout}; (void)full;")
            with out.block("for (int oy = y_lo; oy < y_hi; ++oy)"):
                out(f"const int iy0 = oy * {s.sh} - {s.pt};",
                    f"const int rows_in = iy0 >= 0 && iy0 + {s.kh} <= {s.h};")
                with out.block(f"for (int ox = 0; ox < {s.ow}; ox += {mr})"):
                    out(f"const int rows = ev_min_i({mr}, {s.ow} - ox); (void)rows;",
                        f"const int ix0 = ox * {s.sw} - {s.pl};",
                        f"float *EV_RESTRICT c = out + (size_t)(oy * {s.ow} + ox) * {s.cout} "
                        "+ n0;")
                    with out.block(f"if (rows_in && ix0 >= 0 && (ox + rows - 1) * {s.sw} - "
                                   f"{s.pl} + {s.kw} <= {s.w})"):
                        out(f"const float *EV_RESTRICT base = in + (iy0 * {s.w} + ix0) * "
                            f"{s.cin};")
                        emit_dispatch(out, fast, "rows", "full",
                                      f"base, bp, c, bias + n0, {mode}")
                    with out.block("else"):
                        out(f"const float *ptrs[{taps * mr}];")
                        with out.block(f"for (int t = 0; t < {taps}; ++t)",
                                       f"for (int r = 0; r < {mr}; ++r)"):
                            out(f"const int iy = iy0 + t / {s.kw};",
                                f"const int ix = (ox + ev_min_i(r, rows - 1)) * {s.sw} - "
                                f"{s.pl} + t % {s.kw};",
                                f"ptrs[t * {mr} + r] = ((unsigned)iy < {s.h}u && "
                                f"(unsigned)ix < {s.w}u) ? in + (iy * {s.w} + ix) * "
                                f"{s.cin} : zrow;")
                        emit_dispatch(out, slow, "rows", "full",
                                      f"{taps}, {s.cin}, ptrs, bp, c, bias + n0, {mode}")
    return out.text(), plan
