"""Generated int8 LSTM (8x8->16) for DSP cores (Cortex-M4/M7), bit-exact with TFLite Micro.

The portable kernel (``recurrent.py``, ``c/edgenn_lstm.c``) runs one gate at a time with
per-element function calls; this one is generated for the layer's shape, like the DSP
FullyConnected (``dense.py``), whose weight words, widening and SMLAD blocks it reuses:

* All gates' input and recurrent weights form ONE packed int8 stream in flash, rows
  unit-major (forget, input, cell, output of unit 0, then unit 1, ...): per pass the initial
  accumulators and the two-row weight words of its input part (over x_t), then those of its
  recurrent part (over h). The gate FCs keep separate accumulators because TFLM
  requantizes them separately (their scales differ) before adding them in Q3.12.
* x_t and h are widened to int16 pairs once per step (``edgenn_fc_widen_s8_dsp``, straight
  from the input and from the step's output row, which is the new hidden state).
* Three units run as two passes of 6 rows (3 row-pair words per input pair; SMLAD, SXTB16,
  SMLAD each: ``dense._dot_block``; 14 cycles per 12 MACs against 10 per 8 with a 4-row pass
  per unit), the units left over one 4-row pass each (every unit in compact code); after
  each pass the gate values, the cell update and the hidden value of its completed units in
  generated C with every constant inlined: nothing is stored between the gates and the cell
  update.
* The biases (zero points folded: ``arith/zero_point.py``, in the reference layer) start the
  accumulators; a gate FC requantizes by a single SMMULR where ``fast_requant_mode`` proves
  it exact, TFLite's double rounding otherwise. Activations: TFLM's int16 sigmoid / tanh
  (``edgenn_curves_s16.h``); cell and hidden as the reference, with TFLM's saturations.

Claims: int8 activations, batch >= 1, batch- or time-major, no projection or peephole (the
reference layer refuses those anyway), the weights packable and every hi row's |bias + dot|
provably below 2^23 (``dense.bias_in_accumulators``); anything else runs the portable kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, NULL, OUT0, SCRATCH, Buf, generated
from edgenn.backends.cortexm.codesize import is_compact
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import const_operand, i32, record_matcher
from edgenn.backends.cortexm.kernels.dense import (
    _dot_block,
    bias_in_accumulators,
    dense_pairs,
    pack_dense_weights,
    packable,
)
from edgenn.backends.cortexm.kernels.fast_common import fast_requant_mode
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.ir.opdefs.recurrent import LSTM_INDEX, sequence_dims
from edgenn.prepared.lstm import GateRequant, IntegerGate, IntegerLstm, LstmParams, prepare_lstm


@dataclass(frozen=True)
class Lstm:
    """An integer LSTM as the generators read it: the prepared record and its integer part."""

    record: LstmParams
    params: IntegerLstm

    @property
    def n_cell(self) -> int:
        return self.record.n_cell

    @property
    def time_major(self) -> bool:
        return self.record.time_major

    @property
    def extra_outputs(self) -> bool:
        return self.record.extra_outputs


def integer_lstm(node: Node, graph: Graph) -> Lstm:
    """The node's prepared record with its integer part (a float LSTM: refused in one line)."""
    record = prepare_lstm(node, graph)
    if record.integer is None:
        raise UnsupportedOperatorError(f"{node}: the generated LSTM kernels are integer")
    return Lstm(record, record.integer)


def _layer(node: Node, graph: Graph) -> Lstm:
    layer = integer_lstm(node, graph)
    if layer.params.wide:
        raise UnsupportedOperatorError(f"{node}: the generated LSTM is int8")
    return layer


