"""Generated float32 LSTM for FPU cores (Cortex-M4F / M7), as TFLite Micro's float kernel.

The portable kernel (``recurrent.py``, ``c/edgenn_lstm_f32.c``) runs one gate at a time, a
dot product per row with two single loads per product. This one is generated for the
layer's shape, with the structure of the integer ``lstm_s8_gen``:

* All gates' input and recurrent weights form ONE float stream in flash: per block of two
  units (8 rows: forget, input, cell, output of the first unit, then of the second; a last
  odd unit is a block of 4 rows), the 8 weights of input element 0, of element 1, ..., the 8
  biases, then the 8 weights of hidden element 0, 1, ...
* Per input element, one VLDM brings the block's 8 weights (9 cycles), and each row takes a
  VMUL and a VADD (2 cycles; a VMLA or VFMA would cost 3 and a fused one rounds differently):
  about 3.3 cycles per MAC against 11 for the portable loop. The x_t and h elements are
  brought 8 at a time by VLDM too; the pass over them is a loop of 8-element chunks.
* Sums in TFLite Micro's order (``lstm_eval.h``: the input FC ``FullyConnected`` from 0 over
  the input, plus the bias; the recurrent FC from 0 over h; the two added), so the products
  and sums are rounded as TFLM's x86 build rounds them. Then the gates' activations
  (``reference_ops::Logistic``, newlib's ``tanhf``: only libm's rounding differs), the cell
  update ``f * c + i * g`` (clipped) and ``h = o * tanh(c)`` in generated C, for the block's
  units, right after their pass.

Claims: float32, no peepholes (the portable kernel keeps them), gate_clip and cell_clip
either way, batch- or time-major, any batch. State as the portable kernel: the initial
hidden and cell state are operands (constants, or a stateful model's state area), the
optional final-state outputs receive them (``codegen/state.py`` keeps them).
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, NULL, OUT0, SCRATCH, Buf, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import c_float, const_operand, record_matcher
from edgenn.backends.cortexm.kernels.lstm_s8_gen import offset
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.opdefs.recurrent import LSTM_INDEX, sequence_dims
from edgenn.prepared.lstm import LstmParams, prepare_lstm

CHUNK = 8  # input elements per VLDM (s16..s23) and per loop iteration
W0, X0, ZX0 = 8, 16, 24  # first S register of the weights, the inputs, the input-FC sums


def _layer(node: Node, graph: Graph) -> LstmParams:
    p = prepare_lstm(node, graph)
    if p.integer is not None:
        raise UnsupportedOperatorError(f"{node}: the generated float LSTM is float32")
    if p.peephole is not None and any(
            w is not None for w in p.peephole.values()):
        raise UnsupportedOperatorError(f"{node}: the generated float LSTM has no peepholes")
    return p


def _blocks(n_cell: int) -> list[range]:
    """Units two at a time, the last one alone when ``n_cell`` is odd."""
    return [range(u, min(u + 2, n_cell)) for u in range(0, n_cell, 2)]


def weight_stream(p: LstmParams, units: range) -> np.ndarray:
    """``units``' rows (unit-major, gates forget/input/cell/output) as the pass reads them:
    [I, R] input weights, [R] biases, [H, R] recurrent weights."""
    rows = [(u, k) for u in units for k in range(4)]
    w = np.stack([p.w_f[k][:, u] for u, k in rows], axis=1)  # w_f[k]: [I, H]
    b = np.array([p.b_f[k][u] for u, k in rows], np.float32)
    r = np.stack([p.r_f[k][:, u] for u, k in rows], axis=1)
    return np.concatenate([w.ravel(), b, r.ravel()]).astype(np.float32)


def _sreg(first: int, count: int) -> str:
    return f"{{s{first}-s{first + count - 1}}}" if count > 1 else f"{{s{first}}}"


def _elements(rows: int, src: str, count: int) -> list[str]:
    """``count`` elements from ``src`` (loaded into s16...), each times the block's rows."""
    lines = [f"vldmia %[{src}]!, {_sreg(X0, count)}"]
    for j in range(count):
        lines.append(f"vldmia %[wp]!, {_sreg(W0, rows)}")
        lines += [f"vmul.f32 s{W0 + r}, s{W0 + r}, s{X0 + j}" for r in range(rows)]
        lines += [f"vadd.f32 s{r}, s{r}, s{W0 + r}" for r in range(rows)]
    return lines


