"""Generated 16x8 LSTM (int16 activations, int8 weights) for DSP cores, bit-exact with TFLite
Micro: the structure of the int8 kernel (``lstm_s8_gen.py``: one packed unit-major weight
stream over [input, hidden], 4-row passes of two-row weight words, inlined gates and cell
update) with TFLM's 64-bit accumulators.

The int16 input and hidden state need no widening: a word of the (zero-padded) vector is the
pair (v[2p], v[2p + 1]), so the weight columns are permuted before ``dense.pack_dense_weights``
to pair those elements. Per word, SMLALD of the raw two-row word gives A = dot_a + 256 dot_b
and SMLALD of its SXTB16 gives B = dot_a, both in 64 bits, where dot_b = (A - B) >> 8 is always
exact (no 2^23 bound to prove). The accumulators start from the 64-bit biases stored ahead of
each part. Each gate FC requantizes with TFLite's 64-bit MultiplyByQuantizedMultiplier (the
reduced 16-bit multiplier), truncated to int32 and saturated to int16 as TFLM, by one SMLAL:
exact because the generator proves every accumulator fits int32.

Claims: int16 activations (zero points 0), packable weights and accumulators provably within
int32 (|bias| + 32768 sum|w| < 2^31 per row: depths up to about 500 whatever the weights;
the portable kernel refuses biases beyond int32 too); anything else runs the portable
kernel.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point_s16 import reduced_multiplier
from edgenn.backends.cortexm.ccall import IN0, NULL, OUT0, SCRATCH, Buf, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import const_operand, record_matcher
from edgenn.backends.cortexm.kernels.dense import pack_dense_weights, packable, pair_elements
from edgenn.backends.cortexm.kernels.lstm_s8_gen import (
    Lstm,
    cell_code,
    gate_code,
    integer_lstm,
    offset,
    unit_rows,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.opdefs.recurrent import LSTM_INDEX, sequence_dims
from edgenn.prepared.lstm import GateRequant

STRAIGHT_MAX = 32  # words of a dot product as straight code (about 30 bytes of code each)
LOOP_WORDS = 16  # words per loop iteration beyond (the test: 5 cycles)


def _pad4(n: int) -> int:
    return (n + 3) // 4 * 4


def _layer(node: Node, graph: Graph) -> Lstm:
    layer = integer_lstm(node, graph)
    if not layer.params.wide:
        raise UnsupportedOperatorError(f"{node}: the generated 16x8 LSTM is int16")
    for u in range(layer.n_cell):
        w, _, r, _ = unit_rows(layer, u)
        if not packable(w) or not packable(r):
            raise UnsupportedOperatorError(
                f"{node}: LSTM weights of unit {u} do not fit two-row weight words")
    for g in layer.params.gates:
        for w, bias, req in ((g.w, g.bias_w, g.fc_w), (g.r, g.bias_r, g.fc_r)):
            if not _fits_int32(w, bias) or not 1 <= 15 - req.shift <= 62:
                raise UnsupportedOperatorError(
                    f"{node}: 16x8 LSTM accumulators beyond int32 are not generated")
    return layer


def natural_pairs(w: np.ndarray) -> np.ndarray:
    """[rows, depth] -> [rows, pad4(depth)], columns permuted so that word p of
    ``pack_dense_weights`` pairs elements (2p, 2p + 1) (it pairs ``pair_elements``)."""
    rows, depth = w.shape
    d4 = _pad4(depth)
    padded = np.zeros((rows, d4), np.int64)
    padded[:, :depth] = w
    el = pair_elements(d4 // 2)
    out = np.zeros_like(padded)
    out[:, el[:, 0]] = padded[:, 0::2]
    out[:, el[:, 1]] = padded[:, 1::2]
    return out


def _init_words(bias: np.ndarray) -> list[int]:
    """The 64-bit initial accumulators (B, A) of the two row pairs, low word first."""
    words = []
    for i in range(2):
        lo, hi = int(bias[2 * i]), int(bias[2 * i + 1])
        for v in (lo, lo + 256 * hi):
            words += [v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF]
    return words


def _weights(layer: Lstm) -> np.ndarray:
    words: list[np.ndarray] = []
    for u in range(layer.n_cell):
        w, bw, r, br = unit_rows(layer, u)
        for mat, bias in ((w, bw), (r, br)):
            words += [np.array(_init_words(bias), np.uint32),
                      pack_dense_weights(natural_pairs(mat))]
    return np.concatenate(words)


def _step64(first: bool) -> list[str]:
    """One input word against the unit's two row-pair words (``first``: the initial 64-bit
    accumulators are loaded in the same run of loads)."""
    asm = ["ldr.w %[x], [%[xp]], #4"]
    if first:
        asm += [f"ldr.w %{half}[{r}{i}], [%[wp]], #4" for i in range(2) for r in "ba"
                for half in "QR"]
    asm += ["ldr.w %[w0], [%[wp]], #4", "ldr.w %[w1], [%[wp]], #4"]
    for i in range(2):
        asm += [f"smlald %Q[a{i}], %R[a{i}], %[x], %[w{i}]", f"sxtb16 %[w{i}], %[w{i}]",
                f"smlald %Q[b{i}], %R[b{i}], %[x], %[w{i}]"]
    return asm


def _dot64_block(steps: int, tag: str) -> list[str]:
    """C statements: int64 accumulators a{i}{tag}, b{i}{tag} of the unit's two row pairs over
    ``steps`` words of xp, initial values and weight words from wp (both advanced).

    Up to STRAIGHT_MAX words run as straight code; beyond, a loop of LOOP_WORDS words after
    the remainder. The 13 registers leave none for the loop bound: it is a memory operand,
    loaded into the (then dead) input register for the test."""
    if steps <= STRAIGHT_MAX:
        asm = [line for s in range(steps) for line in _step64(s == 0)]
        ins = ""
    else:
        head = 1 + (steps - 1) % LOOP_WORDS
        asm = [line for s in range(head) for line in _step64(s == 0)]
        asm += ["1:", *(line for _ in range(LOOP_WORDS) for line in _step64(False)),
                "ldr.w %[x], %[end]", "cmp %[xp], %[x]", "bne 1b"]
        ins = '[end] "m"(xend)'
    accs = [f"{r}{i}{tag}" for i in range(2) for r in "ab"]
    outs = [f'[{r}{i}] "=&r"({r}{i}{tag})' for i in range(2) for r in "ab"]
    outs += ['[x] "=&r"(tx)', '[w0] "=&r"(tw0)', '[w1] "=&r"(tw1)', '[xp] "+r"(xp)',
             '[wp] "+r"(wp)']
    body = "".join(f'        "{line}\\n\\t"\n' for line in asm)
    # DSP cores only (the kernel claims no other): no C twin
    return [f"    int64_t {', '.join(accs)};", "    {", "        uint32_t tx, tw0, tw1;",
            f"        const uint32_t *xend = xp + {steps};", "        (void)xend;",
            "        __asm__ volatile(", body.rstrip("\n"), f"            : {', '.join(outs)}",
            f"            : {ins}", '            : "cc", "memory");', "    }"]


def _fits_int32(w: np.ndarray, bias: np.ndarray) -> bool:
    """True when every row's accumulator provably fits int32: |bias| + 32768 sum|w| < 2^31
    (|x| <= 32768)."""
    bound = np.abs(np.asarray(bias, np.int64)) + 32768 * np.abs(w).astype(np.int64).sum(axis=1)
    return bool(np.all(bound < 2**31))


# why asm: gcc multiplies an int64 by a constant with a chain of 64-bit shifts and adds (about
# 20 instructions); one SMLAL onto the rounding constant is exact as the accumulator fits
# int32 (``_fits_int32``), and the 64-bit shift of (hi, lo) then costs 2 more
MBQM64_HELPER = """/* TFLite's 64-bit MultiplyByQuantizedMultiplier of an accumulator that fits
 * int32: (v * m + round) >> total (1 <= total <= 62) truncated to int32, as the C++ */
