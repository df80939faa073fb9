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

FOLDED layers whose clamp is SSAT's run the steps as hand-ordered asm (:func:`_step_asm`).

Claimed (priority above ``dwconv_s16_gen``) for unit-stride, undilated rows of a kernel at
least 2 wide, where the pairs apply; measured on mbv3_int16's 8x8x16 3x3 layer.
"""

from __future__ import annotations

import hashlib
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
)
from edgenn.backends.cortexm.kernels.pointwise_s16 import FOLDED, fold, folded_fn
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvS16Params, prepare_conv_s16

MAX_TAPS = 64  # the tap loops are unrolled: bound the generated code
NO = 4  # outputs a step (depthwise.py's C step)


def _shape(p: ConvS16Params) -> tuple[int, int]:
    # plane_shape reads only the geometry fields, which ConvS16Params shares with ConvParams
    return plane_shape(cast(ConvParams, p))


def weight_table(p: ConvS16Params, rc: RowCode, quant: np.ndarray) -> np.ndarray:
    """uint32 [C, KH * regs + 1]: channel c's weight pair registers (low half first), row by
    row, then its record's m (``quant``'s second word, the asm step's SMMULR factor)."""
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


def _step(p: ConvS16Params, rc: RowCode, pw: int, n: int) -> str:
    """C block: ``n`` outputs of one row from plane row ``row`` to output ``o``."""
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
    lines += [f"            o[{k * p.out_c}] = @P@_out(a{k}, r, b);" for k in range(n)]
    lines.append("        }")
    return "\n".join(lines)


def _asm_ok(p: ConvS16Params, g: Geometry, mode: int, rc: RowCode, pw: int, n: int,
            ahead: int = 0) -> bool:
    """The asm step applies: FOLDED with SSAT's clamp only, 13 registers, immediates fit
    (``ahead`` more steps of NO outputs folded into the offsets)."""
    if mode != FOLDED or g.lo != -32768 or g.hi != 32767:
        return False
    ops = [op for op in rc.ops if op[0] < n]
    words = {op[2] for op in ops}
    regs = {op[3] for op in ops}
    nw = p.k_h * len(rc.regs)
    last = max(words)
    return (n + len(regs) + len(words) + 4 <= 13 and 4 * nw <= 4095
            and ((p.k_h - 1) * p.dil_h * pw + 2 * last + ahead * NO * p.stride_w) * 2 <= 4095
            and 2 * (ahead * NO + n - 1) * p.out_c <= 4095)


def _step_asm(p: ConvS16Params, rc: RowCode, pw: int, n: int, ahead: int = 0) -> str:
    """:func:`_step` as one asm block (FOLDED, no clamp but SSAT): per kernel row its weight
    registers and input words loaded as one group (they pipeline), then the multiplies, the
    first of each accumulator adding ``start``; then m (the table's word after the pairs),
    SMMULR, SSAT 16, STRH (the C step's ``@P@_out``). ``ahead``: the step ``ahead`` steps
    of NO outputs after ``row`` / ``o``, folded into the immediate offsets."""
    row_at, o_at = ahead * NO * p.stride_w * 2, ahead * NO * p.out_c * 2
    nr = len(rc.regs)
    ops = [op for op in rc.ops if op[0] < n]
    words = sorted({op[2] for op in ops})
    regs = sorted({op[3] for op in ops})
    wreg = {r: f"%[t{i}]" for i, r in enumerate(regs)}
    xreg = {wd: f"%[t{len(regs) + i}]" for i, wd in enumerate(words)}
    temps = len(regs) + len(words)
    asm: list[str] = []
    started: set[int] = set()
    for ky in range(p.k_h):
        base = ky * p.dil_h * pw * 2 + row_at
        asm += [f"ldr {wreg[r]}, [%[wb], #{4 * (ky * nr + r)}]" for r in regs]
        asm += [f"ldr {xreg[wd]}, [%[row], #{base + 4 * wd}]" for wd in words]
        for k, kind, wd, r in ops:
            acc = f"%[a{k}]" if k in started else "%[start]"
            started.add(k)
            mnem = "smlad" if kind == "d" else f"smla{kind}"
            asm.append(f"{mnem} %[a{k}], {xreg[wd]}, {wreg[r]}, {acc}")
    asm.append(f"ldr %[t0], [%[wb], #{4 * p.k_h * nr}]")
    asm += [f"smmulr %[a{k}], %[a{k}], %[t0]" for k in range(n)]
    asm += [f"ssat %[a{k}], #16, %[a{k}]" for k in range(n)]
    asm += [f"strh %[a{k}], [%[o], #{o_at + 2 * k * p.out_c}]" for k in range(n)]
    outs = [f'[a{k}] "=&r"(a{k})' for k in range(n)] + [
        f'[t{i}] "=&r"(t{i})' for i in range(temps)]
    body = "\n".join(f'                "{line}\\n\\t"' for line in asm)
    return ("        {\n"
            f"            int32_t {', '.join(f'a{k}' for k in range(n))};\n"
            f"            uint32_t {', '.join(f't{i}' for i in range(temps))};\n"
            "            __asm__ volatile(\n" + body + "\n"
            f"                : {', '.join(outs)}\n"
            '                : [row] "r"(row), [wb] "r"(wb), [o] "r"(o), [start] "r"(start)\n'
            '                : "memory");\n'
            "        }")


