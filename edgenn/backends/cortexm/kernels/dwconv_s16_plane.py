"""16x8 depthwise Conv2D (depth multiplier 1) on per-channel int16 planes with SMLAD tap
pairs: the int8 kernel's structure (``depthwise.py``) for int16 activations.

``dwconv_s16_gen`` runs four channels of an NHWC pixel at once, one SMLABB / SMLATT a MAC
(each channel has its own sum). Here, as in ``depthwise.py``, the layer runs channel by
channel: the channel's input plane is copied from NHWC into an int16 scratch plane (no
widening: the activations are int16 already) whose border is 0 (the 16x8 input zero point),
so one aligned word is two horizontally adjacent inputs and a tap pair (kx, kx+1) of an
output is one SMLAD against the weight pair (w_kx, w_kx+1) (``depthwise.row_code`` pairs the
taps of ``NO`` neighbouring outputs: 3x3 stride 1 is 2 multiplies a kernel row an output).
Border windows run the same code (the zero border). The weight pairs are a flash table built
here. The sums start at the bias (NARROW / FOLDED) or 0 and go to the 16x8 epilogue of
``conv_s16_gemm`` / ``pointwise_s16`` (``@P@_out``), the same records as ``dwconv_s16_gen``.

FOLDED layers run the steps as hand-ordered asm (:func:`_step_asm`), their clamp included
(USAT 15 for a ReLU, SSAT 16 and CMP bounds otherwise).

Any stride: ``row_code`` pairs the taps of a stride-2 row too (every window then starts on an
even column); its 5 input words a kernel row load in groups. A kernel whose rows do not pair
(a 9x1 audio kernel, dilated columns) runs on planes holding the input transposed (H and W
swapped as ``depthwise.plan_layer`` does for tall maps): the gathers read NHWC down the
columns, the taps pair along the plane rows, the outputs are stored one NHWC row apart
(:class:`Layout`). A tall map whose rows pair is transposed when the steps' proxy says so.

Claimed (priority above ``dwconv_s16_gen``) where the pairs apply along one axis; measured
against the int8 twins of ``benchmarks/s16_vs_s8.py`` and on mbv3_int16's 8x8x16 3x3 layer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import cast

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Cast, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.conv import ConvParams
from edgenn.backends.cortexm.kernels.conv_s16 import NARROW, WIDE64, epilogue, is_s16
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    Geometry,
    _epilogue_fn,
    geometry,
    rescale,
)
from edgenn.backends.cortexm.kernels.depthwise import (
    MAX_PLANE_BYTES,
    RowCode,
    plane_shape,
    row_code,
    steps_estimate,
    transposed,
)
from edgenn.backends.cortexm.kernels.dwconv_s16_gen import DwConvS16Gen
from edgenn.backends.cortexm.kernels.pointwise_s16 import FOLDED, fold, folded_fn
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvS16Params, prepare_conv_s16

MAX_TAPS = 64  # the tap loops are unrolled: bound the generated code
NO = 4  # outputs a step (depthwise.py's C step)
MIN_OUTPUTS = 16  # outputs a channel below which a strided layer stays on dwconv_s16_gen
REGS = 13  # r0-r12 and lr less one: the registers an asm step may take (depthwise.asm_regs)


def _pairs(k: int, dil: int) -> bool:
    """Do tap pairs (kx, kx + 1) apply along an axis of ``k`` taps ``dil`` apart?"""
    return k >= 2 and dil == 1


@dataclass(frozen=True, eq=False)
class Layout:
    """The layer as its planes hold it: ``p`` in the plane's orientation (``transposed``: H
    and W swapped, ``depthwise.transposed``; the plane rows are then the input's columns),
    its row code and plane shape."""

    p: ConvS16Params
    transposed: bool
    rc: RowCode
    ph: int
    pw: int

    @property
    def px_in(self) -> int:
        """int16 entries between two NHWC inputs adjacent along a plane row."""
        return self.p.in_h * self.p.in_c if self.transposed else self.p.in_c

    @property
    def row_in(self) -> int:
        """int16 entries between two NHWC inputs adjacent along a plane column."""
        return self.p.in_c if self.transposed else self.p.in_w * self.p.in_c

    @property
    def px_out(self) -> int:
        """int16 entries between two outputs adjacent along a step's row."""
        return self.p.out_h * self.p.out_c if self.transposed else self.p.out_c

    @property
    def row_out(self) -> int:
        """int16 entries between two outputs adjacent along a plane column."""
        return self.p.out_c if self.transposed else self.p.out_w * self.p.out_c

    @property
    def planes(self) -> int:
        return 2 if self.p.out_c >= 2 else 1

    @property
    def scratch_bytes(self) -> int:
        return self.planes * self.ph * self.pw * 2


