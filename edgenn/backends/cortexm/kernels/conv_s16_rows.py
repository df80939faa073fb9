"""The direct form of the FOLDED 16x8 Conv2D (``conv_s16_folded``) for windows of few
elements a row (first layers: one or a few input channels).

Why: with a short window the patch costs as much as the MACs it feeds. A 3x3 conv of one
input channel has 5 k pairs a pixel; copying them (one of them across two rows, two LDRH
and an ORR) and gathering the border windows costs ~36 cycles a pixel, against ~20 cycles of
MACs a pixel and channel pair. Here the 4 pixels of a block (adjacent in one output row)
read their int16 pairs straight from the input: k pair (ky, q) of pixel j is the (possibly
unaligned) word at ``x + 2 (ky dil_h in_w Cin + 2 q + j stride_w Cin)`` bytes, an immediate
offset. Each window row is padded to an even length (the pad element's weight is 0, so
whatever it reads adds 0), so a row of 3 taps costs a k pair more than the patch's packing,
and no copy at all. Two ways to the input:

* where the arena has room for it (``conv_gemm.arena_room``: the plane does not raise the
  arena), the whole input is copied once per inference into a zero-padded plane holding
  every window row, and every block reads the plane (one code instance, no borders);
* else the blocks read the input itself, and the blocks whose windows leave it (or whose
  last pad element would read past its end) are gathered first into a small zero-padded
  plane of the block's k_h window rows, read by a second instance of the same code (with
  that plane's row length): a scratch smaller than the patch's.

Taken only where the output rows are at least a block wide, the code is straight-line (few
k pairs), the offsets are immediates and the extra k pairs cost less than the patch copies
they save (:func:`worth_it`).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from edgenn.backends.cortexm.kernels.conv_s16_folded import (
    MAX_STORE,
    block_fns,
    direct_mac,
    portable_fn,
    weights,
)
from edgenn.backends.cortexm.kernels.conv_s16_gemm import PIXELS, Geometry

MAX_PAIRS = 40  # k pairs emitted straight (~56 bytes of code each, inside the channel loop)
MAX_OFFSET = 4095  # LDR immediate
GATHER_UNROLL = 48  # units (words, else elements) of a border row copied by straight code


def row_pairs(g: Geometry) -> int:
    """k pairs of one window row (padded to even)."""
    return (g.k_w * g.in_c + 1) // 2


def block_plane(g: Geometry) -> tuple[int, int]:
    """(row length, elements) of a border block's plane: its k_h window rows of
    ``3 stride_w + k_w`` columns, each row an even number of elements, 2 spare elements for
    the last pad element's read."""
    cols = (PIXELS - 1) * g.stride_w + g.k_w
    length = cols * g.in_c + (cols * g.in_c) % 2
    return length, g.k_h * length + 2


def plane(g: Geometry) -> tuple[int, int, int, int]:
    """(rows, row length, first element, elements) of the whole input's padded plane: the
    rows and columns of every window, each row an even number of elements (word-aligned
    rows), the input's first column at an even element, 2 spare elements."""
    rows = (g.out_h - 1) * g.stride_h + (g.k_h - 1) * g.dil_h + 1
    cols = (g.out_w - 1) * g.stride_w + g.k_w
    length = cols * g.in_c + (cols * g.in_c) % 2
    base = (g.pad_l * g.in_c) % 2
    total = base + rows * length + 2
    return rows, length, base, total + total % 2


def whole_plane(g: Geometry, room: int) -> bool:
    """Copy the whole input into a padded plane (no border blocks, one code instance) when
    the arena has room for it (``conv_gemm.arena_room``) and its offsets are immediates."""
    _, length, _, total = plane(g)
    far = max(offsets(g, length, g.dil_h)) + (PIXELS - 1) * 2 * g.stride_w * g.in_c
    return 2 * total <= room and far <= MAX_OFFSET


def scratch_bytes(g: Geometry, whole: bool) -> int:
    return 2 * (plane(g)[3] if whole else block_plane(g)[1])


def offsets(g: Geometry, row: int, dil: int) -> list[int]:
    """Byte offset of every k pair of pixel 0 from its window's first element, window rows
    ``dil * row`` elements apart."""
    return [2 * (ky * dil * row + 2 * q) for ky in range(g.k_h) for q in range(row_pairs(g))]


