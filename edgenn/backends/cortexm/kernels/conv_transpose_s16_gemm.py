"""Fast 16x8 TransposeConv2D (groups 1) for DSP cores: one generated 16x8 convolution per
output phase (``conv_s16_gemm``), the int16 twin of ``conv_transpose_gemm``.

The phases are ``conv_transpose_gemm.phase_pairs``: the outputs r, r + stride, ... of each
axis are a stride-1 convolution of the input with the taps that reach them. In the 16x8
scheme a tap outside the input contributes nothing, which is what the convolution's zero
padding gives; the sums are order-free (int32 wraps, and the int64-bias layers use the int32
sum only where it provably cannot overflow, ``conv_s16.epilogue``), and the rescale is the
layer's own (``conv_s16_gemm.rescale``), so every phase is bit-exact with TFLite Micro's
scatter. Each phase writes its outputs densely into scratch; a loop copies them to their
strided output pixels; a phase no tap reaches gets the rescaled bias. Layers whose sums
need int64 keep the portable ``edgenn_tconv_s16``.

Each phase is a 16x8 Conv2D layer of its own (:func:`phase_layer`: the input, the phase's
taps as weights, the layer's bias, quantization and activation, the phase's outputs), and
runs the code of the Conv2D kernel the table selects for it (``kernel.matching_kernel``):
every form of the fast convolution (the FOLDED bias-started sums, the padded-plane rows, the
pointwise kernel for a one-tap phase) applies to the phases as to any convolution. Its call
is rendered inside this layer's function against the phase's buffers (``ccall``), its
arrays and generated symbols renamed per phase. A phase whose padding is negative (an
output crop past the kernel's reach) is no Conv2D node: it runs ``conv_s16_gemm.generate``
directly, as every phase did before.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from edgenn.backends.cortexm.ccall import (
    IN0,
    OUT0,
    SCRATCH,
    Generated,
    generated,
    render_calls,
    statements,
)
from edgenn.backends.cortexm.kernel import (
    CArray,
    KernelCall,
    matching_kernel,
    register_kernel,
)
from edgenn.backends.cortexm.kernels.conv_s16 import WIDE64, epilogue, is_s16
from edgenn.backends.cortexm.kernels.conv_s16_gemm import (
    MAX_K,
    Geometry,
    generate,
    geometry,
    pack_weights,
    rescale,
    scratch_bytes,
)
from edgenn.backends.cortexm.kernels.conv_transpose_gemm import (
    AxisPhase,
    fill_code,
    phase_pairs,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.prepared.conv import ConvS16Params, prepare_conv_s16

MAX_SCRATCH = 16384  # bytes: the largest phase's patch, window and dense outputs


def _phases(node: Node, graph: Graph) -> list[tuple[AxisPhase, AxisPhase]]:
    """The phases some tap reaches."""
    return [(py, px) for py, px in phase_pairs(node, graph) if py.taps and px.taps]


def _record(node: Node, graph: Graph) -> ConvS16Params:
    """TFLite Micro's 16x8 TransposeConv takes an int64 bias (or none) only."""
    return prepare_conv_s16(node, graph, allow_narrow=False)


def _geometry(p: ConvS16Params, py: AxisPhase, px: AxisPhase) -> Geometry:
    """The stride-1 convolution that computes phase (py, px) of the output."""
    return replace(geometry(p), out_h=py.count, out_w=px.count, k_h=len(py.taps),
                   k_w=len(px.taps), stride_h=1, stride_w=1, dil_h=py.dil, dil_w=px.dil,
                   pad_t=py.pad, pad_l=px.pad, pad_b=0, pad_r=0)


def _sub_weights(p: ConvS16Params, py: AxisPhase, px: AxisPhase) -> np.ndarray:
    w = p.w[:, list(py.taps)][:, :, list(px.taps)]
    return np.ascontiguousarray(w).reshape(w.shape[0], -1).astype(np.int8)


