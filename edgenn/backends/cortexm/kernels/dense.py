"""Fast int8 FullyConnected for DSP cores with int8 weights in flash (Cortex-M4/M7).

Inner loop: the input is widened once per inference to int16 pairs in SXTB16 order (input
word k = bytes b0 b1 b2 b3 gives the pairs (b0, b2), (b1, b3);
``c/edgenn_fc_widen_s8_dsp.c``), all at once into the scratch, or STREAM_WORDS words at a
time for a deep layer of one pass (``streamed``: a scratch of fixed size). Each weight word
holds two output rows ("lo" row a, "hi" row b) for one input pair (e0, e1)::

    byte0 = w[a][e0]   byte1 = w[b][e0] - (w[a][e0] < 0)
    byte2 = w[a][e1]   byte3 = w[b][e1] - (w[a][e1] < 0)

Read as two int16 halves the raw word is exactly (w[a][e0] + 256 w[b][e0], w[a][e1] +
256 w[b][e1]) (the borrow of a negative low byte is pre-compensated in the high byte), and
SXTB16 of it is (w[a][e0], w[a][e1]). So per weight word, against the input pair X::

    A += SMLAD(X, raw)          -> A = dot_a + 256 dot_b
    raw = SXTB16(raw)           (in place: no temporary register)
    B += SMLAD(X, raw)          -> B = dot_a

and after the loop dot_a = B, dot_b = (A - B) >> 8 (exact while |dot_b| < 2^23, proven per
layer at generation time; otherwise the depth is cut in chunks that are always safe). That is
4 MACs for one load and 3 instructions instead of 4 (two SXTB16 + two SMLAD), and no
temporary, so 6 rows (3 words) run per pass with 13 registers: per input pair one group of
4 back-to-back loads (5 cycles) + 9 instructions = 14 cycles for 12 MACs.

The accumulators start from the biases when the generator proves |bias_hi + dot_hi| < 2^23
(B = bias_lo, A = bias_lo + 256 bias_hi, stored in the weight stream ahead of each pass and
loaded in the first run of loads): then the requantization needs no bias loads at all.

The dot-product loops are generated per layer (``KernelCall.code``) for this layer's depth:
straight code for short depths, else a loop of 12..24 words entered Duff-style for the
remainder (code size bounded, few loop tests). The requantization follows in generated C: the
single-SMMULR path when ``fast_common.fast_requant_mode`` proves it bit-exact, on the doubled
accumulator obtained for free (2 lo = B << 1 as a shifted ADD operand, 2 hi = (A - B) >> 7,
bias stored doubled; constants inlined for per-tensor quantization), TFLite's exact double
rounding otherwise.

Claims: int8 in/out, constant 2-D int8 weights (zero point folded), any depth and row count,
batch >= 1, per-tensor or per-channel quantization. Refused (another kernel runs it): a hi-row
weight of -128 facing a negative lo-row weight (its compensated byte would be -129; TFLite's
symmetric int8 weights never hold -128).
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Cast, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import i32, is_int8
from edgenn.backends.cortexm.kernels.fast_common import (
    fast_requant_mode,
    quant_records,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node
from edgenn.prepared.fully_connected import FullyConnectedParams, prepare_fully_connected
from edgenn.prepared.linear import int8_weights

ROWS = 6  # output rows per pass (3 two-row weight words per input pair)
# input words per loop iteration when the depth is looped (each iteration: a 4-cycle test)
UNROLL_MIN, UNROLL_MAX = 12, 24
# pair words per chunk that are safe whatever the weights: 128 * 128 * 508 < 2^23
SAFE_CHUNK = 254
HI_LIMIT = 1 << 23  # |dot of a hi row| must stay below this for (A - B) >> 8 to be exact
# widened words per chunk of a one-pass layer widened chunk by chunk (``streamed``): its
# scratch is then 4 * STREAM_WORDS bytes whatever the depth; the per-chunk cost (a widening
# call, one asm block entry, the fold of the accumulators, no biases in the accumulators)
# measured 2% of the layer's cycles on a 4,000 -> 4 layer
STREAM_WORDS = SAFE_CHUNK


def dense_pairs(depth: int) -> int:
    """Widened input words: two per (zero-padded) input word of 4 bytes."""
    return 2 * -(-depth // 4)


def pair_elements(pairs: int) -> np.ndarray:
    """[pairs, 2] input element indices of each widened word (word 2k + j: 4k + j, 4k + j + 2)."""
    p = np.arange(pairs)
    first = 4 * (p >> 1) + (p & 1)
    return np.stack([first, first + 2], axis=1)


def row_groups(cout: int) -> list[int]:
    """Rows per pass: passes of ROWS, then one of 2 or 4 (rows padded to even)."""
    even = cout + (cout & 1)
    groups = [ROWS] * (even // ROWS)
    if even % ROWS:
        groups.append(even % ROWS)
    return groups


def _padded_rows(w: np.ndarray) -> np.ndarray:
    """int64 [even rows, depth rounded up to 4], zero padded."""
    cout, depth = w.shape
    mat = np.zeros((cout + (cout & 1), 4 * -(-depth // 4)), np.int64)
    mat[:cout, :depth] = w
    return mat


def packable(w: np.ndarray) -> bool:
    """False when some hi-row weight -128 faces a negative lo-row weight (byte -129)."""
    mat = _padded_rows(w)
    return not bool(np.any((mat[1::2] == -128) & (mat[0::2] < 0)))


def dense_chunk(w: np.ndarray) -> int:
    """Widened words per dot-product chunk: the whole depth when every hi row provably keeps
    |dot| < 2^23 (|x| <= 128), else SAFE_CHUNK (safe for any int8 weights)."""
    pairs = dense_pairs(w.shape[1])
    hi = np.abs(_padded_rows(w)[1::2]).sum(axis=1)
    if hi.size == 0 or 128 * int(hi.max()) < HI_LIMIT:
        return pairs
    return min(pairs, SAFE_CHUNK)


def bias_in_accumulators(w: np.ndarray, bias: np.ndarray) -> bool:
    """True when every hi row provably keeps |bias + dot| < 2^23 over the whole depth: then
    the accumulators start from the biases (B = bias_lo, A = bias_lo + 256 bias_hi, loaded
    with the first weights) and (A - B) >> 8 still recovers bias_hi + dot_hi exactly."""
    even = np.zeros(w.shape[0] + (w.shape[0] & 1), np.int64)
    even[: bias.size] = bias
    hi = np.abs(_padded_rows(w)[1::2]).sum(axis=1)
    return bool(np.all(np.abs(even[1::2]) + 128 * hi < HI_LIMIT))


def pack_dense_weights(w: np.ndarray, inits: np.ndarray | None = None) -> np.ndarray:
    """int8 [cout, depth] -> uint32 words: per pass, [widened word][row pair of the pass].

    With ``inits`` (the folded int32 biases of the rows), each pass starts with the initial
    accumulators of its row pairs, (B, A) = (bias_lo, bias_lo + 256 bias_hi) mod 2^32."""
    mat = _padded_rows(w)
    pairs = dense_pairs(w.shape[1])
    el = pair_elements(pairs)
    lo, hi = mat[0::2], mat[1::2]  # [row pairs, depth4]
    b0, b2 = lo[:, el[:, 0]], lo[:, el[:, 1]]
    b1 = hi[:, el[:, 0]] - (b0 < 0)
    b3 = hi[:, el[:, 1]] - (b2 < 0)
    if min(int(b1.min(initial=0)), int(b3.min(initial=0))) < -128:
        raise ValueError("weights not packable (hi row -128 facing a negative lo row)")
    words = ((b0 & 0xFF) | ((b1 & 0xFF) << 8) | ((b2 & 0xFF) << 16) | ((b3 & 0xFF) << 24))
    if inits is not None:
        even = np.zeros(mat.shape[0], np.int64)
        even[: inits.size] = inits
        init_words = np.stack([even[0::2], even[0::2] + 256 * even[1::2]], axis=1) & 0xFFFFFFFF
    out = []
    first = 0
    for rows in row_groups(w.shape[0]):
        k = rows // 2
        if inits is not None:
            out.append(init_words[first:first + k].ravel())
        out.append(words[first:first + k].T.ravel())
        first += k
    return np.concatenate(out).astype(np.uint32)


# ---- code generation ------------------------------------------------------------------------

def _step(k: int, first: bool, init: bool = False) -> list[str]:
    """One widened input word against k two-row weight words (loads grouped back to back).
    ``init``: the first step also loads the initial accumulators (B, A per row pair) in the
    same run of loads."""
    lines = ["ldr.w %[x], [%[xp]], #4"]
    if init:
        lines += [f"ldr.w %[{r}{i}], [%[wp]], #4" for i in range(k) for r in "ba"]
    lines += [f"ldr.w %[w{i}], [%[wp]], #4" for i in range(k)]
    for i in range(k):
        if first and not init:  # SMUAD: the first step initialises the accumulators
            lines += [f"smuad %[a{i}], %[x], %[w{i}]", f"sxtb16 %[w{i}], %[w{i}]",
                      f"smuad %[b{i}], %[x], %[w{i}]"]
        else:
            lines += [f"smlad %[a{i}], %[x], %[w{i}], %[a{i}]", f"sxtb16 %[w{i}], %[w{i}]",
                      f"smlad %[b{i}], %[x], %[w{i}], %[b{i}]"]
    return lines


def _loop_plan(steps: int) -> tuple[int, int, int]:
    """(words per iteration U, loop iterations, words of the first, partial iteration) for the
    words after the first.

    Up to UNROLL_MAX + 1 words run as straight code (no loop). Longer runs loop over U words
    (UNROLL_MIN <= U <= UNROLL_MAX, chosen for the fewest cycles of loop tests, 4 each); a
    remainder r enters the first iteration U - r words in (Duff's device: one taken branch,
    3 cycles), so the code holds 1 + U words whatever the depth.
    """
    rest = steps - 1
    if rest <= UNROLL_MAX:
        return rest, 0, rest
    best = min(range(UNROLL_MIN, UNROLL_MAX + 1),
               key=lambda u: (4 * -(-rest // u) + (3 if rest % u else 0), u))
    return best, -(-rest // best), rest % best


def _dot_block(k: int, steps: int, tag: str, init: bool) -> list[str]:
    """C statements: accumulators a{i}{tag}, b{i}{tag} of k row pairs over ``steps`` words
    from xp / wp (both advanced; ``init``: the initial accumulators come first in wp).
    Inline asm on DSP cores, a C twin elsewhere (host tests)."""
    unroll, n, part = _loop_plan(steps)
    asm = _step(k, True, init)
    if n == 0:
        asm += _step(k, False) * part
    else:
        if part:
            asm.append("b 2f")
        asm.append("1:")
        for j in range(unroll):
            if part and j == unroll - part:
                asm.append("2:")
            asm += _step(k, False)
        asm += ["cmp %[xp], %[end]", "bne 1b"]
    accs = [f"a{i}{tag}" for i in range(k)] + [f"b{i}{tag}" for i in range(k)]
    outs = [f'[a{i}] "=&r"(a{i}{tag})' for i in range(k)]
    outs += [f'[b{i}] "=&r"(b{i}{tag})' for i in range(k)]
    outs += ['[x] "=&r"(tx)'] + [f'[w{i}] "=&r"(tw{i})' for i in range(k)]
    outs += ['[xp] "+r"(xp)', '[wp] "+r"(wp)']
    ins = f'[end] "r"(xp + {steps})' if n else ""
    body = "".join(f'            "{line}\\n\\t"\n' for line in asm)
    c: list[str] = [f"    int32_t {', '.join(accs)};", "    {"]
    c += ["#if EDGENN_HAVE_DSP",
          f"        uint32_t tx, {', '.join(f'tw{i}' for i in range(k))};",
          "        __asm__ volatile(", body.rstrip("\n"),
          f"            : {', '.join(outs)}",
          f"            : {ins}",
          '            : "cc", "memory");',
          "#else"]
    if init:
        c += [f"        b{i}{tag} = (int32_t)*wp++; a{i}{tag} = (int32_t)*wp++;"
              for i in range(k)]
    else:
        c += [f"        a{i}{tag} = 0; b{i}{tag} = 0;" for i in range(k)]
    c += [f"        for (int p = 0; p < {steps}; p++) {{",
          "            uint32_t xv = *xp++;"]
    for i in range(k):
        c += ["            {", "                uint32_t wv = *wp++;",
              f"                a{i}{tag} = edgenn_smlad(xv, wv, a{i}{tag});",
              f"                b{i}{tag} = edgenn_smlad(xv, edgenn_sxtb16(wv), b{i}{tag});",
              "            }"]
    c += ["        }", "#endif", "    }"]
    return c


def _add(a: str, b: str) -> str:
    """int32 addition with C's defined wrap (TFLite Micro's int32 accumulator wraps)."""
    return f"(int32_t)((uint32_t)({a}) + (uint32_t)({b}))"


class _Quant:
    """The requantization of one layer as C text (constants inlined when per tensor)."""

    def __init__(self, layer: FullyConnectedParams, w: np.ndarray, bias: np.ndarray, cout: int,
                 cpad: int) -> None:
        mult = np.broadcast_to(np.asarray(layer.mult, np.int64), (cout,))
        shift = np.broadcast_to(np.asarray(layer.shift, np.int64), (cout,))
        self.zp = int(layer.out_zp)
        self.lo, self.hi = int(layer.act_min), int(layer.act_max)
        self.mode = fast_requant_mode(w, bias, shift, mult, self.zp, self.lo, self.hi)
        rec = quant_records(bias, mult, shift, self.zp, self.mode, pad_to=1, double_bias=False)
        self.per_tensor = bool(np.all(mult == mult[0]) and np.all(shift == shift[0]))
        self.arrays: list[CArray] = []
        # fast: columns mult, right shift, half; exact: mult, TFLite shift
        cols = {"mult": 1, "rsh": 2, "half": 3} if self.mode else {"mult": 1, "shift": 2}
        self.values = {name: int(rec[0, col]) for name, col in cols.items()}
        if not self.per_tensor:
            for name, col in cols.items():
                vals = np.zeros(cpad, np.int64)
                vals[:cout] = rec[:, col]
                self.arrays.append(CArray(name, "int32_t", vals))

    def term(self, name: str, row: str) -> str:
        return str(self.values[name]) if self.per_tensor else f"@P@_{name}[{row}]"

    def store(self, acc: str, row: str) -> str:
        """C statement: o[row] = requant(acc); fast: acc is the doubled accumulator."""
        if self.mode:
            clamp = f" v_ = v_ < {self.lo} ? {self.lo} : v_;" if self.mode == 1 else ""
            return (f"{{ int32_t v_ = edgenn_ssat8(edgenn_requant_doubled({acc}, "
                    f"{self.term('mult', row)}, {self.term('rsh', row)}, "
                    f"{self.term('half', row)}));{clamp} o[{row}] = (int8_t)v_; }}")
        return (f"o[{row}] = (int8_t)edgenn_requant_s32({acc}, {self.term('mult', row)}, "
                f"{self.term('shift', row)}, {self.zp}, {self.lo}, {self.hi});")


def _group_code(rows: int, base: str, pairs: int, chunk: int, cout: int | None,
                quant: _Quant, init: bool) -> list[str]:
    """C statements for one pass of ``rows`` rows starting at row ``base`` (``cout`` set for
    the last pass: rows at or beyond it are padding and not stored). ``init``: the biases are
    already in the accumulators (one chunk)."""
    k = rows // 2
    c = ["    {", "    const uint32_t *xp = xe;"]
    tags: list[str] = []
    for start in range(0, pairs, chunk):
        tag = f"_{len(tags)}"
        tags.append(tag)
        c += ["    " + line
              for line in _dot_block(k, min(chunk, pairs - start), tag, init and not start)]
    live = [r for r in range(rows) if cout is None or eval_row(base, r) < cout]
    # the biases first, as one run of loads (the M4 pipelines back-to-back loads)
    if not init:
        c += [f"        const int32_t q{r} = @P@_bias[{base} + {r}];" for r in live]
    # fast: the accumulator is doubled for the single-SMMULR requantization, for free:
    # 2 lo = B << 1 (a shifted ADD operand), 2 hi = (A - B) >> 7, a separate bias doubled
    lo_shift, hi_shift = ("<< 1", 7) if quant.mode else ("", 8)
    for r in live:
        i, row = r // 2, f"{base} + {r}"
        if r % 2 == 0:
            dot = " + ".join(f"((uint32_t)b{i}{t} {lo_shift})" for t in tags)
        else:  # (A - B) = 256 hi exactly per chunk (each chunk's |hi dot| < 2^23)
            dot = " + ".join(
                f"(uint32_t)((int32_t)((uint32_t)a{i}{t} - (uint32_t)b{i}{t}) >> {hi_shift})"
                for t in tags)
        acc = f"(int32_t)({dot})" if init else _add(f"(int32_t)({dot})", f"q{r}")
        c.append(f"        {{ const int32_t acc_ = {acc}; {quant.store('acc_', row)} }}")
    c.append("    }")
    return c


def eval_row(base: str, r: int) -> int:
    """The row index of a pass with a literal base (the last pass)."""
    return int(base) + r


def streamed(cout: int, pairs: int) -> bool:
    """True when the layer widens its input chunk by chunk (``_stream_code``): one pass of
    rows reads each widened word once, so widening the whole input ahead (2 bytes of scratch
    per input byte) buys nothing, and a deep layer's scratch would outgrow the network's
    other buffers (a 4,000-deep keyword classifier: 8,000 B beside its 4,000 B input)."""
    return len(row_groups(cout)) == 1 and pairs > STREAM_WORDS


def _stream_code(rows: int, pairs: int, chunk: int, depth: int, cout: int,
                 quant: _Quant) -> list[str]:
    """C statements of a one-pass layer whose input is widened ``chunk`` words at a time into
    the scratch: per chunk one dot block, its accumulators folded into running row sums (the
    same wrap-around sums ``_group_code`` forms over its chunks), then the requantization."""
    k = rows // 2
    step_bytes = 2 * chunk  # input bytes per chunk: a widened word holds two input bytes
    full = (pairs - 1) // chunk  # full chunks: the tail is never empty
    tail_words, tail_bytes = pairs - full * chunk, depth - full * step_bytes
    lo_shift, hi_shift = ("<< 1", 7) if quant.mode else ("", 8)

    def fold(tag: str) -> list[str]:
        return [f"        s{i}_lo += (uint32_t)b{i}{tag} {lo_shift}; "
                f"s{i}_hi += (uint32_t)((int32_t)((uint32_t)a{i}{tag} - (uint32_t)b{i}{tag})"
                f" >> {hi_shift});" for i in range(k)]

    c = ["    {", "    uint32_t " + ", ".join(f"s{i}_lo = 0, s{i}_hi = 0" for i in range(k)) + ";",
         "    const int8_t *ip = in;",
         f"    for (int s = 0; s < {full}; s++, ip += {step_bytes}) {{",
         f"        edgenn_fc_widen_s8_dsp(ip, xe, {step_bytes});",
         "        const uint32_t *xp = xe;"]
    c += ["    " + line for line in _dot_block(k, chunk, "_s", False)]
    c += fold("_s") + ["    }", "    {",
                        f"        edgenn_fc_widen_s8_dsp(ip, xe, {tail_bytes});",
                        "        const uint32_t *xp = xe;"]
    c += ["    " + line for line in _dot_block(k, tail_words, "_t", False)]
    c += fold("_t") + ["    }"]
    live = [r for r in range(rows) if r < cout]
    c += [f"        const int32_t q{r} = @P@_bias[{r}];" for r in live]
    for r in live:
        acc = _add(f"(int32_t)s{r // 2}_{'hi' if r % 2 else 'lo'}", f"q{r}")
        c.append(f"        {{ const int32_t acc_ = {acc}; {quant.store('acc_', str(r))} }}")
    c.append("    }")
    return c


def dense_plan(node: Node, graph: Graph) -> tuple[tuple[CArray, ...], str, int, int, int]:
    """(arrays, generated C, batch, depth, scratch bytes) of one layer."""
    layer = prepare_fully_connected(node, graph)
    w = layer.w
    cout, depth = w.shape
    batch = graph.tensor(node.inputs[0]).size // depth
    pairs = dense_pairs(depth)
    cpad = cout + (cout & 1)
    bias = layer.bias_folded.astype(np.int64)
    quant = _Quant(layer, w, bias, cout, cpad)
    bias_pad = np.zeros(cpad, np.int64)
    bias_pad[:cout] = 2 * bias if quant.mode else bias  # fast: doubled (|2 acc| < 2^31)
    stream = streamed(cout, pairs)
    # why not streamed: the biases in the accumulators would need a first chunk of its own
    init = not stream and bias_in_accumulators(w, bias)
    chunk = pairs if init else dense_chunk(w)
    if stream:
        chunk = min(chunk, STREAM_WORDS)
    groups = row_groups(cout)
    full = sum(1 for g in groups if g == ROWS) * ROWS
    body: list[str] = [
        f"/* dense: {depth} -> {cout}, batch {batch}: {len(groups)} passes of <= {ROWS} rows, "
        f"{-(-pairs // chunk)} chunk(s){' widened one by one' if stream else ''}, "
        f"bias {'in the accumulators' if init else 'added'}, "
        f"requant {'fast' if quant.mode else 'exact'} */",
        "static __attribute__((noinline)) void @P@_dense(const int8_t *in, int8_t *out, "
        "uint32_t *xe)",
        "{",
        f"    for (int n = 0; n < {batch}; n++, in += {depth}, out += {cout}) {{",
        "    const uint32_t *wp = @P@_w;",
        "    int8_t *o = out;",
    ]
    if stream:
        body += _stream_code(cpad, pairs, chunk, depth, cout, quant)
    else:
        body.insert(-2, f"    edgenn_fc_widen_s8_dsp(in, xe, {depth});")  # the whole input
        if full:
            body.append(f"    for (int c = 0; c < {full}; c += {ROWS})")
            body += _group_code(ROWS, "c", pairs, chunk, None, quant, init)
        if full < cpad:
            body += _group_code(cpad - full, str(full), pairs, chunk, cout, quant, init)
    body += ["    }", "}"]
    if init:
        arrays: tuple[CArray, ...] = (
            CArray("w", "uint32_t", pack_dense_weights(w, i32(bias).astype(np.int64))),
            *quant.arrays)
    else:
        arrays = (CArray("w", "uint32_t", pack_dense_weights(w)),
                  CArray("bias", "int32_t", i32(bias_pad)), *quant.arrays)
    return arrays, "\n".join(body) + "\n", batch, depth, 4 * (chunk if stream else pairs)


class DenseFullyConnected:
    """FullyConnected with int8 two-row weight words and generated 6-row SMLAD loops."""

    op = "FullyConnected"
    priority = 30
    name = "edgenn_fc_s8_gen_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int8(node, graph):
            return False
        if len(node.inputs) < 2 or not node.inputs[1]:
            return False
        wt = graph.tensor(node.inputs[1])
        if not wt.is_const or len(wt.shape) != 2 or wt.data is None or wt.quant is None:
            return False
        if wt.data.dtype != np.int8 or graph.tensor(node.inputs[0]).size % wt.shape[1]:
            return False
        try:
            w = int8_weights(node, graph)
        except UnsupportedOperatorError:
            return False
        return packable(w)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        arrays, code, batch, depth, scratch = dense_plan(node, graph)
        cout = int(graph.tensor(node.inputs[1]).shape[0])
        return KernelCall(
            call=generated("dense", self.name, IN0, OUT0, Cast("uint32_t *", SCRATCH)),
            sources=("edgenn_fc_widen_s8_dsp.c",),
            arrays=arrays,
            scratch_bytes=scratch,
            code=code,
            comment=f"{depth} -> {cout} x{batch}, int8 two-row weight words, 6-row SMLAD",
        )


register_kernel(DenseFullyConnected())
