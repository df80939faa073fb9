"""Generated int8 SVDF for DSP cores (Cortex-M4/M7), bit-exact with TFLite Micro.

The portable kernel (``recurrent.py``, ``c/edgenn_svdf.c``) shifts the whole state by one
element at a time, then runs scalar products with per-element zero-point subtractions. This
one is generated for the layer's shape:

* Feature product: the ``F`` filter rows of ``weights_feature`` are a DSP FullyConnected
  (``dense.py``'s two-row weight words, SXTB16 / SMLAD passes of 6 rows) over the input
  widened once per batch row; the input zero point is folded into the accumulators' initial
  values (``arith/zero_point.py``), which the weight stream carries. Each filter's value is
  requantized by ``effective_scale_1`` (a single SMMULR where ``fast_requant_mode`` proves
  it exact, TFLite's double rounding otherwise), clamped to int16, plus the state zero point
  narrowed with C's wrap (the reference layer's rule).
* Time product and shift in one pass over each filter's ``M`` int16 state values, two per
  word: the old word pair k meets the time weights shifted by one, ``(0, wt[0]), (wt[1],
  wt[2]), ...`` by one SMLAD (the oldest value drops out against the 0), and the shifted
  word ``(old[2k + 1], old[2k + 2])`` is stored (the new state: in place is safe, each word
  is read before the one before it is written); the newest value ``wt[M - 1] * feature``
  and the filter's last word close it. The state zero point is folded into the biases
  (``-zp * sum(wt)`` per unit): int32 sums wrap as TFLM's. An odd memory (every other
  filter row unaligned) or an int8 state (int8 time weights; the feature clamped to int8)
  runs its time pass one value at a time in C.
* Each unit: bias + its ``rank`` filters' sums, requantized by ``effective_scale_2`` to int8.

Claims: int8 input and output (int16 or int8 state), the feature rows packable in some order
(``row_order``) with their folded biases provably in the accumulators; otherwise the
portable kernel runs.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.ccall import IN0, NULL, OUT0, SCRATCH, Buf, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import const_operand, i32, record_matcher
from edgenn.backends.cortexm.kernels.dense import (
    _dot_block,
    bias_in_accumulators,
    dense_pairs,
    pack_dense_weights,
    packable,
    row_groups,
)
from edgenn.backends.cortexm.kernels.lstm_s8_gen import _Fc
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.lstm import GateRequant
from edgenn.prepared.svdf import IntegerSvdf, SvdfParams, prepare_svdf


def _q(s: SvdfParams) -> IntegerSvdf:
    """The integer constants of a record :func:`_layer` accepted."""
    assert s.integer is not None
    return s.integer


def _layer(node: Node, graph: Graph) -> SvdfParams:
    s = prepare_svdf(node, graph)
    if s.integer is None:
        raise UnsupportedOperatorError(f"{node}: the generated SVDF is int8")
    order = row_order(_q(s).weights_feature)
    if order is None or not bias_in_accumulators(_feature_rows(s, order),
                                                 _feature_inits(s, order)):
        raise UnsupportedOperatorError(
            f"{node}: SVDF feature weights do not fit two-row weight words")
    return s


def row_order(w: np.ndarray) -> list[int] | None:
    """An order of the feature rows whose consecutive pairs are packable (None: none found).
    Every filter's feature lands in its own state slot, so the rows may run in any order: a
    row holding -128 (the converter's symmetric weights never do; TFLM's scrambled benchmark
    model does) goes first as a lo row next to a partner that keeps the pair packable; the
    time pass finds each filter's feature through a position table. Identity when the rows
    already pack."""
    if packable(w):
        return list(range(len(w)))
    low, neg = w == -128, w < 0
    left = sorted(range(len(w)), key=lambda r: (not low[r].any(), r))
    order: list[int] = []
    while left:
        a = left.pop(0)
        if not left:
            order.append(a)  # the last, odd row: its hi partner is the zero padding
            break
        rest = np.array(left)
        # (a lo, b hi) packs when b has no -128 where a is negative; (b lo, a hi) likewise
        as_lo = ~np.any(low[rest] & neg[a], axis=1)
        as_hi = ~np.any(low[a] & neg[rest], axis=1)
        fits = np.flatnonzero(as_lo | as_hi)
        if not fits.size:
            return None
        k = int(fits[0])
        b = left.pop(k)
        order += [a, b] if as_lo[k] else [b, a]
    return order


def _feature_rows(s: SvdfParams, order: list[int]) -> np.ndarray:
    return _q(s).weights_feature[order]


def _feature_inits(s: SvdfParams, order: list[int]) -> np.ndarray:
    """The feature rows' initial accumulators (in ``order``): TFLM's dot from 0 over
    ``x - input_zp``."""
    p = _q(s)
    return i32(fold_input_zero_point(np.zeros(s.filters, np.int64), p.weights_feature,
                                     p.input_zp)).astype(np.int64)[order]


def time_stream(s: SvdfParams) -> np.ndarray:
    """uint32 per filter: M / 2 words of the shifted time weights ``(0, wt[0], ..., wt[M-2])``
    as int16 pairs (lo the even element), then ``wt[M - 1]`` as a word."""
    wt = _q(s).weights_time.astype(np.int64)  # [F, M]
    shifted = np.concatenate([np.zeros((s.filters, 1), np.int64), wt[:, :-1]], axis=1)
    pairs = (shifted[:, 0::2] & 0xFFFF) | ((shifted[:, 1::2] & 0xFFFF) << 16)
    last = wt[:, -1:] & 0xFFFFFFFF
    return np.concatenate([pairs, last], axis=1).ravel().astype(np.uint32)


def _state_ctype(s: SvdfParams) -> str:
    return "int8_t" if _q(s).state_lo == -128 else "int16_t"


def _by_value(s: SvdfParams) -> bool:
    """The time pass one value at a time: an int8 state, or an odd memory (whose filter rows
    alternate in alignment); word pairs otherwise."""
    return _state_ctype(s) == "int8_t" or s.memory % 2 == 1


def _time_weights(s: SvdfParams) -> CArray:
    """The word-pair stream (``time_stream``), or the plain [F, M] weights (``_by_value``)."""
    if _by_value(s):
        return CArray("wt", _state_ctype(s), _q(s).weights_time)
    return CArray("wt", "uint32_t", time_stream(s))


def unit_biases(s: SvdfParams) -> np.ndarray:
    """Each unit's bias with the state zero point folded in: ``bias - zp * sum(wt)`` over
    the unit's filters (int32, wrapped as TFLM's sums)."""
    p = _q(s)
    # a unit's weights: its rank filters' time weights, [U, rank * M]
    return i32(fold_input_zero_point(p.bias, p.weights_time.reshape(s.units, -1), p.state_zp))


def _features_code(s: SvdfParams, px: int) -> str:
    """``@P@_features``: every filter's newest state value from the widened input."""
    p = _q(s)
    order = row_order(p.weights_feature)
    assert order is not None
    fc = _Fc.of(GateRequant(*p.scale_1), _feature_rows(s, order), _feature_inits(s, order))
    ctype = _state_ctype(s)
    lines = ["static __attribute__((noinline)) void @P@_features(const uint32_t *xe, "
             "int32_t *feat)", "{", "    const uint32_t *wp = @P@_wf;", "    const uint32_t *xp;"]

    def one_pass(rows: int, first: str) -> list[str]:
        body = ["    xp = xe;"]
        body += ["    " + line for line in _dot_block(rows // 2, px, "", True)]
        for r in range(rows):
            value = fc.value(f"b{r // 2}", f"a{r // 2}", r)
            if p.state_lo == -128:  # int16-saturated, then the int8 state's clamp
                value = f"edgenn_clamp({value}, -128, 127)"
            body.append(f"    feat[{first} + {r}] = ({ctype})({value} + {p.state_zp});")
        return body

    groups = row_groups(s.filters)
    full = sum(1 for g in groups if g == 6)
    if full:
        lines += [f"    for (int f = 0; f < {6 * full}; f += 6) {{", *one_pass(6, "f"), "    }"]
    if len(groups) > full:
        lines += ["    {", *one_pass(groups[-1], str(6 * full)), "    }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


UNROLL_WORDS = 15  # words of a filter's time pass up to which it is straight code


def _word(j: int, store: bool) -> list[str]:
    """asm of state word j of a filter: the old word (in w{j % 3}) against its time-weight
    pair, then the shifted word (its high half, the next word's low half) stored. The three
    word registers rotate, so no move is needed."""
    cur, nxt = f"%[w{j % 3}]", f"%[w{(j + 1) % 3}]"
    lines = [f"ldr {nxt}, [%[sp]], #4", "ldr %[t], [%[tw]], #4",
             f"smlad %[acc], {cur}, %[t], %[acc]"]
    if store:
        lines += [f"lsr {cur}, {cur}, #16", f"orr {cur}, {cur}, {nxt}, lsl #16",
                  f"str {cur}, [%[dp]], #4"]
    return lines


def _time_code(memory: int, store: bool) -> str:
    """``@P@_time``: one filter's time sum over its shifted state (and the shifted state):
    every word but the last in inline asm (7 cycles a word with the store: 2 loads, SMLAD,
    the shift's LSR / ORR, the store), straight code up to UNROLL_WORDS words, else a loop
    of 3 words; the last word meets the new feature value in C."""
    words = memory // 2
    n = words - 1
    loops, rest = (0, n) if n <= UNROLL_WORDS else divmod(n, 3)
    asm: list[str] = []
    if loops:
        asm += [f"movw %[cnt], #{loops}", "1:"]
        asm += [line for j in range(3) for line in _word(j, store)]
        asm += ["subs %[cnt], %[cnt], #1", "bne 1b"]
    asm += [line for j in range(rest) for line in _word(j, store)]
    last = f"w{rest % 3}"  # the register holding the last old word
    body = "".join(f'        "{line}\\n\\t"\n' for line in asm).rstrip("\n")
    put = "*dp = (w0 >> 16) | ((uint32_t)feat << 16);" if store else "(void)dp;"
    return f"""/* one filter: sum over its M = {memory} state values after the shift (sp: the old
 * ones, dp: where the shifted ones go), the newest one feat */
static inline int32_t @P@_time(const uint32_t *sp, uint32_t *dp, const uint32_t *tw,
                               int32_t feat)
{{
    int32_t acc = 0;
    uint32_t w0 = *sp++, w1 = 0, w2 = 0, t, cnt = 0;
    __asm__ volatile(
{body or '        ""'}
        : [acc] "+r"(acc), [sp] "+r"(sp), [dp] "+r"(dp), [tw] "+r"(tw), [w0] "+r"(w0),
          [w1] "+r"(w1), [w2] "+r"(w2), [t] "=&r"(t), [cnt] "+r"(cnt)
        :
        : "cc", "memory");
    (void)t;
    (void)cnt;
    w0 = {last};
    acc = edgenn_smlad(w0, *tw, acc);
    {put}
    return (int32_t)((uint32_t)acc + tw[1] * (uint32_t)feat);
}}
"""


def _time_code_values(memory: int, store: bool, ctype: str) -> str:
    """``@P@_time`` one value at a time (``_by_value``: a load, a multiply-accumulate, the
    shifted value stored)."""
    put = f"dp[m] = ({ctype})v;" if store else ""
    last = f"dp[{memory - 1}] = ({ctype})feat;" if store else "(void)dp;"
    return f"""/* one filter: sum over its M = {memory} state values after the shift (sp: the old
 * ones, dp: where the shifted ones go), the newest one feat */
static inline int32_t @P@_time(const {ctype} *sp, {ctype} *dp, const {ctype} *tw,
                               int32_t feat)
{{
    uint32_t acc = 0;
    for (int m = 0; m < {memory - 1}; m++) {{
        const int32_t v = sp[m + 1];
        acc += (uint32_t)(tw[m] * v);
        {put}
    }}
    {last}
    return (int32_t)(acc + (uint32_t)(tw[{memory - 1}] * feat));
}}
"""


def _svdf_code(s: SvdfParams, batch: int, n_input: int, px: int, store: bool) -> str:
    p = _q(s)
    f, m, units, rank = s.filters, s.memory, s.units, s.rank
    m2, s2 = p.scale_2
    row = f * m
    # an even memory runs on word pairs (M / 2 state words and M / 2 + 1 weight words a
    # filter), an odd one on halfwords
    st = _state_ctype(s)
    word, step, wstep = (st, m, m) if _by_value(s) else ("uint32_t", m // 2, m // 2 + 1)
    dst = f"({word} *)(s1 + b * {row})" if store else "NULL"
    # features in the feature passes' row order; ``pos`` finds filter f's among them
    identity = row_order(p.weights_feature) == list(range(f))
    fv = "const int32_t *fv = feat;" if identity else "const uint8_t *pos = @P@_pos;"
    next_feat = "*fv++" if identity else "feat[*pos++]"
    return f"""static void @P@_svdf(const int8_t *x, int8_t *y, const {st} *s0, {st} *s1,
                     void *scratch)
{{
    uint32_t *xe = (uint32_t *)scratch;
    int32_t *feat = (int32_t *)(xe + {px});
    (void)s1;
    for (int b = 0; b < {batch}; b++) {{
        edgenn_fc_widen_s8_dsp(x + b * {n_input}, xe, {n_input});
        @P@_features(xe, feat);
        const {word} *sp = (const {word} *)(s0 + b * {row});
        {word} *dp = {dst};
        const {word} *tw = @P@_wt;
        {fv}
        for (int u = 0; u < {units}; u++) {{
            uint32_t v = (uint32_t)@P@_bias[u];
            for (int r = 0; r < {rank}; r++) {{
                v += (uint32_t)@P@_time(sp, dp, tw, {next_feat});
                sp += {step};
                {"dp += " + str(step) + ";" if store else ""}
                tw += {wstep};
            }}
            y[b * {units} + u] = (int8_t)edgenn_requant_s32((int32_t)v, {m2}, {s2}, {p.output_zp},
                                                         -128, 127);
        }}
    }}
}}
"""


_accepts = record_matcher((DType.INT8,), _layer)


class GeneratedSvdfS8:
    """int8 SVDF: DSP feature passes, one SMLAD pass for time product + shift."""

    op = "SVDF"
    priority = 30
    name = "edgenn_svdf_s8_gen_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_dsp and _accepts(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        s = _layer(node, graph)
        batch, n_input = graph.tensor(node.inputs[0]).shape
        px = dense_pairs(n_input)
        order = row_order(_q(s).weights_feature)
        assert order is not None
        wf = pack_dense_weights(_feature_rows(s, order), _feature_inits(s, order))
        arrays: list[CArray] = [CArray("wf", "uint32_t", wf),
                                _time_weights(s),
                                CArray("bias", "int32_t", unit_biases(s))]
        if order != list(range(s.filters)):
            if s.filters > 256:
                raise UnsupportedOperatorError(f"{node}: more than 256 reordered filters")
            arrays.append(CArray("pos", "uint8_t", np.argsort(order)))
        state0 = const_operand(node, graph, 4, arrays)
        store = len(node.outputs) == 2
        time = (_time_code_values(s.memory, store, _state_ctype(s)) if _by_value(s)
                else _time_code(s.memory, store))
        code = (_features_code(s, px) + "\n" + time + "\n"
                + _svdf_code(s, batch, n_input, px, store))
        new_state = Buf("out", 1) if store else NULL
        scratch = 4 * px + 4 * (s.filters + 1)
        return KernelCall(
            call=generated("svdf", self.name, IN0, OUT0, state0, new_state, SCRATCH),
            sources=("edgenn_fc_widen_s8_dsp.c",), arrays=tuple(arrays), code=code,
            scratch_bytes=(scratch + 15) // 16 * 16, state_in_place=True,
            comment=(f"SVDF {s.filters} filters x {s.memory} memory, rank "
                     f"{s.rank}, generated SMLAD"))


register_kernel(GeneratedSvdfS8())