def worth_it(g: Geometry) -> bool:
    """The extra k pairs of the padded rows (16 cycles each a block and channel pair) against
    the patch copies of a block (about 4 (3 pairs + 30) cycles, measured on the 3x3 1->8
    layer)."""
    extra = g.k_h * row_pairs(g) - g.pairs
    return 16 * extra * -(-g.out_c // 2) < 4 * (3 * g.pairs + 30)


def fits(g: Geometry) -> bool:
    if g.dil_w != 1 or g.out_w < PIXELS or g.k_h * row_pairs(g) > MAX_PAIRS:
        return False
    step = 2 * g.stride_w * g.in_c
    far = max(max(offsets(g, g.in_w * g.in_c, g.dil_h)), max(offsets(g, block_plane(g)[0], 1)))
    if far + (PIXELS - 1) * step > MAX_OFFSET or 2 * (3 * g.out_c + 1) > MAX_STORE:
        return False
    return worth_it(g)


def row_weights(w: np.ndarray, g: Geometry) -> np.ndarray:
    """int8 [Cout, K] -> widened words of the padded rows' k pairs (pad elements 0)."""
    co = w.shape[0]
    row = g.k_w * g.in_c
    padded = np.zeros((co, g.k_h, 2 * row_pairs(g)), np.int64)
    padded[:, :, :row] = w.reshape(co, g.k_h, row)
    return weights(padded.reshape(co, -1), True)


def _gather_fn(g: Geometry) -> str:
    """@P@_gather: a border block's window rows into its plane, 0 outside the input."""
    length, _ = block_plane(g)
    cols = (PIXELS - 1) * g.stride_w + g.k_w
    ci = g.in_c
    n = cols * ci
    zero = "\n".join(f"            ((uint32_t *)(void *)m)[{i}] = 0;" for i in range((n + 1) // 2))
    # why unrolled: a border block's rows are short (6 elements for a 3x3 of one channel);
    # loops with run-time bounds cost more in setup than the copies themselves
    if ci % 2 == 0:  # a and b are even: whole words (the row starts are word-aligned)
        copy = "\n".join(
            f"        ((uint32_t *)(void *)m)[{i}] = {2 * i} < a || {2 * i} >= b ? 0u : "
            f"edgenn_s16_load32(s + {2 * i});" for i in range(n // 2))
    else:
        copy = "\n".join(f"        m[{e}] = {e} < a || {e} >= b ? 0 : s[{e}];" for e in range(n))
    if (n // 2 if ci % 2 == 0 else n) > GATHER_UNROLL:
        zero = f"            for (int i = 0; i < {n}; i++) m[i] = 0;"
        copy = ("        int i = 0;\n        for (; i < a; i++) m[i] = 0;\n"
                "        for (; i < b; i++) m[i] = s[i];\n"
                f"        for (; i < {n}; i++) m[i] = 0;")
    return f"""static void @P@_gather(const int16_t *in, int16_t *m, int iy0, int ix0)
{{
    /* the elements inside the input, the same for every row: [a, b) */
    const int a = ix0 < 0 ? -ix0 * {ci} : 0;
    const int b = {g.in_w} - ix0 < {cols} ? ({g.in_w} - ix0) * {ci} : {n};
    for (int ky = 0; ky < {g.k_h}; ky++, m += {length}) {{
        const int iy = iy0 + ky * {g.dil_h};
        if (iy < 0 || iy >= {g.in_h}) {{
{zero}
            continue;
        }}
        const int16_t *s = in + (iy * {g.in_w} + ix0) * {ci};
{copy}
    }}
}}"""


def _variant(g: Geometry, out_offs: list[int], tag: str) -> str:
    """The block functions reading windows whose k pairs lie at ``out_offs`` (bytes), named
    @P@_<tag>blkall / @P@_<tag>blk1 (their portable twins @P@_<tag>blkc)."""
    step = 2 * g.stride_w * g.in_c
    wpp = 2 * len(out_offs)
    gp = replace(g, k_w=2 * row_pairs(g), in_c=1)  # gp.pairs == len(out_offs)
    table = ", ".join(str(o // 2) for o in out_offs)
    xword = f"edgenn_s16_load32((const int16_t *)(const void *)x + off[p] + j * {step // 2})"
    decl = f"    static const int16_t off[] = {{{table}}};\n    int32_t acc[8];"
    portable = portable_fn(gp, True, xword).replace("    int32_t acc[8];", decl)
    text = portable + "\n\n" + block_fns(g, direct_mac(out_offs, step), 0, wpp)
    return text.replace("@P@_blk", f"@P@_{tag}blk")


def generate(g: Geometry, out_fn: str) -> str:
    """The layer's C (``@P@`` = a name shared by layers whose code is the same)."""
    co = g.out_c
    length, _ = block_plane(g)
    ci = g.in_c
    interior = offsets(g, g.in_w * ci, g.dil_h)
    wpp = 2 * len(interior)
    iy_max = g.in_h - 1 - (g.k_h - 1) * g.dil_h
    ix_max = g.in_w - ((PIXELS - 1) * g.stride_w + g.k_w)
    # an odd row's pad element: past the input's end for the last window of the last row
    tail = f" && (iy0 < {iy_max} || ix0 < {ix_max})" if (g.k_w * ci) % 2 else ""
    full = co // 2

    def calls(tag: str, x: str) -> str:
        out = []
        if full:
            out.append(f"@P@_{tag}blkall({x}, w0, r0, o);")
        if co % 2:
            out.append(f"@P@_{tag}blk1({x}, w0 + {full * wpp}, r0 + {8 * full}, o + {2 * full});")
        return " ".join(out)

    return f"""
/* conv_s16_gemm FOLDED, direct rows: {g.in_h}x{g.in_w}x{ci} -> {g.out_h}x{g.out_w}x{co},
 * {g.k_h}x{g.k_w}, stride {g.stride_h},{g.stride_w}, dilation {g.dil_h},{g.dil_w},
 * {len(interior)} k pairs, widened weights */
{out_fn}

{_gather_fn(g)}

{_variant(g, interior, "i")}

{_variant(g, offsets(g, length, 1), "b")}

static void @P@_conv(const int16_t *in, int16_t *out, void *scratch, const uint32_t *w0,
    const int32_t *r0)
{{
    int16_t *m = (int16_t *)scratch;
    for (int oy = 0; oy < {g.out_h}; oy++) {{
        const int iy0 = oy * {g.stride_h} - {g.pad_t};
        const int rows_in = iy0 >= 0 && iy0 <= {iy_max};
        int16_t *orow = out + oy * {g.out_w * co};
        for (int xa = 0; xa < {g.out_w}; xa += {PIXELS}) {{
            const int ox = xa < {g.out_w - PIXELS} ? xa : {g.out_w - PIXELS};
            const int ix0 = ox * {g.stride_w} - {g.pad_l};
            int16_t *o = orow + ox * {co};
            if (rows_in && ix0 >= 0 && ix0 <= {ix_max}{tail}) {{
                const uint32_t *x =
                    (const uint32_t *)(const void *)(in + (iy0 * {g.in_w} + ix0) * {ci});
                {calls("i", "x")}
            }} else {{
                @P@_gather(in, m, iy0, ix0);
                {calls("b", "(const uint32_t *)(const void *)m")}
            }}
        }}
    }}
}}
"""


def _fill(g: Geometry) -> str:
    """C zeroing the plane, then copying the input rows the windows read into it."""
    rows, length, base, total = plane(g)
    cols = (g.out_w - 1) * g.stride_w + g.k_w
    y0 = g.pad_t
    y1 = min(rows, g.pad_t + g.in_h)  # plane rows holding input rows
    n = max(0, min(g.in_w, cols - g.pad_l)) * g.in_c  # elements of an input row windows read
    first = base + y0 * length + g.pad_l * g.in_c  # even: rows and their starts word-aligned
    tail = f"\n        d[{n - 1}] = s[{n - 1}];" if n % 2 else ""
    return f"""    uint32_t *z = (uint32_t *)scratch;
    for (int i = 0; i < {total // 2}; i++) z[i] = 0;
    for (int y = {y0}; y < {y1}; y++) {{
        const int16_t *s = in + (y - {y0}) * {g.in_w * g.in_c};
        int16_t *d = (int16_t *)scratch + {first} + (y - {y0}) * {length};
        for (int i = 0; i < {n // 2}; i++)
            ((uint32_t *)(void *)d)[i] = edgenn_s16_load32(s + 2 * i);{tail}
    }}"""


def generate_whole(g: Geometry, out_fn: str) -> str:
    """The layer's C on the whole padded plane (:func:`whole_plane`)."""
    co, ci = g.out_c, g.in_c
    _, length, base, _ = plane(g)
    offs = offsets(g, length, g.dil_h)
    step = 2 * g.stride_w * ci
    wpp = 2 * len(offs)
    full = co // 2
    calls = []
    if full:
        calls.append("            @P@_iblkall(x, w0, r0, o);")
    if co % 2:
        calls.append(f"            @P@_iblk1(x, w0 + {full * wpp}, r0 + {8 * full}, "
                     f"o + {2 * full});")
    call_code = "\n".join(calls)
    return f"""
/* conv_s16_gemm FOLDED, padded plane: {g.in_h}x{g.in_w}x{ci} -> {g.out_h}x{g.out_w}x{co},
 * {g.k_h}x{g.k_w}, stride {g.stride_h},{g.stride_w}, dilation {g.dil_h},{g.dil_w},
 * {len(offs)} k pairs, widened weights */
{out_fn}

{_variant(g, offs, "i")}

static void @P@_conv(const int16_t *in, int16_t *out, void *scratch, const uint32_t *w0,
    const int32_t *r0)
{{
{_fill(g)}
    const int16_t *pl = (const int16_t *)scratch + {base};
    for (int oy = 0; oy < {g.out_h}; oy++) {{
        const int16_t *row = pl + oy * {g.stride_h * length};
        int16_t *orow = out + oy * {g.out_w * co};
        for (int xa = 0; xa < {g.out_w}; xa += {PIXELS}) {{
            const int ox = xa < {g.out_w - PIXELS} ? xa : {g.out_w - PIXELS};
            const uint32_t *x = (const uint32_t *)(const void *)(row + ox * {step // 2});
            int16_t *o = orow + ox * {co};
{call_code}
        }}
    }}
}}
"""


def shared_code(g: Geometry, out_fn: str, whole: bool) -> str:
    """The generated functions under a name derived from their text, defined once per model."""
    body = generate_whole(g, out_fn) if whole else generate(g, out_fn)
    name = "cs16r_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = name.upper() + "_DEFINED"
    return (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n\n"
            "static inline __attribute__((always_inline)) void @P@_conv(const int16_t *in, "
            "int16_t *out, void *scratch)\n{\n"
            f"    {name}_conv(in, out, scratch, @P@_w, @P@_quant);\n}}\n")