def _oriented(p: ConvS16Params, flip: bool) -> Layout | None:
    q = cast(ConvS16Params, transposed(cast(ConvParams, p))) if flip else p
    ph, pw = plane_shape(q)
    lay = Layout(q, flip, row_code(q.k_w, q.stride_w, q.dil_w, NO), ph, pw)
    return lay if lay.scratch_bytes <= MAX_PLANE_BYTES else None


def layout(p: ConvS16Params) -> Layout | None:
    """The planes' orientation, or None when the tap pairs apply in neither.

    Rows when the kernel's rows pair (at least 2 taps, undilated); else the columns (a 9x1
    audio kernel: the plane holds the input transposed and its 9 taps run along the rows).
    When both pair, a map taller than wide is transposed when the steps' cycle proxy
    (``depthwise.steps_estimate``) gains as for the int8 kernel (``depthwise.plan_layer``)."""
    rows = _oriented(p, False) if _pairs(p.k_w, p.dil_w) else None
    if not _pairs(p.k_h, p.dil_h) or (rows is not None and p.out_h <= p.out_w):
        return rows
    cols = _oriented(p, True)
    if rows is None or cols is None:
        return rows or cols
    # why 0.95: the proxy is rough (as depthwise.plan_layer)
    gain = steps_estimate(cols.p, NO, cols.rc) < 0.95 * steps_estimate(rows.p, NO, rows.rc)
    return cols if gain else rows


def weight_table(lay: Layout, quant: np.ndarray) -> np.ndarray:
    """uint32 [C, KH * regs + 1]: channel c's weight pair registers (low half first), row by
    row, then its record's m (``quant``'s second word, the asm step's SMMULR factor)."""
    p, rc = lay.p, lay.rc
    w = p.w[..., 0].astype(np.int64)  # [C, KH, KW]
    zero = np.zeros(w.shape[0], np.int64)
    cols = []
    for ky in range(p.k_h):
        for lo, hi in rc.regs:
            lo_v = w[:, ky, lo] if lo is not None else zero
            hi_v = w[:, ky, hi] if hi is not None else zero
            cols.append((lo_v & 0xFFFF) | ((hi_v & 0xFFFF) << 16))
    cols.append(quant.reshape(-1, 4)[:w.shape[0], 1].astype(np.int64) & 0xFFFFFFFF)
    return np.ascontiguousarray(np.stack(cols, axis=1).astype(np.uint32))


def _step(lay: Layout, n: int) -> str:
    """C block: ``n`` outputs of one row from plane row ``row`` to output ``o``."""
    p, rc, pw = lay.p, lay.rc, lay.pw
    nr = len(rc.regs)
    ops = [op for op in rc.ops if op[0] < n]
    words = sorted({op[2] for op in ops})
    regs = sorted({op[3] for op in ops})
    lines = ["        {",
             "            int32_t " + ", ".join(f"a{k} = start" for k in range(n)) + ";"]
    for ky in range(p.k_h):
        base = ky * p.dil_h * pw
        lines.append("            {")
        lines.append("                const uint32_t " + ", ".join(
            f"w{r} = wb[{ky * nr + r}]" for r in regs) + ";")
        lines.append("                const uint32_t " + ", ".join(
            f"x{wd} = dwk_pair(row + {base + 2 * wd})" for wd in words) + ";")
        for k, kind, wd, r in ops:
            fn = "edgenn_smlad" if kind == "d" else f"dwk_smla{kind}"
            lines.append(f"                a{k} = {fn}(x{wd}, w{r}, a{k});")
        lines.append("            }")
    lines += [f"            o[{k * lay.px_out}] = @P@_out(a{k}, r, b);" for k in range(n)]
    lines.append("        }")
    return "\n".join(lines)


