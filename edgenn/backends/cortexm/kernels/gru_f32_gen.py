"""Generated float32 GRU for FPU cores (Cortex-M4F / M7), as the reference layer computes it.

ONNX's GRU (``backends/ref/kernels/gru.py``: gates z, r, h; ``linear_before_reset`` either
way; ``clip``) had no Cortex-M kernel. This one has the float LSTM's structure
(``lstm_f32_gen``: one float weight stream, per input element one VLDM of a block's weights
and a VMUL + VADD per row, the elements brought 8 at a time) in two phases per step, because
the hidden gate's recurrent product needs the reset gate of every unit first when
``linear_before_reset`` is 0 (it multiplies ``r * h`` by ``R_h``):

1. the update and reset rows of four units per block (8 rows: z, r of each unit): their sums
   over x_t and over h; then z, r (and ``r * h`` when ``linear_before_reset`` is 0) in C;
2. the hidden-gate rows of eight units per block: the sum over x_t, and over ``r * h`` (or
   over h), then the candidate and the new hidden value in C.

Each gate's terms are added in the reference layer's order (``x W + h R + wb + rb``;
``x W_h + (r h) R_h + rb_h + wb_h``, or ``x W_h + r (h R_h + rb_h) + wb_h``), the sigmoid is
the reference's ``exp(-|z|)`` form and tanh newlib's ``tanhf``: within float rounding of
onnxruntime. Claims: float32 with a float FPU, forward direction (the importer refuses the
others), any clip, batch- or time-major; the state as the LSTM's (initial hidden state an
operand, the optional final one an output).
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, NULL, OUT0, SCRATCH, Buf, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import c_float, const_operand, record_matcher
from edgenn.backends.cortexm.kernels.lstm_f32_gen import sums_asm
from edgenn.backends.cortexm.kernels.lstm_s8_gen import offset
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.opdefs.recurrent import sequence_dims
from edgenn.prepared.gru import GruParams, prepare_gru

ZR_UNITS, H_UNITS = 4, 8  # units per block of phase 1 (2 rows each) and phase 2 (1 row)


def _layer(node: Node, graph: Graph) -> GruParams:
    if graph.tensor(node.inputs[0]).dtype is not DType.FLOAT32:
        raise UnsupportedOperatorError(f"{node}: the generated GRU is float32")
    return prepare_gru(node, graph)


def _blocks(hidden: int, per: int) -> list[range]:
    return [range(u, min(u + per, hidden)) for u in range(0, hidden, per)]


def weight_stream(p: GruParams) -> np.ndarray:
    """Phase 1 blocks ([I, R] then [H, R], rows z, r per unit), then phase 2 blocks (rows
    h per unit)."""
    parts = []
    for units, gates in ([(b, (0, 1)) for b in _blocks(p.hidden, ZR_UNITS)]
                         + [(b, (2,)) for b in _blocks(p.hidden, H_UNITS)]):
        rows = [(u, g) for u in units for g in gates]
        parts.append(np.stack([p.w_t[g][:, u] for u, g in rows], axis=1).ravel())
        parts.append(np.stack([p.r_t[g][:, u] for u, g in rows], axis=1).ravel())
    return np.concatenate(parts).astype(np.float32)


def _clip(v: str, clip: float) -> str:
    if clip <= 0:
        return ""
    c = c_float(clip)
    return f"    {v} = {v} > {c} ? {c} : ({v} < -{c} ? -{c} : {v});\n"


def _gate_code(p: GruParams) -> str:
    """``@P@_zr`` (phase 1 of one unit) and ``@P@_n`` (phase 2 of one unit)."""
    h = p.hidden
    lbr = p.linear_before_reset
    keep = "zr[{h} + u] = r;" if lbr else "zr[{h} + u] = r * hp[u];"
    if lbr:
        pre = f"(sx + r * (sh + @P@_b[{5 * h} + u])) + @P@_b[{4 * h} + u]"
    else:
        pre = f"((sx + sh) + @P@_b[{5 * h} + u]) + @P@_b[{4 * h} + u]"
    return f"""/* the reference layer's sigmoid: 1 / (1 + e) or e / (1 + e), e = exp(-|v|) */
static inline float @P@_sigmoid(float v)
{{
    const float e = expf(-fabsf(v));
    return v >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}}

/* unit u's update and reset gates from their sums over x (sx) and h (sh); zr: z[{h}], then
 * r (linear_before_reset) or r * h */
static inline void @P@_zr(const float *sx, const float *sh, int u, const float *hp, float *zr)
{{
    (void)hp;
    float pz = ((sx[0] + sh[0]) + @P@_b[u]) + @P@_b[{h} + u];
    float pr = ((sx[1] + sh[1]) + @P@_b[{2 * h} + u]) + @P@_b[{3 * h} + u];
{_clip("pz", p.clip)}{_clip("pr", p.clip)}    const float r = @P@_sigmoid(pr);
    zr[u] = @P@_sigmoid(pz);
    {keep.format(h=h)}
}}