def _pass(rows: int, src: str, n: int, label: int) -> list[str]:
    """Sums s0..s{rows-1} from +0 over the ``n`` elements of ``src``."""
    lines = [f"vmov s{r}, %[zero]" for r in range(rows)]
    loops, rest = divmod(n, CHUNK)
    if loops > 1:
        lines += [f"movw %[cnt], #{loops}", f"{label}:"]
    if loops:
        lines += _elements(rows, src, CHUNK)
    if loops > 1:
        lines += ["subs %[cnt], %[cnt], #1", f"bne {label}b"]
    if rest:
        lines += _elements(rows, src, rest)
    return lines


def block_asm(rows: int, n_input: int, n_cell: int) -> str:
    """The asm of one block: z[r] = (input FC + bias) + recurrent FC of its ``rows`` rows."""
    lines = _pass(rows, "xp", n_input, 1)
    lines.append(f"vldmia %[wp]!, {_sreg(W0, rows)}")
    lines += [f"vadd.f32 s{ZX0 + r}, s{r}, s{W0 + r}" for r in range(rows)]
    lines += _pass(rows, "hp", n_cell, 2)
    lines += [f"vadd.f32 s{r}, s{ZX0 + r}, s{r}" for r in range(rows)]
    lines.append(f"vstmia %[zp], {_sreg(0, rows)}")
    return "\n".join(f'        "{line}\\n\\t"' for line in lines)


def sums_asm(rows: int, n_x: int, n_h: int) -> str:
    """The asm of one block without biases (the GRU's): zp[r] = the sum over x of row r,
    zp[rows + r] = its sum over the second source ``hp``, each from +0."""
    lines = _pass(rows, "xp", n_x, 1)
    lines.append(f"vstmia %[zp]!, {_sreg(0, rows)}")
    lines += _pass(rows, "hp", n_h, 2)
    lines.append(f"vstmia %[zp]!, {_sreg(0, rows)}")
    return "\n".join(f'        "{line}\\n\\t"' for line in lines)


def _unit_code(p: LstmParams) -> str:
    """``@P@_unit``: gates from the four sums, cell update and hidden value of one unit."""
    def act(v: str, fn: str) -> str:
        return "edgenn_logistic_f32(" + v + ")" if fn == "sigmoid" else "tanhf(" + v + ")"

    clip = ""
    if p.gate_clip > 0:
        gc = c_float(p.gate_clip)
        clip = "".join(f"    z{k} = z{k} > {gc} ? {gc} : (z{k} < -{gc} ? -{gc} : z{k});\n"
                       for k in range(4))
    cell_clip = ""
    if p.cell_clip > 0:
        cc = c_float(p.cell_clip)
        cell_clip = f"    v = v > {cc} ? {cc} : (v < -{cc} ? -{cc} : v);\n"
    return f"""/* one unit: z its four gate sums (forget, input, cell, output); TFLM's order of the
 * element-wise products (Mul(forget, cell), Mul(input, cell gate), their sum, the clip,
 * Mul(output, tanh(cell))) */
static inline void @P@_unit(const float *z, float *c, float *h)
{{
    float z0 = z[0], z1 = z[1], z2 = z[2], z3 = z[3];
{clip}    const float f = {act('z0', 'sigmoid')};
    const float i = {act('z1', 'sigmoid')};
    const float g = {act('z2', p.activation)};
    const float o = {act('z3', 'sigmoid')};
    const float fc = f * *c;
    const float ig = i * g;
    float v = fc + ig;
{cell_clip}    *c = v;
    *h = o * tanhf(v);
}}
"""