def _clamp_asm(g: Geometry, regs: list[str]) -> list[str]:
    """The clamp of ``regs`` after SMMULR (``conv_s16_gemm._clamp``): SSAT 16 alone; USAT 15
    for a ReLU ([0, 32767]); else SSAT 16, then the bounds inside int16 from t1 / t2 (CMP,
    IT, MOV as ``pointwise_s16``'s row epilogue)."""
    relu = g.lo == 0 and g.hi >= 32767
    lo, hi = g.lo > -32768 and not relu, g.hi < 32767
    out = []
    if lo:
        out += [f"movw %[t1], #{g.lo & 0xFFFF}", f"movt %[t1], #{(g.lo >> 16) & 0xFFFF}"]
    if hi:
        out += [f"movw %[t2], #{g.hi & 0xFFFF}", f"movt %[t2], #{(g.hi >> 16) & 0xFFFF}"]
    for reg in regs:
        out.append(f"usat {reg}, #15, {reg}" if relu else f"ssat {reg}, #16, {reg}")
        if lo:
            out += [f"cmp {reg}, %[t1]", "it lt", f"movlt {reg}, %[t1]"]
        if hi:
            out += [f"cmp {reg}, %[t2]", "it gt", f"movgt {reg}, %[t2]"]
    return out


def _clamp_temps(g: Geometry) -> int:
    """Temporaries the epilogue of :func:`_step_asm` needs: m, then t1 / t2 if it uses them."""
    return 3 if g.hi < 32767 else 2 if g.lo > -32768 and g.lo != 0 else 1


def _asm_ok(lay: Layout, g: Geometry, mode: int, n: int, ahead: int = 0) -> bool:
    """The asm step applies: FOLDED, a kernel row's weight registers and one input word (and
    the clamp's constants) beside the ``n`` accumulators and row / wb / o / start in 13
    registers, immediates fit (``ahead`` more steps of NO outputs folded into the offsets)."""
    if mode != FOLDED:
        return False
    p, rc = lay.p, lay.rc
    ops = [op for op in rc.ops if op[0] < n]
    regs = {op[3] for op in ops}
    nw = p.k_h * len(rc.regs)
    last = max(op[2] for op in ops)
    temps = max(len(regs) + 1, _clamp_temps(g))
    return (n + temps + 4 <= REGS and 4 * nw <= 4095
            and ((p.k_h - 1) * p.dil_h * lay.pw + 2 * last + ahead * NO * p.stride_w) * 2 <= 4095
            and 2 * (ahead * NO + n - 1) * lay.px_out <= 4095)


def _step_asm(lay: Layout, g: Geometry, n: int, ahead: int = 0) -> str:
    """:func:`_step` as one asm block (FOLDED): per kernel row its weight registers and input
    words loaded as one group (they pipeline), then the multiplies, the first of each
    accumulator adding ``start``; then m (the table's word after the pairs), SMMULR, the
    clamp (:func:`_clamp_asm`), STRH (the C step's ``@P@_out``). When a row's words
    outnumber the free registers (stride 2: 5 words for 4 outputs), the multiplies run in
    word order and the words load in groups as registers free up (``depthwise._step_asm``'s
    schedule).
    ``ahead``: the step ``ahead`` steps of NO outputs after ``row`` / ``o``, folded into the
    immediate offsets."""
    p, rc, pw = lay.p, lay.rc, lay.pw
    row_at, o_at = ahead * NO * p.stride_w * 2, ahead * NO * lay.px_out * 2
    nr = len(rc.regs)
    ops = [op for op in rc.ops if op[0] < n]
    words = sorted({op[2] for op in ops})
    regs = sorted({op[3] for op in ops})
    temps = max(min(REGS - 4 - n, len(regs) + len(words)), _clamp_temps(g))
    wreg = {r: f"%[t{i}]" for i, r in enumerate(regs)}
    # all words held: the row code's order (as measured); else word order, loads in groups
    order = ops if len(regs) + len(words) <= temps else sorted(ops, key=lambda op: op[2])
    asm: list[str] = []
    started: set[int] = set()
    for ky in range(p.k_h):
        base = ky * p.dil_h * pw * 2 + row_at
        loads = [f"ldr {wreg[r]}, [%[wb], #{4 * (ky * nr + r)}]" for r in regs]
        free = [f"%[t{i}]" for i in range(len(regs), temps)]
        held: dict[int, str] = {}
        pending = list(words)
        for i, (k, kind, wd, r) in enumerate(order):
            if wd not in held:
                for old in list(held):  # release the words no later multiply reads
                    if all(op[2] != old for op in order[i:]):
                        free.append(held.pop(old))
                while free and pending:
                    nxt = pending.pop(0)
                    held[nxt] = free.pop(0)
                    loads.append(f"ldr {held[nxt]}, [%[row], #{base + 4 * nxt}]")
                asm += loads
                loads = []
            acc = f"%[a{k}]" if k in started else "%[start]"
            started.add(k)
            mnem = "smlad" if kind == "d" else f"smla{kind}"
            asm.append(f"{mnem} %[a{k}], {held[wd]}, {wreg[r]}, {acc}")
    asm.append(f"ldr %[t0], [%[wb], #{4 * p.k_h * nr}]")
    asm += [f"smmulr %[a{k}], %[a{k}], %[t0]" for k in range(n)]
    asm += _clamp_asm(g, [f"%[a{k}]" for k in range(n)])
    asm += [f"strh %[a{k}], [%[o], #{o_at + 2 * k * lay.px_out}]" for k in range(n)]
    outs = [f'[a{k}] "=&r"(a{k})' for k in range(n)] + [
        f'[t{i}] "=&r"(t{i})' for i in range(temps)]
    body = "\n".join(f'                "{line}\\n\\t"' for line in asm)
    return ("        {\n"
            f"            int32_t {', '.join(f'a{k}' for k in range(n))};\n"
            f"            uint32_t {', '.join(f't{i}' for i in range(temps))};\n"
            "            __asm__ volatile(\n" + body + "\n"
            f"                : {', '.join(outs)}\n"
            '                : [row] "r"(row), [wb] "r"(wb), [o] "r"(o), [start] "r"(start)\n'
            '                : "cc", "memory");\n'
            "        }")