def phase_layer(node: Node, graph: Graph, py: AxisPhase, px: AxisPhase, i: int
                ) -> tuple[Node, Graph] | None:
    """Phase (py, px) of TransposeConv2D ``node`` as a 16x8 Conv2D of stride 1 in a graph of
    its own, or None when its padding is negative. Its weights are the phase's taps in input
    order (``_sub_weights``, the layer's per-channel scales), its bias the layer's as int64
    (TFLite Micro's 16x8 TransposeConv sums in int64 as the 16x8 Conv2D does with an int64
    bias), its output the phase's ``count`` rows and columns in the layer's quantization; the
    bottom / right padding is what its last window needs beyond the input."""
    if py.pad < 0 or px.pad < 0:
        return None
    x = graph.tensor(node.inputs[0])
    w = graph.tensor(node.inputs[1])
    y = graph.tensor(node.outputs[0])
    assert w.data is not None  # _claims checked it
    _, in_h, in_w, _ = x.shape
    co = y.shape[3]
    sub = np.ascontiguousarray(w.data[:, list(py.taps)][:, :, list(px.taps)])
    wt = Tensor.const(f"{w.name}:ph{i}", sub, w.quant)
    ins = [x, wt]
    if len(node.inputs) > 2 and node.inputs[2]:
        b = graph.tensor(node.inputs[2])
        assert b.data is not None
        ins.append(Tensor.const(f"{b.name}:ph{i}", np.asarray(b.data).astype(np.int64), b.quant))
    out = replace(y, name=f"{y.name}:ph{i}", shape=(1, py.count, px.count, co))
    pb = max(0, py.count + (len(py.taps) - 1) * py.dil - py.pad - in_h)
    pr = max(0, px.count + (len(px.taps) - 1) * px.dil - px.pad - in_w)
    attrs = {"strides": (1, 1), "dilations": (py.dil, px.dil), "pads": (py.pad, px.pad, pb, pr),
             "groups": 1, "activation": node.attr("activation")}
    conv = Node(f"{node.name}:ph{i}", "Conv2D", tuple(t.name for t in ins), (out.name,),
                {k: v for k, v in attrs.items() if v is not None})
    tensors = {t.name: t for t in (*ins, out)}
    return conv, Graph(f"{node.name}:ph{i}", tensors, (conv,), (x.name,), (out.name,))


def _phase_call(node: Node, graph: Graph, core: Core, py: AxisPhase, px: AxisPhase, i: int
                ) -> KernelCall | None:
    """The selected Conv2D kernel's call of phase i, or None: no Conv2D node (see
    :func:`phase_layer`) or no generated kernel takes it."""
    made = phase_layer(node, graph, py, px, i)
    if made is None:
        return None
    conv, g = made
    try:
        call = matching_kernel(conv, g, core).prepare(conv, g, core)
    except UnsupportedOperatorError:
        return None
    # a library kernel (the portable loop, where the generated ones refuse the phase: their
    # scratch bound on a one-layer graph is tighter) is slower than conv_s16_gemm directly
    generated_fn = all(isinstance(c.symbol, Generated) for c in statements(call.call))
    return call if generated_fn else None


def _inline(call: KernelCall, i: int, buf: str) -> tuple[str, str, list[CArray]]:
    """(code, statement, arrays) of phase call ``call`` as phase i of this layer: symbols
    ``@P@_ph<i>_*``, arrays ``ph<i>_*``, its input the layer's, its output ``buf``."""
    prefix = f"@P@_ph{i}"
    env = {"in0": "in", "out0": buf, "scratch": "scratch", "prefix": prefix,
           **{a.name: f"{prefix}_{a.name}" for a in call.arrays}}
    arrays = [CArray(f"ph{i}_{a.name}", a.ctype, a.values) for a in call.arrays]
    return (call.code.replace("@P@", prefix), "    " + render_calls(call.call, env),
            arrays)


