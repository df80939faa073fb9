"""Fast int8 depthwise Conv2D on DSP cores (Cortex-M4/M7), int8 weights in flash.

Layout. NHWC interleaves channels, but a depthwise output needs its own channel only, and
SMLAD (two 16x16 products into one accumulator) needs two taps of the SAME channel in one
register. So the layer runs channel by channel: the channel's input plane is gathered into an
int16 scratch plane (rows ``PW`` entries apart) whose border holds the input zero point. Then
one aligned 32-bit load is a pair of horizontally adjacent inputs ``(x[a], x[a+1])`` and

* a tap pair (kx, kx+1) of an output whose window starts on an even column is one SMLAD;
* an output starting on an odd column pairs (kx+1, kx+2) and takes its first tap with one
  SMLATB (top half of the word); odd tap counts leave one SMLABx per row.

Per step the generated code computes ``NO`` (4 or 6; a whole row of 5-6) neighbouring outputs of
one row: for a 3x3 stride-1 kernel a row of taps is 3 loads (``x0..x5``), 2 weight registers
``(w0, w1)``, ``(w1, w2)`` and 8 multiplies for 12 MACs; neighbouring windows share the loads.
Padding is the plane's border (the input zero point, whose products cancel the folded bias
``bias - in_zp * sum(w)`` exactly), so border pixels run the same code: no bounds checks.
On the M4 the steps of mode 3 are inline asm scheduled by the generator (loads grouped so they
pipeline, bias added by the first multiply, two steps a loop trip): 3x3 stride 1 is ~57
cycles for 36 MACs. Two channels are gathered at once (LDRH of channels c, c+1, SXTB16 and
SXTB16 ROR 8: ~1.9 cycles an input) into two planes when both fit in ``MAX_PLANE_BYTES``.

Weights stay int8 in flash ([Cout][KH*KW]); for each channel the generator's code widens them
into the pair registers the loop reads (``dwk_wpair``, constant indices). Requantization:

* mode 3 "uniform shift" (when proven): TFLite's result is
  ``floor((2 acc m + 2^31 + half 2^32) / 2^(32+r))`` (nested floors); scaling the channel's
  weights and bias by ``2^(1+d)``, ``d = R - r >= 1`` with one ``R`` for the layer, gives
  ``SSAT(SMMLA(acc', m, 2^(d-1) + half 2^d) >> R)`` with ``R`` an immediate: 3 cycles an
  output with the store. The rounding of negative values (TFLite rounds half away from zero)
  is dropped, which is exact only when ``out_zp <= act_min``: then every negative accumulator
  clamps to ``act_min`` either way. Conditions checked per layer (:func:`uniform_records`).
* modes 1/2: the doubled-accumulator SMMULR requantization of
  :func:`fast_common.fast_requant_mode` (weights doubled when widened);
* mode 0: TFLite's exact double rounding.

Flash: a channel's record is {bias, m} (int32) plus one int8 ``s`` (sc, r or TFLite's shift);
Ra / half are the same function of ``s`` for every channel of the layer and are rebuilt in
the channel setup (9 bytes a channel instead of 16). The layer's functions take the arrays as
parameters and are named by a hash of their text under an ``#ifndef``: layers of the same
shape and constants share one copy.

Steps: 6 outputs on rows of >= 12 (or a multiple of 6), the whole row on rows of 5-6, else
4 (see :func:`plan_layer`). The planes' zero-point borders are written once a layer (the
gathers rewrite only the interiors).

Orientation: a tall narrow map (KWS's 25x5) has rows of one step, each paying the row loop
and a remainder step. :func:`plan_layer` then plans the layer with H and W swapped (weights
[Cout, KW, KH]): the gather reads NHWC down the columns into a transposed plane, the steps
run along its long rows and store outputs one NHWC row apart (:attr:`Plan.px_out`). Chosen by
a per-channel cycle proxy (:func:`step_estimate`); the row-called members of fused chains keep
their rows.

Where the cycles go (3x3 stride 1, 6 outputs a step, measured ~14.3 cycles an output plus
~2 for the gather): 6 multiplies (a row of 3 taps is one SMLAD pair and one halfword
multiply; no pairing of 9 taps per output does better than 5 without a second plane layout),
3 of requantization and store, ~4 of loads (2 weight pairs and 4 input words per kernel row,
in groups limited by the 14 registers: 6 accumulators, row / wb / o / bias), ~1 of loop. Every
variant counted against it (two output rows a step, two output channels of a 1-channel layer
a step, weights in FP registers, channel pairs of NHWC words with SMLABB/SMLATT, 21-bit SWAR
digits with SMLAL) needs more registers than the core has or pays as much in extra gathers,
field extraction or weight reloads as it saves in multiplies.

Any kernel size, stride, dilation, padding, channel count and depth multiplier; the arrays
and loops are generated for the layer's shape (never a list of known shapes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Cast, generated
from edgenn.backends.cortexm.codesize import is_compact
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import i32, is_int8
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import (
    fast_requant_mode,
    quant_records,
)
from edgenn.backends.cortexm.kernels.read_channels import read_channels
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node
from edgenn.prepared.conv import ConvGeometry

MAX_PLANE_BYTES = 24 * 1024  # why: the plane is arena scratch; larger layers stay portable
MAX_TAPS = 64  # the tap loops are unrolled: bound the generated code
UNIFORM = 3  # requantization mode: one immediate shift for the layer (see the docstring)

# (output k, multiply, input word, weight register): multiply "d" is SMLAD, "bt" is SMLABT
# (bottom half of the input word times the top half of the weight register), and so on.
Op = tuple[int, str, int, int]
Reg = tuple[int | None, int | None]  # the kx of the low and high half of a weight register


@dataclass(frozen=True)
class RowCode:
    """How one row of taps of ``n`` neighbouring outputs maps to loads and multiplies."""

    regs: tuple[Reg, ...]
    ops: tuple[Op, ...]

    @property
    def words(self) -> list[int]:
        return sorted({op[2] for op in self.ops})


def row_code(kw: int, sx: int, dx: int, n: int) -> RowCode:
    """Pair the taps of a row: output k's tap j reads plane column ``k*sx + j*dx``.

    Two taps in the same aligned word (columns a, a+1 with a even) are one SMLAD against the
    weight register (w_j, w_j+1); any other tap is a single halfword multiply against a half
    of an existing register holding its weight (or of an extra register of single weights).
    """
    pairs: list[Reg] = []
    items: list[tuple[int, int, int, int, int | None]] = []  # k, word, x half, j, j2 (pair)
    for k in range(n):
        j = 0
        while j < kw:
            a = k * sx + j * dx
            if dx == 1 and j + 1 < kw and a % 2 == 0:
                if (j, j + 1) not in pairs:
                    pairs.append((j, j + 1))
                items.append((k, a // 2, 0, j, j + 1))
                j += 2
            else:
                items.append((k, a // 2, a % 2, j, None))
                j += 1
    regs: list[Reg] = list(pairs)

    def home(j: int) -> tuple[int, int] | None:
        for i, (lo, hi) in enumerate(regs):
            if lo == j:
                return i, 0
            if hi == j:
                return i, 1
        return None

    for _, _, _, j, j2 in items:  # single weights without a register: two per extra register
        if j2 is None and home(j) is None:
            if regs[len(pairs):] and regs[-1][1] is None:
                regs[-1] = (regs[-1][0], j)
            else:
                regs.append((j, None))
    ops: list[Op] = []
    for k, word, xh, j, j2 in items:
        if j2 is not None:
            ops.append((k, "d", word, regs.index((j, j2))))
        else:
            found = home(j)
            assert found is not None
            ops.append((k, "bt"[xh] + "bt"[found[1]], word, found[0]))
    return RowCode(tuple(regs), tuple(ops))


@dataclass(frozen=True)
class Plan:
    """The generated layer: plane geometry, outputs per step, row code, requantization."""

    p: ConvParams
    mult: int  # depth multiplier
    ph: int  # plane rows
    pw: int  # plane row length (int16 entries, even)
    no: int  # outputs per step
    rc: RowCode
    mode: int
    records: np.ndarray  # int32 [Cout, 4]
    big_r: int  # the uniform shift R (mode 3)
    planes: int  # channels gathered at once (2: LDRH pairs, when two planes fit)
    # the channels' set-up words (weight pairs, q1..q3) as a flash table instead of built per
    # call (:func:`setup_table`); for many small calls (the row members of fused chains)
    hoisted: bool = False
    # ``p`` is the layer with H and W swapped (:func:`transposed`): the plane holds the input
    # transposed, the steps run down the columns of the real layer (see :func:`plan_layer`)
    transposed: bool = False
    # the channels computed (depth multiplier 1), None: all; the others no reader observes
    # (:func:`read_channels.read_channels`) and are left unwritten
    chans: tuple[int, ...] | None = None

    @property
    def px_in(self) -> int:
        """Bytes between two input pixels adjacent along a plane row (NHWC)."""
        p = self.p
        return p.in_h * p.in_c if self.transposed else p.in_c

    @property
    def row_in(self) -> int:
        """Bytes between two input pixels adjacent along a plane column."""
        p = self.p
        return p.in_c if self.transposed else p.in_w * p.in_c

    @property
    def px_out(self) -> int:
        """Bytes between two outputs adjacent along an output row of the steps."""
        p = self.p
        return p.out_h * p.out_c if self.transposed else p.out_c

    @property
    def row_out(self) -> int:
        """Bytes between two outputs adjacent along an output column of the steps."""
        p = self.p
        return p.out_c if self.transposed else p.out_w * p.out_c

    @property
    def scratch_bytes(self) -> int:
        return self.planes * self.ph * self.pw * 2


def plane_shape(p: ConvGeometry) -> tuple[int, int]:
    """(rows, even row length) of the padded plane: every tap read and every input in it."""
    rows = max(p.pad_t + p.in_h, (p.out_h - 1) * p.stride_h + (p.k_h - 1) * p.dil_h + 1)
    # +2: the aligned word holding the last column may reach one entry further
    cols = max(p.pad_l + p.in_w, (p.out_w - 1) * p.stride_w + (p.k_w - 1) * p.dil_w + 2)
    return rows, cols + (cols & 1)


def uniform_records(p: ConvParams) -> tuple[np.ndarray, int] | None:
    """Mode-3 records {bias', m, Ra, sc} and R, or None when not proven exact.

    Channel c: r = -shift (>= 1), d = R - r with R = max r + 1, weights and folded bias scaled
    by 2^sc, sc = 1 + d; Ra = 2^(d-1) + half 2^d, half = 2^(r-1) + out_zp 2^r. Checks: the
    scaled weights fit int16; |acc'| < 2^31 (|x| <= 128, padding taps are the zero point);
    Ra + SMMLA's high product fits int32; R <= 31; act_max 127; out_zp <= act_min.
    """
    shift = np.asarray(p.shift, np.int64)
    if (shift.size == 0 or not np.all(shift <= -1) or p.act_max != 127
            or p.out_zp > p.act_min):
        return None
    r = -shift
    big_r = int(r.max()) + 1
    if big_r > 31:
        return None
    d = big_r - r
    sc = 1 + d
    w = p.w.reshape(p.w.shape[0], -1).astype(np.int64)
    wmax = np.abs(w).max(axis=1)
    if np.any((wmax << sc) > 32767) or np.any(((-w.min(axis=1)) << sc) > 32768):
        return None
    bias = fold_input_zero_point(p.bias, p.w, p.in_zp)
    bound = np.abs(bias) + 128 * np.abs(w).sum(axis=1)
    if np.any((bound << sc) >= 2**31):
        return None
    half = (np.int64(1) << (r - 1)) + (np.int64(p.out_zp) << r)
    ra = (np.int64(1) << (d - 1)) + (half << d)
    mult = np.asarray(p.mult, np.int64)
    high = (((bound << sc) * mult) >> 32) + 1
    if np.any(np.abs(ra) + high >= 2**31):
        return None
    rec = np.stack([bias << sc, mult, ra, sc], axis=1)
    return i32(rec), big_r


def transposed(p: ConvParams) -> ConvParams:
    """Layer ``p`` with its H and W axes swapped (input, output, kernel, strides, dilations,
    padding; weights [Cout, KW, KH, 1]); the same channels and quantization."""
    return replace(
        p, in_h=p.in_w, in_w=p.in_h, out_h=p.out_w, out_w=p.out_h, k_h=p.k_w, k_w=p.k_h,
        stride_h=p.stride_w, stride_w=p.stride_h, dil_h=p.dil_w, dil_w=p.dil_h,
        pad_t=p.pad_l, pad_l=p.pad_t, pad_b=p.pad_r, pad_r=p.pad_b,
        w=np.ascontiguousarray(p.w.transpose(0, 2, 1, 3)))


def step_estimate(plan: Plan) -> float:
    """Rough cycles of one channel's steps (a proxy to compare orientations, not a model):
    per output row ~10 of loop and pointer set-up; per step ~8 fixed (requantization
    constants, load-group first cycles, trip), per kernel row its weight loads and input
    words (~1.5 a word: the asm loads them in small groups); per output its multiplies and
    3 of requantization and store."""
    return steps_estimate(plan.p, plan.no, plan.rc)


def steps_estimate(p: ConvGeometry, no: int, rc: RowCode) -> float:
    """:func:`step_estimate` of layer ``p`` run ``no`` outputs a step by row code ``rc`` (the
    16x8 plane kernel's proxy too: its steps have the same structure)."""
    nsteps, rest = divmod(p.out_w, no)
    total = 0.0
    for n, count in ((no, nsteps), (rest, 1 if rest else 0)):
        ops = [op for op in rc.ops if op[0] < n]
        words = {op[2] for op in ops}
        regs = {op[3] for op in ops}
        total += count * (8 + p.k_h * (len(regs) + 1.5 * len(words) + len(ops)) + 3 * n)
    return p.out_h * (10 + total)


def plan_layer(p: ConvParams, allow_transpose: bool = True) -> Plan:
    """Choose outputs per step, pair the taps and the requantization for layer ``p``.

    Narrow rows (a row of one or two steps, much taller than wide: KWS's 25x5 maps) pay the
    per-row loop set-up and remainder steps on few outputs; the same layer with H and W
    swapped runs long rows of full steps, and its gather copies long rows too. The
    orientation with the smaller :func:`step_estimate` is taken (``allow_transpose``: the
    row-called members of fused chains keep rows, they are called per output row)."""
    plan = _plan_oriented(p)
    if allow_transpose and p.out_h > p.out_w and p.k_h * p.k_w > 1:
        flip = replace(_plan_oriented(transposed(p)), transposed=True)
        # why 0.95: the proxy is rough. Measured (3x3, emulator): 25x5x64 -3%, 31x6 stride 2
        # -12%, 12x6 -4.5%, 8x5 -4.5% (proxy 0.98: kept), 7x5 +6% (proxy 1.05: kept)
        if _fits(flip) and step_estimate(flip) < 0.95 * step_estimate(plan):
            return flip
    return plan


def _fits(plan: Plan) -> bool:
    """The transposed plan's byte offsets fit the gather's and the steps' immediates (and the
    plane the scratch bound)."""
    return plan.scratch_bytes // plan.planes <= MAX_PLANE_BYTES and (
        plan.no * 2 - 1) * plan.px_out <= 4095


def _plan_oriented(p: ConvParams) -> Plan:
    """:func:`plan_layer` for one orientation of the layer."""
    ph, pw = plane_shape(p)
    planes = 2 if p.in_c >= 2 and 2 * ph * pw * 2 <= MAX_PLANE_BYTES else 1
    # 4 outputs a step (gcc's C steps: 3, 5 or a whole narrow row spill more or share less)
    no = 4
    rc = row_code(p.k_w, p.stride_w, p.dil_w, no)
    while len(rc.regs) + len(rc.words) + no > 12 and no > 1:  # keep the step in registers
        no = min(no - 1, 4)
        rc = row_code(p.k_w, p.stride_w, p.dil_w, no)
    uni = uniform_records(p)
    if uni is not None:
        rec, big_r = uni
        plan = Plan(p, p.out_c // p.in_c, ph, pw, no, rc, UNIFORM, rec, big_r, planes)
    else:
        bias = fold_input_zero_point(p.bias, p.w, p.in_zp)
        mode = fast_requant_mode(p.w, bias, p.shift, p.mult, p.out_zp, p.act_min, p.act_max)
        # fast modes: the doubled bias goes with weights doubled when widened (sc = 1)
        rec = quant_records(bias, p.mult, p.shift, p.out_zp, mode).reshape(-1, 4)
        plan = Plan(p, p.out_c // p.in_c, ph, pw, no, rc, mode, rec, 0, planes)
    # the wider asm steps (modes 3 and 2, see _asm_ok) when they fit their registers
    if 4 < p.out_w <= 6:
        # a narrow row in one asm step (no 1- or 2-output remainder step)
        wide = replace(plan, no=p.out_w, rc=row_code(p.k_w, p.stride_w, p.dil_w, p.out_w))
        if _asm_ok(wide, wide.no):
            return wide
    if p.out_w >= 12 or (p.out_w > 6 and p.out_w % 6 == 0):
        # wide rows: 6 outputs a step when its asm fits (14 registers) both as the first
        # and the second step of a trip. Measured on 3x3 strides 1 and 2: 3-8% faster
        # than 4 (the weight loads and the load groups' first cycles amortise over 6)
        six = replace(plan, no=6, rc=row_code(p.k_w, p.stride_w, p.dil_w, 6))
        if _asm_ok(six, 6) and _asm_ok(six, 6, 1):
            return six
    return plan


def _requant(plan: Plan, acc: str) -> str:
    """C expression: the int8 output of accumulator ``acc`` (q1..q3: the channel's record)."""
    p = plan.p
    if plan.mode == UNIFORM:
        v = f"edgenn_ssat8(dwk_smmla({acc}, q1, q2) >> {plan.big_r})"
    elif plan.mode:
        v = f"edgenn_ssat8(edgenn_requant_doubled({acc}, q1, q2, q3))"
    else:
        return f"(int8_t)edgenn_requant_s32({acc}, q1, q2, {p.out_zp}, {p.act_min}, {p.act_max})"
    if p.act_min > -128:
        return f"(int8_t)dwk_max({v}, {p.act_min})"
    return f"(int8_t){v}"


def _step(plan: Plan, n: int) -> str:
    """C block: ``n`` outputs of one row from plane row pointer ``row`` to output ``o``."""
    p, rc = plan.p, plan.rc
    nr = len(rc.regs)
    lines = ["        {"]
    lines.append("            int32_t " + ", ".join(f"a{k} = bias" for k in range(n)) + ";")
    ops = [op for op in rc.ops if op[0] < n]
    words = sorted({op[2] for op in ops})
    regs = sorted({op[3] for op in ops})
    for ky in range(p.k_h):
        base = ky * p.dil_h * plan.pw
        lines.append("            {")
        lines.append("                const uint32_t " + ", ".join(
            f"w{r} = wb[{ky * nr + r}]" for r in regs) + ";")
        lines.append("                const uint32_t " + ", ".join(
            f"x{wd} = dwk_pair(row + {base + 2 * wd})" for wd in words) + ";")
        for k, kind, wd, r in ops:
            fn = "edgenn_smlad" if kind == "d" else f"dwk_smla{kind}"
            lines.append(f"                a{k} = {fn}(x{wd}, w{r}, a{k});")
        lines.append("            }")
    for k in range(n):
        lines.append(f"            o[{k * plan.px_out}] = {_requant(plan, f'a{k}')};")
    lines.append("        }")
    return "\n".join(lines)




def asm_regs(n: int) -> int:
    """Registers an asm step of ``n`` outputs may take (of r0-r12 and lr).

    Measured: 13 up to 5 outputs (with 14 gcc spills its loop state around the blocks and
    loses more than the extra input register gains); 14 for 6 (one input register more).
    """
    return 14 if n >= 6 else 13


def _asm_ok(plan: Plan, n: int, ahead: int = 0) -> bool:
    """The hand-scheduled step applies: mode 3 with SSAT's clamp only, immediates in range
    (``ahead`` more steps of ``plan.no`` outputs folded into the offsets)."""
    p, rc = plan.p, plan.rc
    # mode 2 too when out_zp == act_min == -128 (its rounding of negatives cannot matter then)
    if not (plan.mode == UNIFORM or (plan.mode == 2 and p.out_zp <= p.act_min)):
        return False
    if p.act_min != -128 or (ahead * plan.no + n - 1) * plan.px_out > 4095:
        return False
    last = max(op[2] for op in rc.ops)
    if ((p.k_h - 1) * p.dil_h * plan.pw + 2 * last + ahead * plan.no * p.stride_w) * 2 > 4095:
        return False
    temps = 2 if plan.mode == UNIFORM else 3  # the requantization's constants
    # accumulators, weight registers and >= 1 input word, row / wb / o / bias
    return n + max(len(rc.regs) + 1, temps) + 4 <= asm_regs(n)


def _step_asm(plan: Plan, n: int, ahead: int = 0) -> str:
    """The step of :func:`_step` as one inline-asm block (modes 3 and 2), scheduled by hand.

    why: gcc interleaves the loads with the multiplies (a load after a multiply costs 2 cycles,
    back-to-back loads 1) and spills accumulators of 4-5 outputs. Here each row loads its
    weight registers and as many input words as registers allow in one group, then runs its
    multiplies; the first multiply of each accumulator adds the bias (no MOVs); the
    requantization is SMMLA, SSAT with the layer's immediate shift, STRB (mode 3) or SMMLAR,
    ASR, SSAT, STRB (mode 2). Weights, then the channel's record (m, Ra / m, r, half) come
    from wb. ``ahead``: the step ``ahead`` steps of
    ``plan.no`` outputs after ``row`` / ``o``, folded into the immediate offsets.
    """
    p, rc = plan.p, plan.rc
    row_at = ahead * plan.no * p.stride_w * 2
    o_at = ahead * plan.no * plan.px_out
    nr = len(rc.regs)
    ops = [op for op in rc.ops if op[0] < n]
    regs = sorted({op[3] for op in ops})
    nx = asm_regs(n) - 4 - n - len(regs)  # registers for input words
    temps = len(regs) + nx  # >= 3 (checked by _asm_ok)
    asm: list[str] = []
    started: set[int] = set()
    for ky in range(p.k_h):
        base = ky * p.dil_h * plan.pw * 2 + row_at  # bytes
        wreg = {r: f"%[t{i}]" for i, r in enumerate(regs)}
        free = [f"%[t{i}]" for i in range(len(regs), temps)]
        order = sorted(ops, key=lambda op: op[2])
        loads = [f"ldr {wreg[r]}, [%[wb], #{4 * (ky * nr + r)}]" for r in regs]
        held: dict[int, str] = {}
        pending = sorted({op[2] for op in order})
        i = 0
        while i < len(order):
            word = order[i][2]
            if word not in held:
                # release words no remaining op needs, then load the next words as a group
                for wd in list(held):
                    if all(op[2] != wd for op in order[i:]):
                        free.append(held.pop(wd))
                while free and pending:
                    wd = pending.pop(0)
                    held[wd] = free.pop(0)
                    loads.append(f"ldr {held[wd]}, [%[row], #{base + 4 * wd}]")
                asm += loads
                loads = []
            k, kind, wd, r = order[i]
            acc_in = f"%[a{k}]" if k in started else "%[bias]"
            started.add(k)
            mnem = "smlad" if kind == "d" else f"smla{kind}"
            asm.append(f"{mnem} %[a{k}], {held[wd]}, {wreg[r]}, {acc_in}")
            i += 1
    m_at = 4 * p.k_h * nr
    if plan.mode == UNIFORM:
        asm += [f"ldr %[t0], [%[wb], #{m_at}]", f"ldr %[t1], [%[wb], #{m_at + 4}]"]
        asm += [f"smmla %[a{k}], %[a{k}], %[t0], %[t1]" for k in range(n)]
        asm += [f"ssat %[a{k}], #8, %[a{k}], asr #{plan.big_r}" for k in range(n)]
    else:
        # mode 2: (SMMULR(2 acc, m) + half) >> r, one SMMLAR; the per-channel shift r is a
        # register (t1), the sign correction is dropped (out_zp == act_min, see _asm_ok)
        asm += [f"ldr %[t{i}], [%[wb], #{m_at + 4 * i}]" for i in range(3)]
        asm += [f"smmlar %[a{k}], %[a{k}], %[t0], %[t2]" for k in range(n)]
        asm += [f"asr %[a{k}], %[a{k}], %[t1]" for k in range(n)]
        asm += [f"ssat %[a{k}], #8, %[a{k}]" for k in range(n)]
    asm += [f"strb %[a{k}], [%[o], #{o_at + k * plan.px_out}]" for k in range(n)]
    outs = [f'[a{k}] "=&r"(a{k})' for k in range(n)] + [
        f'[t{i}] "=&r"(t{i})' for i in range(temps)]
    body = "\n".join(f'                "{line}\\n\\t"' for line in asm)
    return (
        "        {\n"
        f"            int32_t {', '.join(f'a{k}' for k in range(n))};\n"
        f"            uint32_t {', '.join(f't{i}' for i in range(temps))};\n"
        "            __asm__ volatile(\n" + body + "\n"
        f"                : {', '.join(outs)}\n"
        '                : [row] "r"(row), [wb] "r"(wb), [o] "r"(o), [bias] "r"(bias)\n'
        '                : "memory");\n'
        "        }"
    )


def _step_any(plan: Plan, n: int) -> str:
    """The asm step on ARMv7E-M where it applies, else (and on hosts) the C step."""
    if not _asm_ok(plan, n):
        return _step(plan, n)
    return ("#if EDGENN_HAVE_DSP\n" + _step_asm(plan, n) + "\n#else\n" + _step(plan, n)
            + "\n#endif")


def _steps(plan: Plan) -> str:
    """C: one output row's steps (``row``, ``o`` at its start; they advance)."""
    p = plan.p
    nsteps, rest = divmod(p.out_w, plan.no)
    adv_row, adv_o = plan.no * p.stride_w, plan.no * plan.px_out
    out = ""
    # compact code: one step a trip (the paired trip doubles the step's code)
    if nsteps >= 2 and _asm_ok(plan, plan.no, 1) and not is_compact():
        # two steps a trip, the second one's offsets folded into its immediates: half the
        # loop overhead (add, add, cmp, taken branch) per step
        out += (f"            for (int s = 0; s < {nsteps // 2}; s++, row += {2 * adv_row}, "
                f"o += {2 * adv_o}) {{\n#if EDGENN_HAVE_DSP\n"
                + _step_asm(plan, plan.no) + "\n" + _step_asm(plan, plan.no, 1)
                + "\n#else\n" + _step(plan, plan.no) + f"\n        row += {adv_row}, "
                f"o += {adv_o};\n" + _step(plan, plan.no) + f"\n        row -= {adv_row}, "
                f"o -= {adv_o};\n#endif\n            }}\n")
        if nsteps % 2:
            out += (_step_any(plan, plan.no) + f"\n            row += {adv_row}, "
                    f"o += {adv_o};\n")
    elif nsteps:
        out += (f"            for (int s = 0; s < {nsteps}; s++, row += {adv_row}, "
                f"o += {adv_o})\n" + _step_any(plan, plan.no) + "\n")
    if rest:
        out += _step_any(plan, rest) + "\n"
    return out


def _gather1(p: ConvParams, pw: int, c: int, row: int) -> str:
    """C: one channel's plane from NHWC (src = in + c) into a plane interior (d0).

    Per two pixels: two LDRSB (grouped, they pipeline), one PKHBT, one STR. ``c`` / ``row``:
    the bytes between pixels along a plane row / column (:attr:`Plan.px_in`, ``row_in``).
    """
    w = p.in_w
    body = []
    for i in range(0, w - 1, 2):
        body.append(f"        edgenn_store32(d0 + {i}, dwk_pk(s[{i * c}], s[{(i + 1) * c}]));")
    if w % 2:
        body.append(f"        d0[{w - 1}] = s[{(w - 1) * c}];")
    return ("static void @F@_gather1(const int8_t *src, int16_t *d0)\n{\n"
            f"    for (int iy = 0; iy < {p.in_h}; iy++, src += {row}, d0 += {pw}) {{\n"
            "        const int8_t *s = src;\n" + "\n".join(body) + "\n    }\n}\n")


def _gather2(p: ConvParams, pw: int, c: int, row: int) -> str:
    """C: the planes of channels c, c+1 (src = in + c) into two plane interiors (d0, d1).

    Per two pixels: two LDRH (channels c, c+1 of each), one ORR, SXTB16 and SXTB16 ROR 8
    split them into the pairs (x_c[p], x_c[p+1]) and (x_c1[p], x_c1[p+1]), two STR: about
    1.9 cycles an input instead of ~5 for a byte loop. Rows of up to 48 pixels (16 in compact
    code) are unrolled. ``c`` / ``row`` as for :func:`_gather1`.
    """
    w = p.in_w
    # pixels per loop trip (even unless it is the whole row)
    # why 48: a whole row per trip saves the trip overhead (~6 cycles a 16-pixel trip: 14k
    # cycles on VWW for 0.8 KB); compact code keeps 16
    whole = 16 if is_compact() else 48
    chunk = w if w <= whole and (w - 1) * c <= 4095 else (16 if 15 * c <= 4095 else 8)

    def pair_c(i: int, ind: str) -> str:
        return (f"{ind}{{\n{ind}    const uint32_t v = dwk_ld16(s + {i * c}) | "
                f"(dwk_ld16(s + {(i + 1) * c}) << 16);\n"
                f"{ind}    edgenn_store32(d0 + {i}, edgenn_sxtb16(v));\n"
                f"{ind}    edgenn_store32(d1 + {i}, dwk_sxtb16_ror8(v));\n{ind}}}")

    def quad_asm(i: int, ind: str) -> str:
        # why asm: gcc puts each pair's stores between the loads; grouped, the four LDRH
        # pipeline (5 cycles) and no store is followed by a load: 15 cycles for 8 inputs
        lines = [f"ldrh %[t{j}], [%[s], #{(i + j) * c}]" for j in range(4)] + [
            "orr %[t0], %[t0], %[t1], lsl #16", "orr %[t2], %[t2], %[t3], lsl #16",
            "sxtb16 %[t1], %[t0]", "sxtb16 %[t0], %[t0], ror #8",
            "sxtb16 %[t3], %[t2]", "sxtb16 %[t2], %[t2], ror #8",
            f"str %[t1], [%[d0], #{2 * i}]", f"str %[t3], [%[d0], #{2 * i + 4}]",
            f"str %[t0], [%[d1], #{2 * i}]", f"str %[t2], [%[d1], #{2 * i + 4}]"]
        body = "\n".join(f'{ind}    "{line}\\n\\t"' for line in lines)
        return (f"{ind}{{\n{ind}    uint32_t t0, t1, t2, t3;\n{ind}    __asm__ volatile(\n"
                + body + f'\n{ind}        : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), '
                f'[t3] "=&r"(t3)\n{ind}        : [s] "r"(s), [d0] "r"(d0), [d1] "r"(d1)\n'
                f'{ind}        : "memory");\n{ind}}}')

    def pixels(n: int, ind: str) -> list[str]:
        out = []
        i = 0
        while i + 1 < n:
            if i + 3 < n and (i + 3) * c <= 4095 and 2 * i + 4 <= 4095:
                out.append(f"#if EDGENN_HAVE_DSP\n{quad_asm(i, ind)}\n#else\n{pair_c(i, ind)}\n"
                           f"{pair_c(i + 2, ind)}\n#endif")
                i += 4
            else:
                out.append(pair_c(i, ind))
                i += 2
        if n % 2:
            i = n - 1
            out.append(f"{ind}{{\n{ind}    const uint32_t v = dwk_ld16(s + {i * c});\n"
                       f"{ind}    d0[{i}] = (int16_t)edgenn_sxtb16(v);\n"
                       f"{ind}    d1[{i}] = (int16_t)dwk_sxtb16_ror8(v);\n{ind}}}")
        return out

    body = []
    loops, rest = divmod(w, chunk)
    if loops > 1:
        body.append(f"        for (int k = 0; k < {loops}; k++, s += {chunk * c}, d0 += {chunk}, "
                    f"d1 += {chunk}) {{")
        body += pixels(chunk, "            ")
        body.append("        }")
    else:
        body += pixels(chunk, "        ")
        if rest:
            body.append(f"        s += {chunk * c}, d0 += {chunk}, d1 += {chunk};")
    body += pixels(rest, "        ")
    return ("static void @F@_gather2(const int8_t *src, int16_t *p0, int16_t *p1)\n{\n"
            f"    for (int iy = 0; iy < {p.in_h}; iy++, src += {row}, p0 += {pw}, "
            f"p1 += {pw}) {{\n"
            "        const int8_t *s = src;\n        int16_t *d0 = p0, *d1 = p1;\n"
            + "\n".join(body) + "\n    }\n}\n")


def ra_base(plan: Plan) -> int:
    """Mode 3: the layer constant K of ``Ra = 2^(sc-2) + K`` (as uint32; sc = 1 + d).

    Ra = 2^(d-1) + half 2^d with half 2^d = 2^(R-1) + out_zp 2^R, the same for every
    channel, so Ra follows from the channel's ``sc`` (the sum wraps in uint32 to the proven
    int32 Ra).
    """
    return ((1 << (plan.big_r - 1)) + (plan.p.out_zp << plan.big_r)) & 0xFFFFFFFF


def _derived(plan: Plan, s: np.ndarray) -> tuple[np.ndarray, int]:
    """The record entry the C rebuilds from the int8 ``s`` (uint32 values) and its column."""
    if plan.mode == UNIFORM:
        return ((np.int64(1) << (s - 2)) + ra_base(plan)) & 0xFFFFFFFF, 2
    # modes 1/2: half = 2^(r-1) + out_zp 2^r (mode 0 reads no fourth entry)
    return ((np.int64(1) << (s - 1)) + (plan.p.out_zp << s)) & 0xFFFFFFFF, 3


def quant_arrays(plan: Plan) -> tuple[CArray, CArray]:
    """The flash records: ``quant`` {bias, m} (int32 [Cout, 2]) and ``s`` (int8 [Cout]).

    ``s`` is sc (mode 3), the right shift r (modes 1/2) or TFLite's shift (mode 0); the other
    record entries (Ra, half) are the same function of it for every channel and are rebuilt
    per channel (:func:`quant_regs`): 9 bytes a channel of flash instead of 16, for a few
    cycles a channel.
    """
    rec = plan.records
    col = 3 if plan.mode == UNIFORM else 2
    s = rec[:, col].astype(np.int64)
    assert np.all((s >= -128) & (s <= 127))
    if plan.mode:
        got, at = _derived(plan, s)
        assert np.array_equal(got, rec[:, at].astype(np.int64) & 0xFFFFFFFF)
    return (CArray("quant", "int32_t", np.ascontiguousarray(rec[:, :2])),
            CArray("s", "int8_t", s.astype(np.int8)))


def setup_table(plan: Plan) -> np.ndarray:
    """The per-channel words the channel set-up of :func:`_body` builds (uint32 [Cout, NW+3]):
    the KH x regs weight pairs (``dwk_wpair``: taps times ``2^sc``, low half first), then q1,
    q2, q3 as :func:`quant_regs` computes them. A plan with ``hoisted`` reads them from flash:
    4 loads a channel instead of ~90 cycles of widening, for 4 (NW+3) - KH KW - 1 more bytes
    of flash a channel."""
    p, rc = plan.p, plan.rc
    rec = plan.records
    s = rec[:, 3 if plan.mode == UNIFORM else 2].astype(np.int64)
    sc = s if plan.mode == UNIFORM else np.full_like(s, 0 if plan.mode == 0 else 1)
    f = np.int64(1) << sc
    wk = p.w.reshape(p.w.shape[0], -1).astype(np.int64)
    zero = np.zeros(wk.shape[0], dtype=np.int64)
    cols = []
    for ky in range(p.k_h):
        for lo, hi in rc.regs:
            lo_v = wk[:, ky * p.k_w + lo] if lo is not None else zero
            hi_v = wk[:, ky * p.k_w + hi] if hi is not None else zero
            cols.append(((lo_v * f) & 0xFFFF) | (((hi_v * f) & 0xFFFF) << 16))
    q1 = rec[:, 1].astype(np.int64)
    if plan.mode == UNIFORM:
        q2, q3 = _derived(plan, s)[0], zero
    elif plan.mode:
        q2, q3 = s, _derived(plan, s)[0]
    else:
        q2, q3 = s, zero
    cols += [q1, q2, q3]
    return (np.stack(cols, axis=1) & 0xFFFFFFFF).astype(np.uint32)


def quant_regs(plan: Plan) -> str:
    """C: ``bias, q1, q2, q3`` of the channel (q points at its record, ``s`` = @P@_s[oc])."""
    head = "        const int32_t bias = q[0], q1 = q[1];\n"
    if plan.mode == UNIFORM:
        return head + ("        const int32_t q2 = (int32_t)((1u << (s - 2)) + "
                       f"{ra_base(plan)}u), q3 = 0;\n")
    if plan.mode:
        zp = plan.p.out_zp & 0xFFFFFFFF
        return head + ("        const int32_t q2 = s, q3 = (int32_t)((1u << (s - 1)) + "
                       f"({zp}u << s));\n")
    return head + "        const int32_t q2 = s, q3 = 0;\n"


def _borders(plan: Plan, zp16: int) -> str:
    """C: the input zero point into the planes' borders, once a layer (the gathers rewrite
    the interiors only): whole top / bottom rows as words, the left / right strips of the
    interior rows as halfwords. why not the whole plane: a stride-2 plane is ~4x the
    outputs and filling it all cost ~5 cycles a word (12k cycles on a 48x48 layer)."""
    p, pw = plan.p, plan.pw
    size = plan.ph * pw
    bot0 = (p.pad_t + p.in_h) * pw  # even: pw is
    lines = ["    { /* the zero-point borders */",
             "        uint32_t *pz = (uint32_t *)(void *)plane;", "        (void)pz;"]
    for k in range(plan.planes):
        for a, b in ((k * size, k * size + p.pad_t * pw), (k * size + bot0, (k + 1) * size)):
            if b > a:
                lines.append(f"        for (int i = {a // 2}; i < {b // 2}; i++) pz[i] = {zp16}u;")
    right0 = p.pad_l + p.in_w
    strips = [(0, p.pad_l), (right0, pw)]
    if p.in_h and (p.pad_l or pw > right0):
        lines.append(f"        for (int y = 0; y < {p.in_h}; y++) {{")
        lines.append(f"            int16_t *r = plane + {p.pad_t * pw} + y * {pw};")
        zp = f"(int16_t){p.in_zp}"
        for k in range(plan.planes):
            for a, b in strips:
                a, b = a + k * size, b + k * size
                if b - a > 4:
                    lines.append(f"            for (int j = {a}; j < {b}; j++) r[j] = {zp};")
                else:
                    lines += [f"            r[{j}] = {zp};" for j in range(a, b)]
        lines.append("        }")
    return "\n".join(lines) + "\n    }\n"


def _body(plan: Plan) -> str:
    """The layer's functions (``@F@_`` names, the flash arrays as parameters): gathers,
    per-channel weight widening and the unrolled steps."""
    p, rc = plan.p, plan.rc
    pw = plan.pw
    sc = {UNIFORM: "s", 0: "0"}.get(plan.mode, "1")
    taps = p.k_h * p.k_w
    wide = []
    for ky in range(p.k_h):
        for r, (lo, hi) in enumerate(rc.regs):
            lo_s = f"wk[{ky * p.k_w + lo}]" if lo is not None else "0"
            hi_s = f"wk[{ky * p.k_w + hi}]" if hi is not None else "0"
            wide.append(f"        wb[{ky * len(rc.regs) + r}] = dwk_wpair({lo_s}, {hi_s}, sc);")
    zp16 = (p.in_zp & 0xFFFF) * 0x10001
    steps = _steps(plan)
    nw = p.k_h * len(rc.regs)
    wtype = "uint32_t" if plan.hoisted else "int8_t"
    if plan.hoisted:  # the words :func:`setup_table` computed: a pointer, 4 loads
        setup = (f"        const uint32_t *wb = wts + {nw + 3} * oc;\n"
                 "        const int32_t bias = quant[2 * oc];\n"
                 f"        const int32_t q1 = (int32_t)wb[{nw}], q2 = (int32_t)wb[{nw + 1}], "
                 f"q3 = (int32_t)wb[{nw + 2}];\n"
                 "        (void)q1;\n        (void)q2;\n        (void)q3;\n")
    else:
        setup = (
            "        const int32_t *q = quant + 2 * oc, s = ss[oc];\n"
            f"        const int8_t *wk = wts + {taps} * oc;\n"
            f"        const int32_t sc = {sc};\n"
            f"        uint32_t wb[{nw + 3}];\n"
            + "\n".join(wide) + "\n"
            + quant_regs(plan) +
            f"        wb[{nw}] = (uint32_t)q1; /* the record: for the asm steps */\n"
            f"        wb[{nw + 1}] = (uint32_t)q2;\n"
            f"        wb[{nw + 2}] = (uint32_t)q3;\n"
            "        (void)q3;\n")
    chan = (
        "/* the depth-multiplier output channels of input channel c from its plane */\n"
        # why noipa, not noinline: arm-none-eabi-gcc 12.2 -O2 deleted the call of an IPA-CP
        # clone of this function as dead (1x1 kernel, one channel, 2-wide rows: outputs never
        # written); noipa keeps gcc's interprocedural passes off it
        "static void __attribute__((noipa)) @F@_chan(int c, const int16_t *plane, "
        f"int8_t *out,\n    const {wtype} *wts, const int32_t *quant, const int8_t *ss)\n{{\n"
        + ("    (void)ss;\n" if plan.hoisted else "")
        + f"    for (int m = 0; m < {plan.mult}; m++) {{\n"
        f"        const int oc = c * {plan.mult} + m;\n"
        + setup +
        f"        for (int oy = 0; oy < {p.out_h}; oy++) {{\n"
        f"            const int16_t *row = plane + oy * {p.stride_h * pw};\n"
        f"            int8_t *o = out + oc + oy * {plan.row_out};\n"
        + steps.replace("\n    ", "\n") + "        }\n    }\n}\n"
    )
    off = p.pad_t * pw + p.pad_l
    size = plan.ph * pw
    if plan.chans is not None:
        loop, gathers = _chan_list_loop(plan, off, size)
    elif plan.planes == 2:
        loop = (f"    for (int c = 0; c + 1 < {p.in_c}; c += 2) {{\n"
                f"        @F@_gather2(in + c, plane + {off}, plane + {size + off});\n"
                f"        @F@_chan(c, plane, out, wts, quant, ss);\n"
                f"        @F@_chan(c + 1, plane + {size}, out, wts, quant, ss);\n    }}\n")
        if p.in_c % 2:
            loop += (f"    @F@_gather1(in + {p.in_c - 1}, plane + {off});\n"
                     f"    @F@_chan({p.in_c - 1}, plane, out, wts, quant, ss);\n")
        g = (pw, plan.px_in, plan.row_in)
        gathers = _gather2(p, *g) + (_gather1(p, *g) if p.in_c % 2 else "")
    else:
        loop = (f"    for (int c = 0; c < {p.in_c}; c++) {{\n"
                f"        @F@_gather1(in + c, plane + {off});\n"
                f"        @F@_chan(c, plane, out, wts, quant, ss);\n    }}\n")
        gathers = _gather1(p, pw, plan.px_in, plan.row_in)
    return (
        gathers + chan
        + "static void __attribute__((noinline)) @F@_dw(const int8_t *in, int8_t *out, "
        f"int16_t *plane,\n    const {wtype} *wts, const int32_t *quant, const int8_t *ss)\n{{\n"
        + _borders(plan, zp16) + loop + "}\n"
    )


def _chan_list_loop(plan: Plan, off: int, size: int) -> tuple[str, str]:
    """The channel loop over ``plan.chans`` only: the pairs (c, c + 1), c even, both
    computed, gathered at once as in the full loop; every other computed channel alone."""
    p = plan.p
    live = set(plan.chans or ())
    two = [c for c in range(0, p.in_c - 1, 2) if c in live and c + 1 in live] \
        if plan.planes == 2 else []
    paired = {c for c0 in two for c in (c0, c0 + 1)}
    one = sorted(live - paired)
    g = (plan.pw, plan.px_in, plan.row_in)
    loop, gathers = "", ""
    if two:
        loop += (f"    static const uint16_t two[{len(two)}] = {{{', '.join(map(str, two))}}};\n"
                 f"    for (int i = 0; i < {len(two)}; i++) {{\n        const int c = two[i];\n"
                 f"        @F@_gather2(in + c, plane + {off}, plane + {size + off});\n"
                 f"        @F@_chan(c, plane, out, wts, quant, ss);\n"
                 f"        @F@_chan(c + 1, plane + {size}, out, wts, quant, ss);\n    }}\n")
        gathers += _gather2(p, *g)
    if one:
        loop += (f"    static const uint16_t one[{len(one)}] = {{{', '.join(map(str, one))}}};\n"
                 f"    for (int i = 0; i < {len(one)}; i++) {{\n        const int c = one[i];\n"
                 f"        @F@_gather1(in + c, plane + {off});\n"
                 f"        @F@_chan(c, plane, out, wts, quant, ss);\n    }}\n")
        gathers += _gather1(p, *g)
    if not live:
        loop += ("    (void)in; (void)out; (void)wts; (void)quant; (void)ss;\n"
                 "    (void)@F@_chan;\n")
    return loop, gathers


def generate(plan: Plan) -> str:
    """The layer's C: its functions under a name derived from their text, and ``@P@_dw``.

    why: layers of the same shape and constants (VWW's five 6x6x128 ones) emit the same
    functions; the ``#ifndef`` keeps one copy in model.c, the per-layer ``@P@_dw`` (inlined)
    passes its own weights and records. Costs nothing per channel (the arrays were literal
    pool constants, now registers) and saves the duplicates' flash.
    """
    body = _body(plan)
    tag = "dwk_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = tag.upper()
    return (f"#ifndef {guard}\n#define {guard}\n" + body.replace("@F@", tag) + "#endif\n"
            "static void @P@_dw(const int8_t *in, int8_t *out, int16_t *plane)\n{\n"
            f"    {tag}_dw(in, out, plane, @P@_w, @P@_quant, @P@_s);\n}}\n")


def dw_supported(node: Node, graph: Graph) -> bool:
    """int8 depthwise (groups == Cin, weights [Cin*M, KH, KW, 1]) whose plane fits."""
    if not is_int8(node, graph) or len(node.inputs) < 2:
        return False
    x = graph.tensor(node.inputs[0])
    w = graph.tensor(node.inputs[1])
    y = graph.tensor(node.outputs[0])
    cin = x.shape[3]
    # one input channel per group: a depthwise conv (is_depthwise), and also a one-channel
    # conv (groups 1, Cin 1), which is the depthwise conv of multiplier Cout
    if int(node.attr("groups", 1)) != cin or w.shape[3] != 1:
        return False
    if w.shape[0] != y.shape[3] or y.shape[3] % cin or w.data is None:
        return False
    if w.shape[1] * w.shape[2] > MAX_TAPS or x.shape[0] != 1:
        return False
    p = conv_params(node, graph)
    ph, pw = plane_shape(p)
    return ph * pw * 2 <= MAX_PLANE_BYTES


# the largest flash set-up table of a row-called member (:meth:`DepthwiseConv.prepare_rows`)
MAX_SETUP_TABLE_BYTES = 8192


class DepthwiseConv:
    """Depthwise conv per channel on an int16 zero-point-bordered plane, SMLAD tap pairs."""

    op = "Conv2D"
    priority = 30  # above the portable edgenn_dwconv_s8 (0)
    name = "edgenn_dwconv_s8_gen_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return core.has_dsp and dw_supported(node, graph)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        return self._call(node, graph, hoisted=False, rows=False)

    def prepare_rows(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        """The kernel for a layer of a few rows called many times (a fused chain's member,
        ``fused_rows``): the channels' set-up words in flash (:func:`setup_table`), so a call
        pays 4 loads a channel instead of rebuilding them. why the bound: the table is ~4x the
        int8 weights' flash; a many-channel layer keeps the per-call set-up instead."""
        p = conv_params(node, graph)
        plan = plan_layer(p, allow_transpose=False)
        table = p.out_c * (p.k_h * len(plan.rc.regs) + 3) * 4
        return self._call(node, graph, hoisted=table <= MAX_SETUP_TABLE_BYTES, rows=True)

    def _call(self, node: Node, graph: Graph, hoisted: bool, rows: bool) -> KernelCall:
        """``rows``: called per output row (a fused chain's member): never transposed."""
        p = conv_params(node, graph)
        plan = replace(plan_layer(p, allow_transpose=not rows), hoisted=hoisted)
        if not rows and plan.mult == 1:  # a row member's reader is its chain, not the graph
            plan = replace(plan, chans=read_channels(node, graph))
        w = setup_table(plan) if hoisted else plan.p.w.reshape(p.w.shape[0], -1)
        return KernelCall(
            call=generated("dw", self.name, IN0, OUT0, Cast("int16_t *", SCRATCH)),
            sources=("edgenn_dwconv_s8_gen_dsp.h",),
            arrays=(CArray("w", "uint32_t" if hoisted else "int8_t", w), *quant_arrays(plan)),
            scratch_bytes=plan.scratch_bytes,
            code=generate(plan),
            # why: channel c's input is gathered into the plane before any output byte of
            # channel c is stored, and output (pixel, c) is the only byte written at that
            # offset: with depth multiplier 1 the output may overwrite the input
            in_place=plan.mult == 1,
            comment=f"{p.in_h}x{p.in_w}x{p.in_c} -> {p.out_h}x{p.out_w}x{p.out_c}, "
            f"{p.k_h}x{p.k_w} stride {p.stride_h},{p.stride_w}, depthwise int16 plane, "
            f"{plan.no} outputs a step{' down the columns' if plan.transposed else ''} "
            f"(requant mode {plan.mode})"
            + ("" if plan.chans is None else
               f", {len(plan.chans)} of {p.out_c} channels read downstream"),
        )


register_kernel(DepthwiseConv())