def unit_rows(layer: Lstm, u: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unit ``u``'s four gate rows: (input weights [4, I], folded biases, recurrent weights
    [4, H], folded biases)."""
    gates = layer.params.gates
    return (np.stack([g.w[u] for g in gates]), np.array([g.bias_w[u] for g in gates]),
            np.stack([g.r[u] for g in gates]), np.array([g.bias_r[u] for g in gates]))


def _check(node: Node, layer: Lstm) -> None:
    for u in range(layer.n_cell):
        w, bw, r, br = unit_rows(layer, u)
        for mat, bias in ((w, bw), (r, br)):
            if not packable(mat) or not bias_in_accumulators(mat, bias):
                raise UnsupportedOperatorError(
                    f"{node}: LSTM weights of unit {u} do not fit two-row weight words")


def _packed(units: range, layer: Lstm) -> tuple[np.ndarray, np.ndarray]:
    """The input and recurrent words of ``units`` (their rows unit-major), init words first
    in each pass (``dense.pack_dense_weights``: passes of 6 rows, or one of 4)."""
    parts = [unit_rows(layer, u) for u in units]
    w, bw, r, br = (np.concatenate([q[j] for q in parts]) for j in range(4))
    return (pack_dense_weights(w, i32(bw).astype(np.int64)),
            pack_dense_weights(r, i32(br).astype(np.int64)))


def _triples(layer: Lstm) -> int:
    """Units run three at a time (two 6-row passes); none in compact code
    (``codesize.is_compact``: 4-row passes only, one copy of the pass code, about a third of
    the code for a few percent more cycles)."""
    return 0 if is_compact() else layer.n_cell // 3


def _weights(layer: Lstm, triples: int) -> np.ndarray:
    """uint32 stream in ``_step_code``'s order: per pass, the input part then the recurrent
    part (init words first): ``triples`` times three units as two 6-row passes, then the rest
    one by one."""
    words = []
    for t in range(triples):
        wx, wh = _packed(range(3 * t, 3 * t + 3), layer)
        hx, hh = len(wx) // 2, len(wh) // 2  # two passes of equal size each
        words += [wx[:hx], wh[:hh], wx[hx:], wh[hh:]]
    for u in range(3 * triples, layer.n_cell):
        words += list(_packed(range(u, u + 1), layer))
    return np.concatenate(words)


@dataclass(frozen=True)
class _Fc:
    """One gate FC's requantization to Q3.12 as C (fast: single SMMULR, proven exact)."""

    req: GateRequant
    fast: bool

    @classmethod
    def of(cls, req: GateRequant, w: np.ndarray, bias: np.ndarray) -> _Fc:
        # zero point 0 and the int8 range only to ask for the proof of the SMMULR form;
        # the kernel saturates to int16 after it
        mode = fast_requant_mode(w, bias, np.array([req.shift]), np.array([req.mult]),
                                 0, -128, 127)
        return cls(req, bool(mode))

    def value(self, lo: str, hi: str, row: int) -> str:
        """C expression: the row's Q3.12 value, int16-saturated; ``row`` even: the lo row
        of its pair word (``lo`` = B), odd: the hi row ((A - B) >> 8)."""
        if self.fast:
            r = -self.req.shift
            acc = (f"(int32_t)((uint32_t){lo} << 1)" if row % 2 == 0
                   else f"((int32_t)((uint32_t){hi} - (uint32_t){lo}) >> 7)")
            return (f"edgenn_ssat(edgenn_requant_doubled({acc}, {self.req.mult}, {r}, "
                    f"{1 << (r - 1)}), 16)")
        acc = lo if row % 2 == 0 else f"((int32_t)((uint32_t){hi} - (uint32_t){lo}) >> 8)"
        return (f"edgenn_requant_s32({acc}, {self.req.mult}, {self.req.shift}, 0, "
                "-32768, 32767)")


# |f * c|, |i * g|, |tanh(c) * o|: products of two int16 values, one of them a Q0.15 gate in
# [0, 32767] (the other in [-32768, 32767])
PRODUCT_BOUND = 32767 * 32768


def _product(req: GateRequant, v: str) -> str:
    """C expression: ``req`` (zero point, clamp) of the element-wise product ``v``. By a
    single SMMULR of the doubled product when ``fast_requant_mode`` proves it exact for
    |v| <= PRODUCT_BOUND (asked with no weights and that bound as the bias), else TFLite's
    double rounding."""
    fast = fast_requant_mode(np.zeros((1, 1), np.int64), np.array([PRODUCT_BOUND]),
                             np.array([req.shift]), np.array([req.mult]),
                             req.out_zp, -128, 127)
    if fast:
        r = -req.shift
        half = (1 << (r - 1)) + (req.out_zp << r)
        value = (f"edgenn_requant_doubled((int32_t)((uint32_t)({v}) << 1), {req.mult}, "
                 f"{r}, {half})")
        if (req.act_min, req.act_max) == (-32768, 32767):
            return f"edgenn_ssat({value}, 16)"
        if (req.act_min, req.act_max) == (-128, 127):
            return f"edgenn_ssat({value}, 8)"
        return f"edgenn_clamp({value}, {req.act_min}, {req.act_max})"
    return (f"edgenn_requant_s32({v}, {req.mult}, {req.shift}, {req.out_zp}, "
            f"{req.act_min}, {req.act_max})")


def _scaled(v: str, multiplier: int, shift: int) -> str:
    """``(v * multiplier + round) >> shift``: TFLM's int16 Logistic / Tanh input scaling."""
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    return f"(({v}) * {multiplier} + {rnd}) >> {shift}"


