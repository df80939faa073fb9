"""Fast int8 TransposeConv2D (groups 1) for DSP cores: one generated int8 convolution per
output phase, on the im2col GEMM of ``conv_gemm``.

Output pixel o (after the crop ``pad``) sums input i through tap k where
``o + pad = i * stride + k * dilation``. For the outputs of one phase r = o mod stride the
taps that reach them are fixed: those with ``(r + pad - k d) % stride == 0``, input offset
``(r + pad - k d) / stride`` from m = (o - r) / stride. Ordered by that offset they are a
plain convolution of the input with stride 1, dilation ``d / gcd(stride, d)`` and (possibly
negative) padding ``-min offset`` whose outputs are every stride-th output. Taps outside the
input contribute nothing in TFLite Micro's scatter, which is what ``conv_gemm``'s padding
with the input zero point (products cancel against the folded bias) gives; the int32 sums
are order-free, the requantization is the int8 Conv2D's, so every phase is bit-exact.

Each phase runs ``conv_gemm``'s generated code (shared between phases of one shape) into a
scratch buffer, then its pixels are copied to their strided places in the output. The
pixels of a phase no tap reaches (stride above the kernel's reach) get the rescaled bias.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import requantize, wrap_int32
from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import i32, is_int8
from edgenn.backends.cortexm.kernels.conv import ConvParams
from edgenn.backends.cortexm.kernels.conv_gemm import (
    MAX_SCRATCH,
    generate,
    layer_plan_of,
    pack_weights,
    records,
    scratch_bytes,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.prepared.conv import conv_geometry, prepare_transpose_conv


@dataclass(frozen=True)
class AxisPhase:
    """One phase of one axis: outputs r, r + stride, ... (``count`` of them), the taps that
    reach them in input order, their input dilation and the sub-convolution's padding."""

    r: int
    count: int
    taps: tuple[int, ...]
    dil: int
    pad: int