def _asm_call(rows: int, n_input: int, n_cell: int) -> str:
    clobbers = ", ".join(f'"s{r}"' for r in range(32))
    return f"""        {{
        const float *xp = xt, *hq = hp;
        uint32_t cnt;
        __asm__ volatile(
{block_asm(rows, n_input, n_cell)}
            : [wp] "+r"(wp), [xp] "+r"(xp), [hp] "+r"(hq), [cnt] "=&r"(cnt)
            : [zero] "r"(0), [zp] "r"(z)
            : "memory", "cc", {clobbers});
        }}
"""


def _step_code(p: LstmParams, n_input: int) -> str:
    h = p.n_cell
    pairs = h // 2
    lines = [
        "/* one LSTM step: xt the input row, hp the previous hidden state, c the cell state (in",
        " * place), y the new hidden state (the step's output row) */",
        "static __attribute__((noinline)) void @P@_step(const float *xt, const float *hp, "
        "float *c, float *y)",
        "{",
        "    const float *wp = @P@_w;",
        "    float z[8];",
    ]
    if pairs:
        lines += [f"    for (int u = 0; u < {2 * pairs}; u += 2) {{",
                  _asm_call(8, n_input, h),
                  "        @P@_unit(z, c + u, y + u);",
                  "        @P@_unit(z + 4, c + u + 1, y + u + 1);",
                  "    }"]
    if h % 2:
        lines += ["    {", _asm_call(4, n_input, h),
                  f"        @P@_unit(z, c + {h - 1}, y + {h - 1});", "    }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _sequence_code(p: LstmParams, batch: int, steps: int, n_input: int) -> str:
    h = p.n_cell
    tm = p.time_major
    return f"""static void @P@_lstm(const float *x, float *y, const float *h0, const float *c0,
                     float *h_final, float *c_final, void *scratch)
{{
    float *c = (float *)scratch;
    for (int b = 0; b < {batch}; b++) {{
        const float *hp = h0 + b * {h};
        memcpy(c, c0 + b * {h}, {4 * h}u);
        for (int t = 0; t < {steps}; t++) {{
            float *yt = y + {offset(tm, batch, steps, h)};
            @P@_step(x + {offset(tm, batch, steps, n_input)}, hp, c, yt);
            hp = yt;
        }}
        if (h_final != NULL) {{
            memcpy(h_final + b * {h}, hp, {4 * h}u);
        }}
        if (c_final != NULL) {{
            memcpy(c_final + b * {h}, c, {4 * h}u);
        }}
    }}
}}
"""


_accepts = record_matcher((DType.FLOAT32,), _layer)


class GeneratedLstmF32:
    """float32 LSTM with one weight stream and generated VLDM / VMUL / VADD passes."""

    op = "LSTM"
    priority = 30
    name = "edgenn_lstm_f32_gen_fpu"
    types = (DType.FLOAT32,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_fpu and _accepts(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = _layer(node, graph)
        batch, steps, n_input = sequence_dims(graph.tensor(node.inputs[0]), p.time_major)
        h = p.n_cell
        stream = np.concatenate([weight_stream(p, units) for units in _blocks(h)])
        arrays: list[CArray] = [CArray("w", "float", stream)]
        h0 = const_operand(node, graph, LSTM_INDEX["output_state"], arrays)
        c0 = const_operand(node, graph, LSTM_INDEX["cell_state"], arrays)
        finals = (Buf("out", 1), Buf("out", 2)) if p.extra_outputs else (NULL, NULL)
        code = (_unit_code(p) + "\n" + _step_code(p, n_input) + "\n"
                + _sequence_code(p, batch, steps, n_input))
        return KernelCall(
            call=generated("lstm", self.name, IN0, OUT0, h0, c0, *finals, SCRATCH),
            sources=("edgenn_math_f32.h",), arrays=tuple(arrays), code=code,
            scratch_bytes=(4 * h + 15) // 16 * 16, state_in_place=True,
            comment=f"LSTM {steps} steps x {batch} rows, {n_input} -> {h}, generated VLDM/VMUL")


register_kernel(GeneratedLstmF32())