def _step_any(lay: Layout, g: Geometry, mode: int, n: int) -> str:
    """The asm step on ARMv7E-M where it applies, else (and on hosts) the C step."""
    if not _asm_ok(lay, g, mode, n):
        return _step(lay, n)
    return ("#if EDGENN_HAVE_DSP\n" + _step_asm(lay, g, n) + "\n#else\n"
            + _step(lay, n) + "\n#endif")


def _borders(lay: Layout) -> str:
    """C: 0 (the 16x8 input zero point) into the planes' borders, once a layer (the gathers
    rewrite the interiors only): the rows above and below the interior as words, the strips
    left and right of it as halfwords. why not the whole plane: a stride-2 plane is ~4x the
    outputs (``depthwise._borders``)."""
    p, pw = lay.p, lay.pw
    size = lay.ph * pw
    bot0 = (p.pad_t + p.in_h) * pw  # even: pw is
    lines = ["    uint32_t *pz = (uint32_t *)(void *)plane;", "    (void)pz;"]
    for k in range(lay.planes):
        for a, b in ((k * size, k * size + p.pad_t * pw), (k * size + bot0, (k + 1) * size)):
            if b > a:
                lines.append(f"    for (int i = {a // 2}; i < {b // 2}; i++) pz[i] = 0u;")
    right0 = p.pad_l + p.in_w
    strips = [(a + k * size, b + k * size) for k in range(lay.planes)
              for a, b in ((0, p.pad_l), (right0, pw)) if b > a]
    if p.in_h and strips:
        lines.append(f"    for (int y = 0; y < {p.in_h}; y++) {{")
        lines.append(f"        int16_t *r = plane + {p.pad_t * pw} + y * {pw};")
        for a, b in strips:
            if b - a > 4:
                lines.append(f"        for (int j = {a}; j < {b}; j++) r[j] = 0;")
            else:
                lines += [f"        r[{j}] = 0;" for j in range(a, b)]
        lines.append("    }")
    return "\n".join(lines) + "\n"