def axis_phases(out: int, stride: int, k: int, dil: int, pad: int) -> list[AxisPhase]:
    """The phases of an axis (a phase that no tap reaches has ``taps == ()``: its outputs
    are the bias alone)."""
    phases = []
    for r in range(min(stride, out)):
        ks = [t for t in range(k) if (r + pad - t * dil) % stride == 0]
        if not ks:
            phases.append(AxisPhase(r, len(range(r, out, stride)), (), 1, 0))
            continue
        ks.sort(key=lambda t: (r + pad - t * dil) // stride)
        offs = [(r + pad - t * dil) // stride for t in ks]
        step = dil // math.gcd(stride, dil)
        phases.append(AxisPhase(r, len(range(r, out, stride)), tuple(ks), step, -offs[0]))
    return phases


def _sub_params(p: ConvParams, py: AxisPhase, px: AxisPhase) -> ConvParams:
    """The int8 convolution that computes the outputs of phase (py, px): the layer's record
    with the phase's taps, its shape and its bias folded over those taps alone."""
    w = np.ascontiguousarray(p.w[:, list(py.taps)][:, :, list(px.taps)]).astype(np.int8)
    bias = np.asarray(p.bias, np.int64)
    return ConvParams(
        in_h=p.in_h, in_w=p.in_w, in_c=p.in_c, out_h=py.count, out_w=px.count,
        out_c=p.out_c, k_h=len(py.taps), k_w=len(px.taps), stride_h=1, stride_w=1,
        dil_h=py.dil, dil_w=px.dil, pad_t=py.pad, pad_l=px.pad, pad_b=0, pad_r=0, groups=1,
        in_zp=p.in_zp, out_zp=p.out_zp, act_min=p.act_min, act_max=p.act_max, w=w,
        bias=i32(bias), bias_folded=i32(fold_input_zero_point(bias, w, p.in_zp)),
        mult=p.mult, shift=p.shift)


def phase_pairs(node: Node, graph: Graph) -> list[tuple[AxisPhase, AxisPhase]]:
    """Every (row phase, column phase) of a TransposeConv2D node's output."""
    g = conv_geometry(node, graph)
    ys = axis_phases(g.out_h, g.stride_h, g.k_h, g.dil_h, g.pad_t)
    xs = axis_phases(g.out_w, g.stride_w, g.k_w, g.dil_w, g.pad_l)
    return [(py, px) for py in ys for px in xs]


def fill_code(py: AxisPhase, px: AxisPhase, sy: int, sx: int, ow: int, co: int, ctype: str,
              values: str) -> str:
    """C writing the per-channel constant ``values`` into every pixel of a phase no tap
    reaches (TFLite's output there is the rescaled bias)."""
    return f"""    for (int my = 0; my < {py.count}; my++) {{
        {ctype} *d = out + (({py.r} + {sy} * my) * {ow} + {px.r}) * {co};
        for (int mx = 0; mx < {px.count}; mx++, d += {sx * co}) {{
            for (int c = 0; c < {co}; c++) d[c] = {values}[c];
        }}
    }}"""


def _plans(node: Node, graph: Graph, p: ConvParams) -> list[tuple[AxisPhase, AxisPhase,
                                                                   ConvParams]]:
    """The phases some tap reaches, with their convolutions."""
    return [(py, px, _sub_params(p, py, px))
            for py, px in phase_pairs(node, graph) if py.taps and px.taps]


def _scatter(py: AxisPhase, px: AxisPhase, sy: int, sx: int, ow: int, co: int,
             buf: str) -> str:
    """C copying a phase's dense outputs (at ``buf``) to their strided output pixels."""
    if co % 4 == 0:
        move = "\n".join(f"            edgenn_store32(d + {i}, edgenn_load32(s + {i}));"
                         for i in range(0, co, 4))
    else:
        move = f"            for (int c = 0; c < {co}; c++) d[c] = s[c];"
    return f"""    {{
        const int8_t *s = {buf};
        for (int my = 0; my < {py.count}; my++) {{
            int8_t *d = out + (({py.r} + {sy} * my) * {ow} + {px.r}) * {co};
            for (int mx = 0; mx < {px.count}; mx++, s += {co}, d += {sx * co}) {{
{move}
            }}
        }}
    }}"""


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not core.has_dsp or not is_int8(node, graph):
        return False
    if int(node.attr("groups", 1)) != 1:
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4:
        return False
    rec = prepare_transpose_conv(node, graph)
    if rec.out_c > 1024:
        return False
    plans = _plans(node, graph, rec)
    return bool(plans) and all(scratch_bytes(p) + p.out_h * p.out_w * p.out_c + 4 <= MAX_SCRATCH
               for _, _, p in plans)


class TransposeConvGemm:
    """int8 TransposeConv2D as one generated im2col convolution per output phase."""

    op = "TransposeConv2D"
    priority = 20  # above the portable edgenn_tconv_s8 (0)
    name = "edgenn_tconv_s8_gemm_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        rec = prepare_transpose_conv(node, graph)
        plans = _plans(node, graph, rec)
        ow, co = rec.out_w, rec.out_c
        sy, sx = rec.strides
        chosen = [(py, px, p, layer_plan_of(p)) for py, px, p in plans]
        conv_bytes = max((scratch_bytes(p, pl) + 3) & ~3 for _, _, p, pl in chosen)
        out_bytes = max(p.out_h * p.out_w * p.out_c for _, _, p, _ in chosen)
        arrays: list[CArray] = []
        defs: dict[str, str] = {}
        steps = []
        for i, (py, px, p, pl) in enumerate(chosen):
            body = generate(p, pl)
            name = "ctg_" + hashlib.sha1(body.encode()).hexdigest()[:12]
            defs.setdefault(name, body.replace("@P@", name))
            arrays += [CArray(f"w{i}", "uint32_t", pack_weights(p, pl.packed, pl.chans)),
                       CArray(f"q{i}", "int32_t", records(p, pl))]
            buf = f"(int8_t *)scratch + {conv_bytes}"
            steps.append(f"    {name}_conv(in, {buf}, scratch, @P@_w{i}, @P@_q{i}, "
                         f"{p.in_zp});\n" + _scatter(py, px, sy, sx, int(ow), int(co), buf))
        empty = [(py, px) for py, px in phase_pairs(node, graph) if not (py.taps and px.taps)]
        if empty:
            # the bias alone, rescaled by the reference's own arithmetic
            bias = np.asarray(rec.bias, np.int64).reshape(1, -1)
            arrays.append(CArray("fill", "int8_t", requantize(
                wrap_int32(bias), rec.mult, rec.shift, rec.out_zp, rec.act_min,
                rec.act_max).astype(np.int8).ravel()))
            steps += [fill_code(py, px, sy, sx, int(ow), int(co), "int8_t", "@P@_fill")
                      for py, px in empty]
        code = "".join(f"#ifndef {n.upper()}_DEFINED\n#define {n.upper()}_DEFINED\n{b}\n#endif\n"
                       for n, b in defs.items())
        code += ("static void @P@_tconv(const int8_t *in, int8_t *out, void *scratch)\n{\n"
                 + "\n".join(steps) + "\n}\n")
        return KernelCall(
            call=generated("tconv", self.name, IN0, OUT0, SCRATCH),
            sources=("edgenn_conv_s8_gemm_dsp.h",), arrays=tuple(arrays),
            scratch_bytes=conv_bytes + out_bytes,
            comment=f"int8 transposed conv {rec.k_h}x{rec.k_w} stride {sy}x{sx}: "
                    f"{len(chosen)} phase convolutions (conv_gemm)",
            code=code)


register_kernel(TransposeConvGemm())