def _scatter(py: AxisPhase, px: AxisPhase, sy: int, sx: int, ow: int, co: int,
             buf: str) -> str:
    """C copying a phase's dense int16 outputs (at ``buf``) to their strided pixels: even
    channel counts by words, in asm groups of 4 loads then 4 stores (why: the loads of a
    group pipeline, 1 cycle each after the first; gcc pairs each load with its store)."""
    if co % 2 == 0:
        c_move = "\n".join(f"            edgenn_s16_store32(d + {i}, edgenn_s16_load32(s + {i}));"
                            for i in range(0, co, 2))
        groups = []
        for at in range(0, 2 * co, 16):
            n = min(4, (2 * co - at) // 4)
            regs = [f"%[t{j}]" for j in range(n)]
            lines = [f"ldr {r}, [%[s], #{at + 4 * j}]" for j, r in enumerate(regs)]
            lines += [f"str {r}, [%[d], #{at + 4 * j}]" for j, r in enumerate(regs)]
            outs = ", ".join(f'[t{j}] "=&r"(t{j})' for j in range(n))
            groups.append("            { uint32_t " + ", ".join(f"t{j}" for j in range(n))
                          + ";\n              __asm__ volatile(" + " ".join(
                              f'"{x}\\n\\t"' for x in lines)
                          + f'\n                : {outs} : [s] "r"(s), [d] "r"(d) : "memory"); }}')
        fits = 2 * co + 16 <= 4095
        move = (f"#if EDGENN_HAVE_DSP\n{chr(10).join(groups)}\n#else\n{c_move}\n#endif"
                if fits else c_move)
    else:
        move = f"            for (int c = 0; c < {co}; c++) d[c] = s[c];"
    return f"""    {{
        const int16_t *s = {buf};
        for (int my = 0; my < {py.count}; my++) {{
            int16_t *d = out + (({py.r} + {sy} * my) * {ow} + {px.r}) * {co};
            for (int mx = 0; mx < {px.count}; mx++, s += {co}, d += {sx * co}) {{
{move}
            }}
        }}
    }}"""


STORE = """#ifndef EDGENN_S16_STORE32_DEFINED
#define EDGENN_S16_STORE32_DEFINED
static inline __attribute__((always_inline)) void edgenn_s16_store32(void *p, uint32_t v)
{
    __builtin_memcpy(p, &v, 4);
}
#endif
"""


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not core.has_dsp or not is_s16(node, graph) or int(node.attr("groups", 1)) != 1:
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4:
        return False
    p = _record(node, graph)
    if p.out_c > 1024 or epilogue(p.requant, p.w).mode == WIDE64:
        return False
    phases = _phases(node, graph)
    if not phases:
        return False
    for py, px in phases:
        g = _geometry(p, py, px)
        if g.k > MAX_K or scratch_bytes(g) + 2 * g.npix * g.out_c + 4 > MAX_SCRATCH:
            return False
    return True


class TransposeConvS16Gemm:
    """16x8 TransposeConv2D as one generated 16x8 convolution per output phase."""

    op = "TransposeConv2D"
    priority = 20  # above the portable edgenn_tconv_s16 (0)
    name = "edgenn_tconv_s16_gemm_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = _record(node, graph)
        phases = _phases(node, graph)
        ow, co = p.out_w, p.out_c
        sy, sx = p.strides
        mode, quant, records_code = rescale(p)
        geoms = [(py, px, _geometry(p, py, px)) for py, px in phases]
        calls = [_phase_call(node, graph, core, py, px, i)
                 for i, (py, px, _) in enumerate(geoms)]
        conv_bytes = max((
            (c.scratch_bytes if c is not None else scratch_bytes(g)) + 3) & ~3
            for c, (_, _, g) in zip(calls, geoms, strict=True))
        out_bytes = max(2 * g.npix * g.out_c for _, _, g in geoms)
        direct = any(c is None for c in calls)
        # the layer's records (and @P@_bias) for the phases run directly; the others carry
        # their own
        arrays: list[CArray] = [CArray("quant", "int32_t", quant)] if direct else []
        code = records_code if direct else ""
        defs: dict[str, str] = {}
        steps = []
        sources = {"edgenn_conv_s8_gemm_dsp.h", "edgenn_conv_s16_mac.h"}
        buf = f"(int16_t *)(void *)((uint8_t *)scratch + {conv_bytes})"
        for i, ((py, px, g), call) in enumerate(zip(geoms, calls, strict=True)):
            if call is not None:
                body, stmt, arr = _inline(call, i, buf)
                code += body
                arrays += arr
                sources.update(call.sources)
                steps.append(stmt + "\n" + _scatter(py, px, sy, sx, int(ow), int(co), buf))
                continue
            body = generate(g, mode)
            name = "cts16_" + hashlib.sha1(body.encode()).hexdigest()[:12]
            defs.setdefault(name, body.replace("@P@", name))
            arrays.append(CArray(f"w{i}", "uint32_t", pack_weights(_sub_weights(p, py, px))))
            steps.append(f"    {name}_conv(in, {buf}, scratch, @P@_w{i}, @P@_quant, "
                         f"@P@_bias);\n" + _scatter(py, px, sy, sx, int(ow), int(co), buf))
        empty = [(py, px) for py, px in phase_pairs(node, graph) if not (py.taps and px.taps)]
        if empty:
            # the bias alone, rescaled by the reference's own arithmetic
            zeros = np.zeros((1, int(co)), np.int64)
            arrays.append(CArray("fill", "int16_t", p.requant(zeros).astype(np.int16).ravel()))
            steps += [fill_code(py, px, sy, sx, int(ow), int(co), "int16_t", "@P@_fill")
                      for py, px in empty]
        code += STORE + "".join(
            f"#ifndef {n.upper()}_DEFINED\n#define {n.upper()}_DEFINED\n{b}\n#endif\n"
            for n, b in defs.items())
        code += ("static void @P@_tconv(int16_t *in, int16_t *out, void *scratch)\n{\n"
                 + "\n".join(steps) + "\n}\n")
        kinds = sorted({call_kernel(c) for c in calls})
        return KernelCall(
            call=generated("tconv", self.name, IN0, OUT0, SCRATCH),
            sources=tuple(sorted(sources)),
            arrays=tuple(arrays), scratch_bytes=conv_bytes + out_bytes,
            comment=f"16x8 transposed conv {p.k_h}x{p.k_w} stride {sy}x{sx}: "
                    f"{len(geoms)} phase convolutions ({', '.join(kinds)})",
            code=code)


def call_kernel(call: KernelCall | None) -> str:
    """The kernel that runs a phase (its call's name; ``conv_s16_gemm`` run directly)."""
    return "conv_s16_gemm" if call is None else call.kernel_name


register_kernel(TransposeConvS16Gemm())