def gate_code(k: int, gate: IntegerGate, zw: str, zr: str, suffix: str = "") -> str:
    """C statements: gate ``k`` of a unit into g{k}{suffix}, from its two FCs' Q3.12
    values ``zw`` and ``zr`` (C expressions, int16-saturated)."""
    z = f"edgenn_ssat({zw} + {zr}, 16)"
    curve = "edgenn_sigmoid16" if gate.activation == "sigmoid" else "edgenn_tanh16"
    # both curves take the Q3.12 value times 3 (TFLM's power-of-two input scaling)
    return (f"        const int32_t z{k}{suffix} = {z};\n"
            f"        const int32_t g{k}{suffix} = {curve}(z{k}{suffix} * 3, "
            "edgenn_sigmoid_table);")


def cell_code(p: IntegerLstm, hidden_ctype: str, unit: str = "u") -> str:
    """C statements after the gates g0..g3 of unit ``unit``: its cell state c[unit] and
    hidden value h[unit], with TFLM's saturations."""
    fm, im, om = p.forget_mul, p.input_mul, p.output_mul
    ct = p.cell_tanh
    clip = (f"        v = edgenn_clamp(v, {-p.cell_clip}, {p.cell_clip});\n"
            if p.cell_clip > 0 else "")
    return (f"        const int32_t fc = {_product(fm, f'g0 * c[{unit}]')};\n"
            f"        const int32_t ig = {_product(im, 'g1 * g2')};\n"
            "        int32_t v = edgenn_ssat(fc + ig, 16);\n"
            f"{clip}"
            f"        c[{unit}] = (int16_t)v;\n"
            f"        const int32_t t = edgenn_tanh16({_scaled('v', ct.multiplier, ct.shift)}, "
            "edgenn_sigmoid_table);\n"
            f"        h[{unit}] = ({hidden_ctype}){_product(om, 't * g3')};")