def _gathers(lay: Layout) -> tuple[str, str]:
    """C: @P@_gather (one channel's plane interior) and @P@_gather2 (channels c, c+1: two
    words, pixels i, i+1, PKHBT / PKHTB, two stores) from NHWC (src = in + c)."""
    p, pw, px = lay.p, lay.pw, lay.px_in
    gather = [f"        edgenn_store32(d + {i}, dwk_pk(s[{i * px}], s[{(i + 1) * px}]));"
              for i in range(0, p.in_w - 1, 2)]
    if p.in_w % 2:
        gather.append(f"        d[{p.in_w - 1}] = s[{(p.in_w - 1) * px}];")
    gather2 = []
    for i in range(0, p.in_w - 1, 2):
        gather2 += [f"        {{ const uint32_t u = edgenn_s16_load32(s + {i * px}), "
                    f"v = edgenn_s16_load32(s + {(i + 1) * px});",
                    f"          edgenn_store32(d0 + {i}, (u & 0xFFFFu) | (v << 16));",
                    f"          edgenn_store32(d1 + {i}, (v & 0xFFFF0000u) | (u >> 16)); }}"]
    if p.in_w % 2:
        gather2 += [f"        d0[{p.in_w - 1}] = s[{(p.in_w - 1) * px}];",
                    f"        d1[{p.in_w - 1}] = s[{(p.in_w - 1) * px + 1}];"]
    g1 = f"""/* channel c's plane interior (src = in + c) */
static void @P@_gather(const int16_t *src, int16_t *d)
{{
    for (int iy = 0; iy < {p.in_h}; iy++, src += {lay.row_in}, d += {pw}) {{
        const int16_t *s = src;
{chr(10).join(gather)}
    }}
}}"""
    g2 = f"""/* channels c, c+1's plane interiors (src = in + c) */
static void @P@_gather2(const int16_t *src, int16_t *d0, int16_t *d1)
{{
    for (int iy = 0; iy < {p.in_h}; iy++, src += {lay.row_in}, d0 += {pw}, d1 += {pw}) {{
        const int16_t *s = src;
{chr(10).join(gather2)}
    }}
}}"""
    return (g1 if p.out_c % 2 else ""), (g2 if p.out_c >= 2 else "")


def generate(lay: Layout, g: Geometry, mode: int) -> str:
    p, ph, pw = lay.p, lay.ph, lay.pw
    c = p.out_c
    nw = p.k_h * len(lay.rc.regs) + 1  # table words a channel: the pairs, then m
    nsteps, rest = divmod(p.out_w, NO)
    steps = ""
    adv_row, adv_o = NO * p.stride_w, NO * lay.px_out
    if nsteps >= 2 and _asm_ok(lay, g, mode, NO, 1):
        # two steps a trip, the second one's offsets in its immediates: half the loop overhead
        steps += (f"        for (int s = 0; s < {nsteps // 2}; s++, row += {2 * adv_row}, "
                  f"o += {2 * adv_o}) {{\n#if EDGENN_HAVE_DSP\n"
                  + _step_asm(lay, g, NO) + "\n" + _step_asm(lay, g, NO, 1)
                  + "\n#else\n" + _step(lay, NO) + f"\n        row += {adv_row}, "
                  f"o += {adv_o};\n" + _step(lay, NO) + f"\n        row -= {adv_row}, "
                  f"o -= {adv_o};\n#endif\n        }}\n")
        if nsteps % 2:
            steps += (_step_any(lay, g, mode, NO) + f"\n        row += {adv_row}, "
                      f"o += {adv_o};\n")
    elif nsteps:
        steps += (f"        for (int s = 0; s < {nsteps}; s++, row += {adv_row}, "
                  f"o += {adv_o})\n" + _step_any(lay, g, mode, NO) + "\n")
    if rest:
        steps += _step_any(lay, g, mode, rest) + "\n"
    start = "r[0]" if mode in (NARROW, FOLDED) else "0"
    off = p.pad_t * pw + p.pad_l
    size = ph * pw
    loop = (f"    for (int c = 0; c + 1 < {c}; c += 2) {{\n"
            f"        @P@_gather2(in + c, plane + {off}, plane + {size + off});\n"
            f"        @P@_chan(plane, out + c, wb + {nw} * c, r + 4 * c, b + c);\n"
            f"        @P@_chan(plane + {size}, out + c + 1, wb + {nw} * (c + 1), "
            f"r + 4 * (c + 1), b + c + 1);\n    }}\n")
    if c % 2:
        loop += (f"    @P@_gather(in + {c - 1}, plane + {off});\n"
                 f"    @P@_chan(plane, out + {c - 1}, wb + {nw * (c - 1)}, r + {4 * (c - 1)}, "
                 f"b + {c - 1});\n")
    g1, g2 = _gathers(lay)
    orient = ", transposed (plane rows: input columns)" if lay.transposed else ""
    return f"""
/* dwconv_s16_plane: {p.in_h}x{p.in_w}x{c} -> {p.out_h}x{p.out_w}, {p.k_h}x{p.k_w},
 * stride {p.stride_h},{p.stride_w}, dilation {p.dil_h},{p.dil_w}, plane {ph}x{pw}{orient} */
{folded_fn(g) if mode == FOLDED else _epilogue_fn(mode, g)}

{g1}
{g2}

/* the outputs of one channel (o = out + c) from its plane */
static void __attribute__((noipa)) @P@_chan(const int16_t *plane, int16_t *out,
    const uint32_t *wb, const int32_t *rc, const int64_t *bc)
{{
    /* why copies: the record in locals stays in registers across the int16 stores */
    const int32_t r[4] = {{rc[0], rc[1], rc[2], rc[3]}};
    const int64_t b[1] = {{bc[0]}};
    const int32_t start = {start};
    (void)start;
    (void)r;
    (void)b;
    for (int oy = 0; oy < {p.out_h}; oy++) {{
        const int16_t *row = plane + oy * {p.stride_h * pw};
        int16_t *o = out + oy * {lay.row_out};
{steps}    }}
}}

static void __attribute__((noinline)) @P@_dw(const int16_t *in, int16_t *out,
    int16_t *plane, const uint32_t *wb, const int32_t *r, const int64_t *b)
{{
{_borders(lay)}{loop}}}
"""


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not (core.has_dsp and is_s16(node, graph) and is_depthwise(node, graph)):
        return False
    p = prepare_conv_s16(node, graph)
    if p.out_c != p.in_c or p.k_h * p.k_w > MAX_TAPS:
        return False
    # why: the tap pairs need two adjacent taps along the plane rows (either orientation)
    if layout(p) is None or epilogue(p.requant, p.w).mode == WIDE64:
        return False
    # why: the planes copy every input of a channel and pay a set-up per channel, while
    # dwconv_s16_gen reads only the windows; a channel of few outputs reading many inputs
    # (a large stride) does not repay the copy. Measured on 90 random claimed layers (the
    # dwp sweep, seeds 45-47) against dwconv_s16_gen: the 10 slower ones (1.04-2.92x) had
    # <= 15 outputs a channel and > 3.7 inputs an output; the kept ones run 0.58-0.98x (the
    # rule also refuses one at 0.84x)
    outs = p.out_h * p.out_w
    few = outs < MIN_OUTPUTS and p.in_h * p.in_w > 3 * outs
    return not (few and DwConvS16Gen().matches(node, graph, core))


