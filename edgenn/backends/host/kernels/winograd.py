"""Winograd F(m x m, 3x3) convolution (m = 2 or 4) around the GEMM micro-kernels.

Per block of ``TB`` output tiles: the input transform writes ``V[xi][tile][Cin]`` (hybrid
tiles read its rows; interleaved tiles get it already packed as ``[xi][tile/mr][Cin][mr]``),
then for each of the ``(m+2)^2`` positions ``xi`` one GEMM ``M_xi = V_xi U_xi`` with the
weights transformed and packed at prepare time, then the output transform adds the bias,
applies the activation and writes the valid pixels. Both transforms are vectorised across
channels (NHWC makes every tile element a channel vector); a tile's out-of-image inputs read
a zero row. The tile block is sized so ``V`` and ``M`` stay near L2 while each packed ``U``
element is reused by enough tiles to hide its stream from L3.
"""

from __future__ import annotations

import math

from edgenn.backends.c_literals import c_float
from edgenn.backends.host.kernels.common import (
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
from edgenn.backends.host.kernels.cwriter import CWriter, vec
from edgenn.backends.host.kernels.generated import HostPlan
from edgenn.backends.host.kernels.isa import Isa
from edgenn.backends.host.kernels.layer import ConvShape
from edgenn.backends.host.kernels.packing import padded
from edgenn.backends.host.kernels.tiles import Tile
from edgenn.backends.host.kernels.winograd_math import INPUT_1D, OUTPUT_1D, transform_2d

#: V + M of one tile block, in floats (about 384 KB: near the 512 KB L2).
BLOCK_FLOATS = 96 * 1024
#: Fewest tiles per block: each streamed U element serves at least this many tiles.
MIN_TILES = 24


def tile_block(s: ConvShape, t2: int, tiles: int, mr: int) -> int:
    by_cache = BLOCK_FLOATS // (t2 * (s.cin + s.cout))
    return min(padded(tiles, mr), padded(max(by_cache, MIN_TILES, mr), mr))


def _input_transform(out: CWriter, s: ConvShape, m: int, tb: int, lanes: int) -> None:
    t, tw = m + 2, ceil_div(s.ow, m)
    with out.block("static void in_tf(const float *EV_RESTRICT in, float *EV_RESTRICT v, "
                   "int t0, int tb)", "for (int ti = 0; ti < tb; ++ti)"):
        out(f"const int tt = t0 + ti, ty = tt / {tw}, tx = tt - ty * {tw};",
            f"const int iy0 = ty * {m} - {s.pt}, ix0 = tx * {m} - {s.pl};",
            f"const float *src[{t * t}];")
        with out.block(f"for (int i = 0; i < {t}; ++i)", f"for (int j = 0; j < {t}; ++j)"):
            out("const int iy = iy0 + i, ix = ix0 + j;",
                f"src[i * {t} + j] = ((unsigned)iy < {s.h}u && (unsigned)ix < {s.w}u) "
                f"? in + (iy * {s.w} + ix) * {s.cin} : zrow;")
        out(f"float *EV_RESTRICT dst = v + ti * {s.cin};")
        full = s.cin // lanes * lanes
        for width, lo, hi in ((lanes, "0", str(full)), (1, str(full), str(s.cin))):
            if width == lanes or full < s.cin:
                with out.block(f"for (int c = {lo}; c < {hi}; c += {width})"):
                    _input_body(out, s, t, tb, width)


def _input_body(out: CWriter, s: ConvShape, t: int, tb: int, lanes: int) -> None:
    typ = vec(lanes)
    for i in range(t):
        out(" ".join(f"const {typ} d{i}_{j} = LD{lanes}(src[{i * t + j}] + c);"
                     for j in range(t)))
    out(*transform_2d(INPUT_1D[t - 2], "d", "v", t, t, typ))
    stride = tb * s.cin  # floats between positions xi
    for i in range(t):
        out(" ".join(f"ST{lanes}(dst + {(i * t + j) * stride} + c, v{i}_{j});"
                     for j in range(t)))


def _output_transform(out: CWriter, s: ConvShape, m: int, tb: int, lanes: int) -> None:
    t, tw = m + 2, ceil_div(s.ow, m)
    with out.block("static void out_tf(const float *EV_RESTRICT mb, float *EV_RESTRICT out, "
                   "const float *EV_RESTRICT bias, int t0, int tb, int n_lo, int n_hi)",
                   "for (int ti = 0; ti < tb; ++ti)"):
        out(f"const int tt = t0 + ti, ty = tt / {tw}, tx = tt - ty * {tw};",
            f"const int rows = ev_min_i({m}, {s.oh} - ty * {m});",
            f"const int cols = ev_min_i({m}, {s.ow} - tx * {m});",
            f"const float *EV_RESTRICT src = mb + ti * {s.cout};",
            f"float *EV_RESTRICT dst = out + (ty * {m} * {s.ow} + tx * {m}) * {s.cout};",
            "int c = n_lo;")
        for width in (lanes, 1):
            cond = f"c + {width} <= n_hi" if width > 1 else "c < n_hi"
            with out.block(f"for (; {cond}; c += {width})"):
                _output_body(out, s, m, t, tb, width)


def _output_body(out: CWriter, s: ConvShape, m: int, t: int, tb: int, lanes: int) -> None:
    typ = vec(lanes)
    stride = tb * s.cout
    for i in range(t):
        out(" ".join(f"const {typ} m{i}_{j} = LD{lanes}(src + {(i * t + j) * stride} + c);"
                     for j in range(t)))
    out(*transform_2d(OUTPUT_1D[m], "m", "y", t, m, typ))
    out(f"const {typ} b = LD{lanes}(bias + c);")
    for i in range(m):
        for j in range(m):
            with out.block(f"if ({i} < rows && {j} < cols)"):
                out(f"{typ} r = y{i}_{j} + b;")
                if not math.isinf(s.lo):
                    out(f"r = MAX{lanes}(BC{lanes}({c_float(s.lo)}), r);")
                if not math.isinf(s.hi):
                    out(f"r = MIN{lanes}(BC{lanes}({c_float(s.hi)}), r);")
                out(f"ST{lanes}(dst + {(i * s.ow + j) * s.cout} + c, r);")


def emit_winograd(name: str, s: ConvShape, tile: Tile, isa: Isa, split: str, m: int
                  ) -> tuple[str, HostPlan]:
    """The Winograd F(m x m, 3x3) operator for the stride-1 3x3 convolution ``s``."""
    t2 = (m + 2) ** 2
    tiles = ceil_div(s.oh, m) * ceil_div(s.ow, m)
    mr, nr = tile.mr, tile.nr
    tb = tile_block(s, t2, tiles, mr)
    axis = choose_split(split, ceil_div(tiles, mr), ceil_div(s.cout, nr))
    size = partition_unit(tiles if axis == "rows" else s.cout, mr if axis == "rows" else nr)
    count = ceil_div(tiles if axis == "rows" else s.cout, size)
    v_floats, m_floats = t2 * tb * s.cin, t2 * tb * s.cout
    panel = tb * s.cin if tile.packed else 0  # one position's V, interleaved
    plan = HostPlan(count, axis, size, padded(v_floats + m_floats + panel, 16), s.macs)
    lanes = isa.width
    npad = padded(s.cout, nr)
    out = CWriter()
    head(out, isa, f"Winograd F({m}x{m},3x3) {tile.name}")
    out(f"static const float zrow[{s.cin}];  /* out-of-image tile inputs */",
        f"static const float zbias[{npad}];  /* the GEMMs store plain sums */", "")
    _input_transform(out, s, m, tb, lanes)
    if tile.packed:
        emit_interleave(out, tile, s.cin)
    _output_transform(out, s, m, tb, lanes)
    v = emit_variants(out, tile, "packed" if tile.packed else "strided", tiles, s.cout, s.cout,
                      lda=s.cin)
    with out.block(entry(name)):
        ranges(out, axis, size, tiles, s.cout)
        out("float *EV_RESTRICT vbuf = scratch;",
            f"float *EV_RESTRICT mbuf = scratch + {v_floats};")
        if tile.packed:
            out(f"float *EV_RESTRICT panel = scratch + {v_floats + m_floats};")
        with out.block(f"for (int t0 = m_lo; t0 < m_hi; t0 += {tb})"):
            out(f"const int tb = ev_min_i({tb}, m_hi - t0);",
                "in_tf(in, vbuf, t0, tb);")
            with out.block(f"for (int xi = 0; xi < {t2}; ++xi)"):
                out(f"const float *EV_RESTRICT vx = vbuf + xi * {tb * s.cin};",
                    f"float *EV_RESTRICT mx = mbuf + xi * {tb * s.cout};")
                if tile.packed:  # why here: V stays rows for the transform's vector stores
                    with out.block(f"for (int p = 0; p * {mr} < tb; ++p)"):
                        out(f"const float *rows[{mr}];",
                            f"for (int r = 0; r < {mr}; ++r) rows[r] = p * {mr} + r < tb ? "
                            f"vx + (p * {mr} + r) * {s.cin} : zpanel;",
                            f"interleave(rows, panel + p * {s.cin * mr}, {s.cin});")
                with out.block(f"for (int n0 = n_lo; n0 < n_hi; n0 += {nr})"):
                    out(f"const float *EV_RESTRICT bp = w + (size_t)xi * {npad * s.cin} + "
                        f"(size_t)(n0 / {nr}) * {s.cin * nr};")
                    with out.block(f"for (int i = 0; i < tb; i += {mr})"):
                        out(f"const int rows = ev_min_i({mr}, tb - i); (void)rows;",
                            f"float *EV_RESTRICT c = mx + i * {s.cout} + n0;")
                        cond = f"n0 + {nr} <= {s.cout}"
                        if tile.packed:
                            out(f"const float *EV_RESTRICT a = panel + (i / {mr}) * "
                                f"{s.cin * mr};")
                            emit_dispatch(out, v, "rows", cond,
                                          f"{s.cin}, a, bp, c, zbias + n0, 0")
                        else:
                            emit_dispatch(out, v, "rows", cond,
                                          f"{s.cin}, vx + i * {s.cin}, bp, c, zbias + n0, 0")
            out("out_tf(mbuf, out, bias, t0, tb, n_lo, n_hi);")
    return out.text(), plan