static inline __attribute__((always_inline)) int32_t @P@_mbqm64(int32_t v, int32_t m,
                                                               uint32_t lo, int32_t hi,
                                                               const int total)
{
    __asm__("smlal %0, %1, %2, %3" : "+r"(lo), "+r"(hi) : "r"(v), "r"(m));
    if (total < 32) {
        return (int32_t)((lo >> total) | ((uint32_t)hi << (32 - total)));
    }
    return hi >> (total - 32);
}
"""


def _fc64(req: GateRequant, lo: str, hi: str, row: int) -> str:
    """C expression: TFLite's 64-bit MultiplyByQuantizedMultiplier of the row's accumulator
    (which fits int32: ``_layer``), truncated to int32 as the C++ assignment, saturated to
    int16."""
    acc = lo if row % 2 == 0 else f"(({hi} - {lo}) >> 8)"
    total = 15 - req.shift
    rnd = 1 << (total - 1)
    return (f"edgenn_ssat(@P@_mbqm64((int32_t){acc}, {int(reduced_multiplier(req.mult))}, "
            f"{rnd & 0xFFFFFFFF}u, {rnd >> 32}, {total}), 16)")


def _step_code(layer: Lstm, px: int, ph: int) -> str:
    p = layer.params
    lines = [
        "/* one 16x8 LSTM step: xe / he the zero-padded x_t and h, c the cell state (in place),",
        " * h the new hidden state (the step's output row) */",
        "static __attribute__((noinline)) void @P@_step(const int16_t *xe, const int16_t *he,"
        " int16_t *c, int16_t *h)",
        "{",
        "    const uint32_t *wp = @P@_w;",
        f"    for (int u = 0; u < {layer.n_cell}; u++) {{",
        "    const uint32_t *xp = (const uint32_t *)xe;",
    ]
    lines += ["    " + line for line in _dot64_block(px, "_x")]
    # the input FCs requantized now: 4 int32 values instead of 8 accumulator registers live
    # across the recurrent block
    lines += [f"    const int32_t zw{k} = {_fc64(g.fc_w, f'b{k // 2}_x', f'a{k // 2}_x', k)};"
              for k, g in enumerate(p.gates)]
    lines.append("    xp = (const uint32_t *)he;")
    lines += ["    " + line for line in _dot64_block(ph, "_h")]
    for k, g in enumerate(p.gates):
        lines.append(gate_code(k, g, f"zw{k}", _fc64(g.fc_r, f"b{k // 2}_h", f"a{k // 2}_h", k)))
    lines.append(cell_code(p, "int16_t"))
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n"


def _sequence_code(layer: Lstm, batch: int, steps: int, n_input: int) -> str:
    h = layer.n_cell
    tm = layer.time_major
    i4, h4 = _pad4(n_input), _pad4(h)
    return f"""static void @P@_lstm(const int16_t *x, int16_t *y, const int16_t *h0,
                     const int16_t *c0, int16_t *h_final, int16_t *c_final, void *scratch)
{{
    int16_t *xe = (int16_t *)scratch;
    int16_t *he = xe + {i4};
    int16_t *c = he + {h4};
    memset(scratch, 0, {2 * (i4 + h4)}u); /* the pads of xe and he stay zero */
    for (int b = 0; b < {batch}; b++) {{
        const int16_t *hp = h0 + b * {h};
        memcpy(he, hp, {2 * h}u);
        memcpy(c, c0 + b * {h}, {2 * h}u);
        for (int t = 0; t < {steps}; t++) {{
            memcpy(xe, x + {offset(tm, batch, steps, n_input)}, {2 * n_input}u);
            int16_t *yt = y + {offset(tm, batch, steps, h)};
            @P@_step(xe, he, c, yt);
            memcpy(he, yt, {2 * h}u);
            hp = yt;
        }}
        if (h_final != NULL) {{
            memcpy(h_final + b * {h}, hp, {2 * h}u);
        }}
        if (c_final != NULL) {{
            memcpy(c_final + b * {h}, c, {2 * h}u);
        }}
    }}
}}
"""


_accepts = record_matcher((DType.INT16,), _layer)


class GeneratedLstmS16:
    """16x8 LSTM with one packed weight stream and generated 4-row SMLALD passes per unit."""

    op = "LSTM"
    priority = 30
    name = "edgenn_lstm_s16_gen_dsp"
    types = (DType.INT16,)

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_dsp and _accepts(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        layer = _layer(node, graph)
        batch, steps, n_input = sequence_dims(graph.tensor(node.inputs[0]), layer.time_major)
        h = layer.n_cell
        px, ph = _pad4(n_input) // 2, _pad4(h) // 2
        arrays: list[CArray] = [CArray("w", "uint32_t", _weights(layer))]
        h0 = const_operand(node, graph, LSTM_INDEX["output_state"], arrays)
        c0 = const_operand(node, graph, LSTM_INDEX["cell_state"], arrays)
        finals = (Buf("out", 1), Buf("out", 2)) if layer.extra_outputs else (NULL, NULL)
        code = (MBQM64_HELPER + "\n" + _step_code(layer, px, ph) + "\n"
                + _sequence_code(layer, batch, steps, n_input))
        scratch = 2 * (_pad4(n_input) + _pad4(h) + h)
        return KernelCall(
            call=generated("lstm", self.name, IN0, OUT0, h0, c0, *finals, SCRATCH),
            sources=("edgenn_curves_s16.h", "edgenn_sigmoid_table.h", "edgenn_fixed_point.h"),
            arrays=tuple(arrays), code=code, scratch_bytes=(scratch + 15) // 16 * 16,
            # why safe: row b's state is read (widened / copied to scratch) before its
            # steps run, and its final state is written after them, at the same offsets
            state_in_place=True,
            comment=f"LSTM {steps} steps x {batch} rows, {n_input} -> {h}, 16x8, generated SMLALD")


register_kernel(GeneratedLstmS16())