class DwConvS16Plane:
    """16x8 depthwise Conv2D on per-channel int16 planes, SMLAD tap pairs."""

    op = "Conv2D"
    priority = 25  # above edgenn_dwconv_s16_gen_dsp (20) where it applies
    name = "edgenn_dwconv_s16_plane_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = prepare_conv_s16(node, graph)
        g = geometry(p)
        mode, quant, code = rescale(p)
        mode, quant = fold(p, mode, quant)  # the bias in the sum, one SMMULR (pointwise_s16)
        lay = layout(p)
        assert lay is not None  # matches() checked it
        body = generate(lay, g, mode)
        name = "dws16p_" + hashlib.sha1(body.encode()).hexdigest()[:12]
        guard = name.upper() + "_DEFINED"
        code += (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n"
                 "static inline __attribute__((always_inline)) void @P@_dw(const int16_t *in,"
                 " int16_t *out, int16_t *plane)\n{\n"
                 f"    {name}_dw(in, out, plane, @P@_w, @P@_quant, @P@_bias);\n}}\n")
        return KernelCall(
            call=generated("dw", self.name, IN0, OUT0, Cast("int16_t *", SCRATCH)),
            sources=("edgenn_conv_s16_mac.h", "edgenn_dwconv_s8_gen_dsp.h"),
            arrays=(CArray("w", "uint32_t", weight_table(lay, quant).ravel()),
                    CArray("quant", "int32_t", quant)),
            scratch_bytes=lay.scratch_bytes,
            comment=f"16x8 depthwise {g.in_h}x{g.in_w}x{g.in_c}, {g.k_h}x{g.k_w} stride "
                    f"{g.stride_h},{g.stride_w}: int16 planes, SMLAD tap pairs"
                    + (" down the columns" if lay.transposed else ""),
            code=code)


register_kernel(DwConvS16Plane())