/* unit u's candidate from its hidden-gate sums and the new hidden value into y[u] */
static inline void @P@_n(float sx, float sh, int u, const float *hp, const float *zr,
                         float *y)
{{
    const float z = zr[u];
    {"const float r = zr[" + str(h) + " + u];" if lbr else ""}
    float pre = {pre};
{_clip("pre", p.clip)}    const float n = tanhf(pre);
    y[u] = (1.0f - z) * n + z * hp[u];
}}
"""


def _asm_call(rows: int, n_x: int, n_h: int, x: str, h: str) -> str:
    clobbers = ", ".join(f'"s{r}"' for r in range(24))
    return f"""        {{
        const float *xp = {x}, *hq = {h};
        float *zp = s;
        uint32_t cnt;
        __asm__ volatile(
{sums_asm(rows, n_x, n_h)}
            : [wp] "+r"(wp), [xp] "+r"(xp), [hp] "+r"(hq), [cnt] "=&r"(cnt), [zp] "+r"(zp)
            : [zero] "r"(0)
            : "memory", "cc", {clobbers});
        }}
"""


def _step_code(p: GruParams, n_input: int) -> str:
    h = p.hidden
    second = "zr + " + str(h) if not p.linear_before_reset else "hp"
    lines = [
        "/* one GRU step: xt the input row, hp the previous hidden state, y the new one (the",
        " * step's output row), zr the gates z and r (or r * h) */",
        "static __attribute__((noinline)) void @P@_step(const float *xt, const float *hp, "
        "float *y, float *zr)",
        "{",
        "    const float *wp = @P@_w;",
        "    float s[16];",
    ]
    for per, rows_per, src, call in (
            (ZR_UNITS, 2, "hp", "@P@_zr(s + {a}, s + {b}, {u}, hp, zr);"),
            (H_UNITS, 1, second, "@P@_n(s[{a}], s[{b}], {u}, hp, zr, y);")):
        full, rest = divmod(h, per)
        # full blocks in a loop (one copy of the asm), the last partial block after it
        for count, n in ((full, per), (1 if rest else 0, rest)):
            if not count:
                continue
            first = 0 if n == per else full * per
            rows = rows_per * n
            lines += [f"    for (int u = {first}; u < {first + count * n}; u += {n}) {{",
                      _asm_call(rows, n_input, h, "xt", src)]
            lines += ["        " + call.format(a=rows_per * j, b=rows + rows_per * j,
                                               u=f"u + {j}") for j in range(n)]
            lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _sequence_code(p: GruParams, batch: int, steps: int, n_input: int) -> str:
    h = p.hidden
    tm = p.time_major
    return f"""static void @P@_gru(const float *x, float *y, const float *h0, float *h_final,
                    void *scratch)
{{
    float *zr = (float *)scratch;
    for (int b = 0; b < {batch}; b++) {{
        const float *hp = h0 + b * {h};
        for (int t = 0; t < {steps}; t++) {{
            float *yt = y + {offset(tm, batch, steps, h)};
            @P@_step(x + {offset(tm, batch, steps, n_input)}, hp, yt, zr);
            hp = yt;
        }}
        if (h_final != NULL) {{
            memcpy(h_final + b * {h}, hp, {4 * h}u);
        }}
    }}
}}
"""


_accepts = record_matcher(None, _layer)


class GeneratedGruF32:
    """float32 GRU with one weight stream and generated VLDM / VMUL / VADD passes."""

    op = "GRU"
    priority = 30
    name = "edgenn_gru_f32_gen_fpu"
    types = (DType.FLOAT32,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_fpu and _accepts(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = _layer(node, graph)
        batch, steps, n_input = sequence_dims(graph.tensor(node.inputs[0]), p.time_major)
        h = p.hidden
        biases = np.concatenate([p.wb[0], p.rb[0], p.wb[1], p.rb[1],
                                 p.wb[2], p.rb[2]])
        arrays: list[CArray] = [CArray("w", "float", weight_stream(p)),
                                CArray("b", "float", biases)]
        h0 = const_operand(node, graph, 5, arrays)
        final = Buf("out", 1) if p.extra_output else NULL
        code = (_gate_code(p) + "\n" + _step_code(p, n_input) + "\n"
                + _sequence_code(p, batch, steps, n_input))
        return KernelCall(
            call=generated("gru", self.name, IN0, OUT0, h0, final, SCRATCH),
            sources=("edgenn_math_f32.h",), arrays=tuple(arrays), code=code,
            scratch_bytes=(8 * h + 15) // 16 * 16, state_in_place=True,
            comment=f"GRU {steps} steps x {batch} rows, {n_input} -> {h}, generated VLDM/VMUL")


register_kernel(GeneratedGruF32())
