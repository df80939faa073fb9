"""Depthwise convolution (any window, stride and padding; one filter per channel).

NHWC puts a pixel's channels side by side, so the kernel is vectorised across channels:
a register block of ``P`` neighbouring output pixels x ``C`` channels (the micro-kernel
``dw<P>x<C>``) starts from the bias and adds every window tap's input vector times that
tap's weight vector. Interior blocks address the input as one base pointer plus
compile-time offsets; a block touching the padding first builds a small table of input
pixel pointers (a zero row for every out-of-image pixel) once for all its channel blocks,
then runs the same branch-free code through the table. Weights are packed
``[tap][channel]``. Channels past the last whole block run one vector, then one float, at
a time.
"""

from __future__ import annotations

import math

from edgenn.backends.c_literals import c_float
from edgenn.backends.host.kernels.common import (
    ceil_div,
    choose_split,
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

#: name -> (pixels, channels) of the register block.
DW_BLOCKS: dict[str, tuple[int, int]] = {"dw4x16": (4, 16), "dw2x32": (2, 32), "dw8x8": (8, 8)}


def _block_fn(out: CWriter, s: ConvShape, cp: int, pixels: int, vectors: int, lanes: int,
              edge: bool) -> str:
    """One register-block function (interior or through a pointer table); its name.

    It runs channel blocks from ``c`` while a whole block fits below ``c_hi`` and returns
    where it stopped (why the loop inside: one call per pixel block, not per channel block).
    """
    name = f"dw_{pixels}x{vectors}x{lanes}_{'edge' if edge else 'in'}"
    src = "const float *const *EV_RESTRICT tab" if edge else "const float *EV_RESTRICT base"
    out("__attribute__((noinline))  /* as the GEMM tiles: keep the driver's registers out */")
    with out.block(f"static int {name}({src}, int c, int c_hi, const float *EV_RESTRICT w, "
                   "const float *EV_RESTRICT bias, float *EV_RESTRICT o)"):
        with out.block(f"for (; c + {vectors * lanes} <= c_hi; c += {vectors * lanes})"):
            _block_body(out, s, cp, pixels, vectors, lanes, edge)
        out("return c;")
    return name


def _block_body(out: CWriter, s: ConvShape, cp: int, pixels: int, vectors: int, lanes: int,
                edge: bool) -> None:
    typ = vec(lanes)
    cols = (pixels - 1) * s.sw + s.kw  # input columns the block's window covers
    for p in range(pixels):
        out(" ".join(f"{typ} a{p}_{v} = LD{lanes}(bias + c + {v * lanes});"
                     for v in range(vectors)))
    for ky in range(s.kh):
        for kx in range(s.kw):
            tap = ky * s.kw + kx
            with out.block(""):
                out(" ".join(f"const {typ} w{v} = LD{lanes}(w + {tap * cp} + c + "
                             f"{v * lanes});" for v in range(vectors)))
                for p in range(pixels):
                    col = p * s.sw + kx
                    if edge:
                        where = f"tab[{ky * cols + col}] + c"
                    else:
                        where = f"base + {(ky * s.w + col) * s.cin} + c"
                    out(" ".join(f"FMA(a{p}_{v}, LD{lanes}({where} + {v * lanes}), w{v});"
                                 for v in range(vectors)))
    for p in range(pixels):
        for v in range(vectors):
            acc = f"a{p}_{v}"
            if not math.isinf(s.lo):
                out(f"{acc} = MAX{lanes}(BC{lanes}({c_float(s.lo)}), {acc});")
            if not math.isinf(s.hi):
                out(f"{acc} = MIN{lanes}(BC{lanes}({c_float(s.hi)}), {acc});")
            out(f"ST{lanes}(o + {p * s.cout} + c + {v * lanes}, {acc});")


def _channel_loops(out: CWriter, fns: list[tuple[int, str]], src: str) -> None:
    """Channel blocks from widest to narrowest over ``[c_lo, c_hi)``."""
    out("int c = c_lo;")
    for _, fn in fns:
        out(f"c = {fn}({src}, c, c_hi, w, bias, o);")


def emit_depthwise(name: str, s: ConvShape, kernel: str, isa: Isa, split: str
                   ) -> tuple[str, HostPlan, int]:
    """The depthwise operator; also returns the padded channel stride of the packed taps."""
    pixels, chans = DW_BLOCKS[kernel]
    lanes = isa.lanes_dividing(chans)
    vectors = chans // lanes
    c = s.cin
    cp = padded(c, chans)
    axis = choose_split(split, s.oh, ceil_div(c, chans))
    size = partition_unit(s.oh if axis == "rows" else c, 1 if axis == "rows" else chans)
    count = ceil_div(s.oh if axis == "rows" else c, size)
    plan = HostPlan(count, axis, size, 0, s.oh * s.ow * c * s.taps)
    out = CWriter()
    head(out, isa, f"depthwise {s.kh}x{s.kw} {kernel}")
    out(f"static const float zrow[{cp}];  /* every out-of-image input pixel */")
    widths = [(vectors, lanes), (1, lanes), (1, 1)]
    widths = [w for i, w in enumerate(widths) if w not in widths[:i]]
    counts = [pixels] + ([s.ow % pixels] if s.ow % pixels else [])
    fns = {(p, edge): [(v * ln, _block_fn(out, s, cp, p, v, ln, edge)) for v, ln in widths]
           for p in counts for edge in (False, True)}
    with out.block(entry(name)):
        out("(void)scratch;")
        ranges(out, axis, size, s.oh, c, ("y_lo", "y_hi"), ("c_lo", "c_hi"))
        with out.block("for (int oy = y_lo; oy < y_hi; ++oy)"):
            out(f"const int iy0 = oy * {s.sh} - {s.pt};",
                f"const int rows_in = iy0 >= 0 && iy0 + {s.kh} <= {s.h};")
            with out.block(f"for (int ox = 0; ox < {s.ow}; ox += {pixels})"):
                out(f"const int ix0 = ox * {s.sw} - {s.pl};",
                    f"float *EV_RESTRICT o = out + (oy * {s.ow} + ox) * {c};")
                for p in counts:
                    cond = f"ox + {pixels} <= {s.ow}" if p == pixels else "1"
                    with out.block(f"if ({cond})"):
                        _pixel_block(out, s, p, fns)
    return out.text(), plan, cp


def _pixel_block(out: CWriter, s: ConvShape, p: int,
                 fns: dict[tuple[int, bool], list[tuple[int, str]]]) -> None:
    cols = (p - 1) * s.sw + s.kw
    with out.block(f"if (rows_in && ix0 >= 0 && ix0 + {cols} <= {s.w})"):
        out(f"const float *EV_RESTRICT base = in + (iy0 * {s.w} + ix0) * {s.cin};")
        _channel_loops(out, fns[(p, False)], "base")
    with out.block("else"):
        out(f"const float *tab[{s.kh * cols}];")
        with out.block(f"for (int ky = 0; ky < {s.kh}; ++ky)",
                       f"for (int j = 0; j < {cols}; ++j)"):
            out("const int iy = iy0 + ky, ix = ix0 + j;",
                f"tab[ky * {cols} + j] = ((unsigned)iy < {s.h}u && (unsigned)ix < {s.w}u) "
                f"? in + (iy * {s.w} + ix) * {s.cin} : zrow;")
        _channel_loops(out, fns[(p, True)], "tab")
    out("continue;")