def _passes(px: int, ph: int, gates: list[int], tag: str, fcs: list[tuple[_Fc, _Fc]]
            ) -> list[str]:
    """C statements: one pass over x (accumulators ..._x{tag}) then over h (..._h{tag}), the
    weight pointer running on; row r is gate ``gates[r]`` of its unit, and its input FC is
    requantized into zw{tag}{r} before the h block (fewer values live across it)."""
    lines = ["    xp = xe;"]
    lines += ["    " + line for line in _dot_block(len(gates) // 2, px, f"_x{tag}", True)]
    lines += [f"    const int32_t zw{tag}{r} = "
              f"{fcs[k][0].value(f'b{r // 2}_x{tag}', f'a{r // 2}_x{tag}', r)};"
              for r, k in enumerate(gates)]
    lines.append("    xp = he;")
    lines += ["    " + line for line in _dot_block(len(gates) // 2, ph, f"_h{tag}", True)]
    return lines


def _step_code(layer: Lstm, px: int, ph: int, triples: int) -> str:
    """``@P@_step``: one time step of one batch row. The first 3 ``triples`` units run three
    at a time as two 6-row passes (pass a: unit 0 and the forget / input rows of unit 1;
    pass b: the cell / output rows of unit 1 and unit 2), the others one 4-row pass each."""
    p = layer.params
    rest = layer.n_cell - 3 * triples
    fcs = [(_Fc.of(g.fc_w, g.w, g.bias_w), _Fc.of(g.fc_r, g.r, g.bias_r)) for g in p.gates]

    def gate(k: int, pair: int, tag: str, suffix: str = "") -> str:
        """Gate k from row pair ``pair`` of pass ``tag`` (a row's parity is its gate's)."""
        row = 2 * pair + k % 2
        return gate_code(k, p.gates[k], f"zw{tag}{row}",
                         fcs[k][1].value(f"b{pair}_h{tag}", f"a{pair}_h{tag}", k), suffix)

    def unit(sources: list[tuple[int, str]], index: str) -> list[str]:
        """The unit's gates k from (row pair, pass) ``sources[k]``, then its cell update."""
        body = [gate(k, pair, tag) for k, (pair, tag) in enumerate(sources)]
        return ["    {", *body, cell_code(p, "int8_t", index), "    }"]

    lines = [
        "/* one LSTM step: xe / he the widened x_t and h, c the cell state (in place), h the new",
        " * hidden state (the step's output row) */",
        "static __attribute__((noinline)) void @P@_step(const uint32_t *xe, const uint32_t *he,"
        " int16_t *c, int8_t *h)",
        "{",
        "    const uint32_t *wp = @P@_w;",
        "    const uint32_t *xp;",
    ]
    if triples:
        lines += [f"    for (int u = 0; u < {3 * triples}; u += 3) {{"]
        lines += _passes(px, ph, [0, 1, 2, 3, 0, 1], "a", fcs)
        lines += unit([(0, "a"), (0, "a"), (1, "a"), (1, "a")], "u")
        # unit 1's forget and input gates now: four accumulators fewer live across pass b
        lines += ["    int32_t n0, n1;", "    {", gate(0, 2, "a"), gate(1, 2, "a"),
                  "        n0 = g0;", "        n1 = g1;", "    }"]
        lines += _passes(px, ph, [2, 3, 0, 1, 2, 3], "b", fcs)
        lines += ["    {", "        const int32_t g0 = n0, g1 = n1;", gate(2, 0, "b"),
                  gate(3, 0, "b"), cell_code(p, "int8_t", "u + 1"), "    }"]
        lines += unit([(1, "b"), (1, "b"), (2, "b"), (2, "b")], "u + 2")
        lines.append("    }")
    if rest:
        lines += [f"    for (int u = {3 * triples}; u < {layer.n_cell}; u++) {{"]
        lines += _passes(px, ph, [0, 1, 2, 3], "", fcs)
        lines += unit([(0, ""), (0, ""), (1, ""), (1, "")], "u")
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def offset(time_major: bool, batch: int, steps: int, features: int) -> str:
    """C expression: element offset of row b, step t of a sequence of ``features``."""
    row = f"(t * {batch} + b)" if time_major else f"(b * {steps} + t)"
    return f"{row} * {features}"


def _sequence_code(layer: Lstm, batch: int, steps: int, n_input: int, px: int) -> str:
    """``@P@_lstm``: every batch row over every step, state in and out."""
    h = layer.n_cell
    tm = layer.time_major
    return f"""static void @P@_lstm(const int8_t *x, int8_t *y, const int8_t *h0, const int16_t *c0,
                     int8_t *h_final, int16_t *c_final, void *scratch)
{{
    uint32_t *xe = (uint32_t *)scratch;
    uint32_t *he = xe + {px};
    int16_t *c = (int16_t *)(he + {dense_pairs(h)});
    for (int b = 0; b < {batch}; b++) {{
        const int8_t *hp = h0 + b * {h};
        memcpy(c, c0 + b * {h}, {2 * h}u);
        edgenn_fc_widen_s8_dsp(hp, he, {h});
        for (int t = 0; t < {steps}; t++) {{
            edgenn_fc_widen_s8_dsp(x + {offset(tm, batch, steps, n_input)}, xe, {n_input});
            int8_t *yt = y + {offset(tm, batch, steps, h)};
            @P@_step(xe, he, c, yt);
            edgenn_fc_widen_s8_dsp(yt, he, {h});
            hp = yt;
        }}
        if (h_final != NULL) {{
            memcpy(h_final + b * {h}, hp, {h}u);
        }}
        if (c_final != NULL) {{
            memcpy(c_final + b * {h}, c, {2 * h}u);
        }}
    }}
}}
"""


_accepts = record_matcher((DType.INT8,), lambda node, graph: _check(node, _layer(node, graph)))


class GeneratedLstmS8:
    """int8 LSTM with one packed weight stream and generated 4-row SMLAD passes per unit."""

    op = "LSTM"
    priority = 30
    name = "edgenn_lstm_s8_gen_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_dsp and _accepts(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        layer = _layer(node, graph)
        _check(node, layer)
        batch, steps, n_input = sequence_dims(graph.tensor(node.inputs[0]), layer.time_major)
        h = layer.n_cell
        px, ph = dense_pairs(n_input), dense_pairs(h)
        triples = _triples(layer)
        arrays: list[CArray] = [CArray("w", "uint32_t", _weights(layer, triples))]
        h0 = const_operand(node, graph, LSTM_INDEX["output_state"], arrays)
        c0 = const_operand(node, graph, LSTM_INDEX["cell_state"], arrays)
        finals = (Buf("out", 1), Buf("out", 2)) if layer.extra_outputs else (NULL, NULL)
        code = (_step_code(layer, px, ph, triples) + "\n"
                + _sequence_code(layer, batch, steps, n_input, px))
        scratch = 4 * (px + ph) + 2 * h
        return KernelCall(
            call=generated("lstm", self.name, IN0, OUT0, h0, c0, *finals, SCRATCH),
            sources=("edgenn_fc_widen_s8_dsp.c", "edgenn_curves_s16.h",
                     "edgenn_sigmoid_table.h"),
            arrays=tuple(arrays), code=code, scratch_bytes=(scratch + 15) // 16 * 16,
            # why safe: row b's state is read (widened / copied to scratch) before its
            # steps run, and its final state is written after them, at the same offsets
            state_in_place=True,
            comment=f"LSTM {steps} steps x {batch} rows, {n_input} -> {h}, generated SMLAD")


register_kernel(GeneratedLstmS8())