def _step_any(p: ConvS16Params, g: Geometry, mode: int, rc: RowCode, pw: int, n: int) -> str:
    """The asm step on ARMv7E-M where it applies, else (and on hosts) the C step."""
    if not _asm_ok(p, g, mode, rc, pw, n):
        return _step(p, rc, pw, n)
    return ("#if EDGENN_HAVE_DSP\n" + _step_asm(p, rc, pw, n) + "\n#else\n"
            + _step(p, rc, pw, n) + "\n#endif")


def generate(p: ConvS16Params, g: Geometry, mode: int, rc: RowCode) -> str:
    ph, pw = _shape(p)
    c = p.out_c
    nw = p.k_h * len(rc.regs) + 1  # table words a channel: the pairs, then m
    nsteps, rest = divmod(p.out_w, NO)
    steps = ""
    adv_row, adv_o = NO * p.stride_w, NO * c
    if nsteps >= 2 and _asm_ok(p, g, mode, rc, pw, NO, 1):
        # two steps a trip, the second one's offsets in its immediates: half the loop overhead
        steps += (f"        for (int s = 0; s < {nsteps // 2}; s++, row += {2 * adv_row}, "
                  f"o += {2 * adv_o}) {{\n#if EDGENN_HAVE_DSP\n"
                  + _step_asm(p, rc, pw, NO) + "\n" + _step_asm(p, rc, pw, NO, 1)
                  + "\n#else\n" + _step(p, rc, pw, NO) + f"\n        row += {adv_row}, "
                  f"o += {adv_o};\n" + _step(p, rc, pw, NO) + f"\n        row -= {adv_row}, "
                  f"o -= {adv_o};\n#endif\n        }}\n")
        if nsteps % 2:
            steps += (_step_any(p, g, mode, rc, pw, NO) + f"\n        row += {adv_row}, "
                      f"o += {adv_o};\n")
    elif nsteps:
        steps += (f"        for (int s = 0; s < {nsteps}; s++, row += {adv_row}, "
                  f"o += {adv_o})\n" + _step_any(p, g, mode, rc, pw, NO) + "\n")
    if rest:
        steps += _step_any(p, g, mode, rc, pw, rest) + "\n"
    start = "r[0]" if mode in (NARROW, FOLDED) else "0"
    off = p.pad_t * pw + p.pad_l
    gather = [f"        edgenn_store32(d + {i}, dwk_pk(s[{i * c}], s[{(i + 1) * c}]));"
              for i in range(0, p.in_w - 1, 2)]
    if p.in_w % 2:
        gather.append(f"        d[{p.in_w - 1}] = s[{(p.in_w - 1) * c}];")
    gather2 = []  # channels c, c+1: two words (pixels i, i+1), PKHBT / PKHTB, two stores
    for i in range(0, p.in_w - 1, 2):
        gather2 += [f"        {{ const uint32_t u = edgenn_s16_load32(s + {i * c}), "
                    f"v = edgenn_s16_load32(s + {(i + 1) * c});",
                    f"          edgenn_store32(d0 + {i}, (u & 0xFFFFu) | (v << 16));",
                    f"          edgenn_store32(d1 + {i}, (v & 0xFFFF0000u) | (u >> 16)); }}"]
    if p.in_w % 2:
        gather2 += [f"        d0[{p.in_w - 1}] = s[{(p.in_w - 1) * c}];",
                    f"        d1[{p.in_w - 1}] = s[{(p.in_w - 1) * c + 1}];"]
    size = ph * pw
    planes = 2 if c >= 2 else 1
    loop = (f"    for (int c = 0; c + 1 < {c}; c += 2) {{\n"
            f"        @P@_gather2(in + c, plane + {off}, plane + {size + off});\n"
            f"        @P@_chan(plane, out + c, wb + {nw} * c, r + 4 * c, b + c);\n"
            f"        @P@_chan(plane + {size}, out + c + 1, wb + {nw} * (c + 1), "
            f"r + 4 * (c + 1), b + c + 1);\n    }}\n")
    if c % 2:
        loop += (f"    @P@_gather(in + {c - 1}, plane + {off});\n"
                 f"    @P@_chan(plane, out + {c - 1}, wb + {nw * (c - 1)}, r + {4 * (c - 1)}, "
                 f"b + {c - 1});\n")
    g1 = f"""/* channel c's plane interior (src = in + c) */
static void @P@_gather(const int16_t *src, int16_t *d)
{{
    for (int iy = 0; iy < {p.in_h}; iy++, src += {p.in_w * c}, d += {pw}) {{
        const int16_t *s = src;
{chr(10).join(gather)}
    }}
}}"""
    g2 = f"""/* channels c, c+1's plane interiors (src = in + c) */
static void @P@_gather2(const int16_t *src, int16_t *d0, int16_t *d1)
{{
    for (int iy = 0; iy < {p.in_h}; iy++, src += {p.in_w * c}, d0 += {pw}, d1 += {pw}) {{
        const int16_t *s = src;
{chr(10).join(gather2)}
    }}
}}"""
    return f"""
/* dwconv_s16_plane: {p.in_h}x{p.in_w}x{c} -> {p.out_h}x{p.out_w}, {p.k_h}x{p.k_w},
 * stride {p.stride_h},{p.stride_w}, dilation {p.dil_h},{p.dil_w}, plane {ph}x{pw} */
{folded_fn(g) if mode == FOLDED else _epilogue_fn(mode, g)}

{g1 if c % 2 else ""}
{g2 if c >= 2 else ""}

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
        int16_t *o = out + oy * {p.out_w * c};
{steps}    }}
}}

static void __attribute__((noinline)) @P@_dw(const int16_t *in, int16_t *out,
    int16_t *plane, const uint32_t *wb, const int32_t *r, const int64_t *b)
{{
    uint32_t *pz = (uint32_t *)(void *)plane;
    for (int i = 0; i < {planes * ph * pw // 2}; i++) pz[i] = 0u; /* the zero borders */
{loop}}}
"""


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not (core.has_dsp and is_s16(node, graph) and is_depthwise(node, graph)):
        return False
    p = prepare_conv_s16(node, graph)
    if p.out_c != p.in_c or p.k_h * p.k_w > MAX_TAPS or p.k_w < 2:
        return False
    if p.stride_w != 1 or p.dil_w != 1:  # why: the tap pairs need adjacent columns
        return False
    ph, pw = _shape(p)
    if 2 * ph * pw * 2 > MAX_PLANE_BYTES:  # two planes
        return False
    return epilogue(p.requant, p.w).mode != WIDE64


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
        rc = row_code(p.k_w, p.stride_w, p.dil_w, NO)
        ph, pw = _shape(p)
        body = generate(p, g, mode, rc)
        name = "dws16p_" + hashlib.sha1(body.encode()).hexdigest()[:12]
        guard = name.upper() + "_DEFINED"
        code += (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n"
                 "static inline __attribute__((always_inline)) void @P@_dw(const int16_t *in,"
                 " int16_t *out, int16_t *plane)\n{\n"
                 f"    {name}_dw(in, out, plane, @P@_w, @P@_quant, @P@_bias);\n}}\n")
        return KernelCall(
            call=generated("dw", self.name, IN0, OUT0, Cast("int16_t *", SCRATCH)),
            sources=("edgenn_conv_s16_mac.h", "edgenn_dwconv_s8_gen_dsp.h"),
            arrays=(CArray("w", "uint32_t", weight_table(p, rc, quant).ravel()),
                    CArray("quant", "int32_t", quant)),
            scratch_bytes=(2 if p.out_c >= 2 else 1) * ph * pw * 2,
            comment=f"16x8 depthwise {g.in_h}x{g.in_w}x{g.in_c}, {g.k_h}x{g.k_w} stride "
                    f"{g.stride_h},{g.stride_w}: int16 planes, SMLAD tap pairs",
            code=code)


register_kernel(DwConvS16Plane())
