"""im2col + GEMM and plain GEMM operators: GotoBLAS-style blocking around a micro-kernel.

Loops (outer to inner): a block of ``MC`` output rows, a block of ``KC`` of the depth, then
every ``nr``-column B panel, then every ``mr``-row tile. The A block (``MC x KC``, packed or
copied rows) stays in L2 and the B micro-panel (``KC x nr``) in L1 while the tiles sweep
past it; B was packed once at prepare time. Partial sums of a K block are added into the
output (mode bit 1) and the activation runs after the last one (mode bit 2).

``im2col`` builds A from the convolution window (zeros for padding); ``gemm`` uses the
input itself as A (a 1x1 stride-1 convolution or a FullyConnected layer): hybrid tiles read
its rows in place, interleaved tiles still pack them.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.backends.host.kernels.common import (
    Variants,
    ceil_div,
    choose_split,
    emit_dispatch,
    emit_interleave,
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

#: Depth block: a ``KC x nr`` B micro-panel of 16-24 KB stays in a 32 KB L1.
KC_TARGET = 256
#: A block: ``MC x KC`` floats (about 192 KB) stays in L2.
A_BLOCK_FLOATS = 48 * 1024


@dataclass(frozen=True)
class Gemm:
    """``out[m][n] = sum_k A[m][k] * B[k][n] + bias[n]``, clamped to ``[lo, hi]``."""

    m: int
    k: int
    n: int
    lo: float
    hi: float


def blocking(k: int, tile: Tile) -> tuple[int, int]:
    """(KC, MC): depth split into near-equal blocks of at most ~KC_TARGET * 1.5."""
    kc = k if k <= KC_TARGET * 3 // 2 else ceil_div(k, ceil_div(k, KC_TARGET))
    mc = max(tile.mr, A_BLOCK_FLOATS // kc // tile.mr * tile.mr)
    return kc, mc


def _plan(g: Gemm, tile: Tile, split: str, scratch: int) -> tuple[HostPlan, str, int]:
    axis = choose_split(split, ceil_div(g.m, tile.mr), ceil_div(g.n, tile.nr))
    if axis == "rows":
        size = partition_unit(g.m, tile.mr)
        count = ceil_div(g.m, size)
    else:
        size = partition_unit(g.n, tile.nr)
        count = ceil_div(g.n, size)
    plan = HostPlan(count, axis, size, padded(scratch, 16), g.m * g.n * g.k)
    return plan, axis, size


def _pack_im2col(out: CWriter, s: ConvShape, tile: Tile, kc_max: int, panels: int) -> None:
    """``pack_a``: the window of rows ``m0 .. m0+mc``, depth ``k0 .. k0+kc`` into A.

    why spans: for one window row ``ky`` the taps ``kx`` are neighbouring input pixels, so
    their ``KW * Cin`` values are one contiguous run of the NHWC input (clipped at the left
    and right edges): one copy per window row, not one per tap (Cin = 3 in a network stem).
    Hybrid tiles read the rows as copied; interleaved tiles get ``mr`` rows copied to a
    staging block, then interleaved into a panel.
    """
    with out.block("static void fill(float *EV_RESTRICT d, const float *EV_RESTRICT src, "
                   "int n)"):
        out("if (src) memcpy(d, src, (size_t)n * sizeof(float));",
            "else memset(d, 0, (size_t)n * sizeof(float));")
    with out.block("static void im2col_row(const float *EV_RESTRICT in, float *EV_RESTRICT dst, "
                   "int m, int k0, int kc)"):
        _im2col_row(out, s)
    if tile.packed:
        emit_interleave(out, tile, kc_max)
    with out.block("static void pack_a(const float *EV_RESTRICT in, float *EV_RESTRICT abuf, "
                   "int m0, int mc, int k0, int kc)"):
        if not tile.packed:
            out(f"for (int r = 0; r < mc; ++r) im2col_row(in, abuf + r * {kc_max}, m0 + r, "
                "k0, kc);")
            return
        mr = tile.mr
        out(f"float *EV_RESTRICT stage = abuf + {panels * kc_max * mr};")
        with out.block(f"for (int p = 0; p * {mr} < mc; ++p)"):
            out(f"const float *rows[{mr}];")
            with out.block(f"for (int r = 0; r < {mr}; ++r)"):
                out("rows[r] = zpanel;",
                    f"if (p * {mr} + r >= mc) continue;",
                    f"im2col_row(in, stage + r * {kc_max}, m0 + p * {mr} + r, k0, kc);",
                    f"rows[r] = stage + r * {kc_max};")
            out(f"interleave(rows, abuf + p * {kc_max * mr}, kc);")


def _im2col_row(out: CWriter, s: ConvShape) -> None:
    span = s.kw * s.cin
    out(f"const int oy = m / {s.ow}, ox = m - oy * {s.ow};",
        f"const int iy0 = oy * {s.sh} - {s.pt}, ix0 = ox * {s.sw} - {s.pl};",
        f"const int v0 = ev_max_i(0, -ix0) * {s.cin};  /* the in-image part of a span */",
        f"const int v1 = ev_min_i({s.kw}, {s.w} - ix0) * {s.cin};")
    with out.block(f"for (int ky = k0 / {span}; ky * {span} < k0 + kc; ++ky)"):
        out(f"const int s0 = ky * {span}, iy = iy0 + ky;",
            "const int lo = ev_max_i(k0, s0) - s0;",
            f"const int hi = ev_min_i(k0 + kc, s0 + {span}) - s0;",
            "float *EV_RESTRICT d = dst + (s0 + lo - k0);")
        with out.block(f"if ((unsigned)iy >= {s.h}u)"):
            out("fill(d, 0, hi - lo);", "continue;")
        # why a fixed-size copy: a whole in-image window row has a compile-time length, so
        # the compiler inlines it (a library memcpy call per 9 floats dominated the stems)
        with out.block(f"if (lo == 0 && hi == {span} && v0 == 0 && v1 == {span})"):
            out(f"memcpy(d, in + (iy * {s.w} + ix0) * {s.cin}, {span} * sizeof(float));",
                "continue;")
        out("const int a = ev_min_i(ev_max_i(lo, v0), hi);",
            "const int b = ev_max_i(ev_min_i(hi, v1), a);",
            "fill(d, 0, a - lo);",
            f"fill(d + (a - lo), in + (iy * {s.w} + ix0) * {s.cin} + a, b - a);",
            "fill(d + (b - lo), 0, hi - b);")


def _pack_rows(out: CWriter, k: int, tile: Tile, kc_max: int) -> None:
    """``pack_a`` for plain GEMM: interleave rows of the input matrix into panels."""
    mr = tile.mr
    emit_interleave(out, tile, kc_max)
    with out.block("static void pack_a(const float *EV_RESTRICT in, float *EV_RESTRICT abuf, "
                   "int m0, int mc, int k0, int kc)", f"for (int p = 0; p * {mr} < mc; ++p)"):
        out(f"const float *rows[{mr}];",
            f"for (int r = 0; r < {mr}; ++r) rows[r] = p * {mr} + r < mc ? "
            f"in + (size_t)(m0 + p * {mr} + r) * {k} + k0 : zpanel;",
            f"interleave(rows, abuf + p * {kc_max * mr}, kc);")


def _driver(out: CWriter, name: str, g: Gemm, tile: Tile, axis: str, size: int,
            kc: int, mc: int, a_in_place: bool) -> None:
    lda = g.k if a_in_place else kc
    variants = emit_variants(out, tile, "packed" if tile.packed else "strided", g.m, g.n, g.n,
                             g.lo, g.hi, lda=lda)
    has_act = g.lo != float("-inf") or g.hi != float("inf")
    with out.block(entry(name)):
        if a_in_place:
            out("(void)scratch;")
        ranges(out, axis, size, g.m, g.n)
        with out.block(f"for (int m0 = m_lo; m0 < m_hi; m0 += {mc})"):
            out(f"const int mc = ev_min_i({mc}, m_hi - m0);")
            with out.block(f"for (int k0 = 0; k0 < {g.k}; k0 += {kc})"):
                out(f"const int kc = ev_min_i({kc}, {g.k} - k0);",
                    "const int mode = (k0 > 0 ? 1 : 0)"
                    + (f" | (k0 + kc == {g.k} ? 2 : 0);" if has_act else ";"))
                if not a_in_place:
                    out("pack_a(in, scratch, m0, mc, k0, kc);")
                with out.block(f"for (int n0 = n_lo; n0 < n_hi; n0 += {tile.nr})"):
                    out(f"const float *EV_RESTRICT bp = w + (size_t)(n0 / {tile.nr}) * "
                        f"{g.k * tile.nr} + (size_t)k0 * {tile.nr};")
                    with out.block(f"for (int i = 0; i < mc; i += {tile.mr})"):
                        out(f"const int rows = ev_min_i({tile.mr}, mc - i); (void)rows;",
                            f"float *EV_RESTRICT c = out + (size_t)(m0 + i) * {g.n} + n0;")
                        _tile_call(out, variants, tile, g, kc, a_in_place)


def _tile_call(out: CWriter, variants: Variants, tile: Tile, g: Gemm, kc: int,
               a_in_place: bool) -> None:
    cond = f"n0 + {tile.nr} <= {g.n}"
    if tile.packed:
        out(f"const float *EV_RESTRICT a = scratch + (i / {tile.mr}) * {kc * tile.mr};")
        emit_dispatch(out, variants, "rows", cond, "kc, a, bp, c, bias + n0, mode")
        return
    if a_in_place:
        out(f"const float *EV_RESTRICT a = in + (size_t)(m0 + i) * {g.k} + k0;")
    else:
        out(f"const float *EV_RESTRICT a = scratch + i * {kc};")
    emit_dispatch(out, variants, "rows", cond, "kc, a, bp, c, bias + n0, mode")


def emit_im2col(name: str, s: ConvShape, tile: Tile, isa: Isa, split: str
                ) -> tuple[str, HostPlan]:
    """The im2col + GEMM operator for convolution ``s``."""
    g = Gemm(s.m, s.k, s.cout, s.lo, s.hi)
    kc, mc = blocking(g.k, tile)
    stage = tile.mr * kc if tile.packed else 0
    plan, axis, size = _plan(g, tile, split, padded(mc, tile.mr) * kc + stage)
    out = CWriter()
    head(out, isa, f"im2col + GEMM {tile.name}")
    _pack_im2col(out, s, tile, kc, ceil_div(mc, tile.mr))
    _driver(out, name, g, tile, axis, size, kc, mc, a_in_place=False)
    return out.text(), plan


def emit_gemm(name: str, g: Gemm, tile: Tile, isa: Isa, split: str, what: str
              ) -> tuple[str, HostPlan]:
    """A plain GEMM operator: the input ``[m][k]`` is A."""
    kc, mc = blocking(g.k, tile)
    scratch = padded(mc, tile.mr) * kc if tile.packed else 0
    plan, axis, size = _plan(g, tile, split, scratch)
    out = CWriter()
    head(out, isa, f"GEMM {tile.name}, {what}")
    if tile.packed:
        _pack_rows(out, g.k, tile, kc)
    _driver(out, name, g, tile, axis, size, kc, mc, a_in_place=not tile.packed)
    return out.text(), plan
