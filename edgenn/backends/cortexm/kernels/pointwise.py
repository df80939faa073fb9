"""Fast int8 pointwise (1x1) Conv2D for DSP cores: generated, shape-specialised SMLAD code.

A 1x1 convolution is a GEMM: out[p, c] = bias[c] + sum_k x[p, k] * w[c, k]. Per pair of output
pixels the two input pixels are widened once (run time, ``c/edgenn_conv_s8_1x1_dsp.h``) into
doubled int16 pairs in SXTB16 order (a word b0 b1 b2 b3 gives (b0, b2), (b1, b3)), interleaved
pixel by pixel in a small scratch. Then every group of 4 output channels runs a block of 2
pixels x 4 channels = 8 accumulators, emitted here as inline assembly unrolled over this layer's
Cin (any Cin: the pair list covers tails), followed by the requantization and the byte stores.

Weights stay int8 (one word = 4 weights) and are split in registers with ONE SXTB16 per word:
a word holds, for a k-pair (k0, k1) and a channel pair (A, B), the bytes
``(wA[k0] + 128, wB[k0], wA[k1] + 128, wB[k1])``. SMLAD with the raw word multiplies the
pixel pair by the halfwords ``256 * wB + (wA + 128)`` (exact signed 16-bit values), SMLAD with
``SXTB16(word, ROR 8)`` by ``wB`` alone, so

    accA = 256 * dotB + dotA + 128 * sum(x),     accB = dotB,
    dotA = accA - (accB << 8) - 128 * sum(x)     (int32 wrap-around cancels exactly)

The per-pixel term 128 * sum(x) is computed while widening; it and the biases enter the
accumulators' initial values (``KA = bias_A + 256 * bias_B``). Per k-pair: 4 loads + 2 SXTB16
+ 8 SMLAD = 15 cycles for 16 MACs; 14 registers (8 accumulators, 2 pointers, 4 temporaries).

Odd pixel counts: the pairs cover all pixels but the last, which runs alone in 1 x 4 blocks
(pixel slot 0 of the scratch, the same stream): per k-pair 3 loads + 2 SXTB16 + 4 SMLAD =
10 cycles for 8 MACs, where a pair overlapping the previous one would cost 15 and recompute a
pixel (a 3 x 3 map: 4.67 instead of 5 pair passes). Exact-requantization layers keep the
overlapping pair.

Everything else is decided here and streamed from one flash array, in the order the block
reads it: per channel group [KA0, KB1, KA2, KB3], the weight words, then per channel the
requantization record {mult, half[, shift]}:

* fast requantization (``fast_common.fast_requant_mode``, inputs doubled instead of weights):
  ``SMMLAR(acc2, mult, half) >> r`` then SSAT, where half = 2^(r-1) + (out_zp << r); the
  ``(h < 0)`` rounding correction is dropped when act_min >= out_zp (it can only move values
  that clamp to act_min anyway);
* channels whose weights are all zero are constants (folded at generation time with the
  reference arithmetic: mult 0, half = value << r) so huge dead-channel biases cannot block the
  fast path;
* small layers unroll the channel groups too (shifts become SSAT immediates, no loop); large
  ones loop over groups inside the assembly (two groups per iteration when blocks are short)
  with the shift loaded per channel;
* otherwise (mode 0) the block hands the doubled accumulators to TFLite's exact double
  rounding in C.

Dead channels (the sparse form, ``_sparse``; fast modes only). An output channel whose
weights are all zero is a constant (its value, the reference arithmetic on the folded bias,
is known at generation time), and an input channel that no other channel weighs is never
needed: both are properties of the layer's constants. Trained networks have many of them
(VWW's MobileNetV1: 71-234 of the 128-256 channels of each late pointwise layer, and
correspondingly unread inputs). When the estimate (``_pair_cycles``) is below SPARSE_GAIN of
the dense form's, the blocks run only the live channels (``kout``) over only the read inputs
(``kin``, gathered pair by pair: two LDRSB + PKHBT + SADD16 into the same doubled pairs, so
the block and its correction term are unchanged), and per pixel pair the constants are one
copy of a two-pixel template (``tpl``) that the live stores then overwrite: unrolled blocks
store at each channel's own offset, looped ones into a staging area scattered afterwards.
Both the stream and the code shrink with the skipped channels.

Code size is bounded: k-pairs beyond KP_UNROLL run as a loop over chunks, the widening loops
over chunks of words for large Cin, the unrolled-groups form is used only under
UNROLL_BUDGET instructions, and layers of identical shape share one function (see
:func:`generate_code`).

Compact mode (``codesize.is_compact()``, chosen by the flash policy when the default build
exceeds the flash budget; fast requantization modes only, exact layers keep their form): no
per-layer code at all. Every layer calls ``pwc_run_<variant>`` with its shape as arguments;
a variant (mode, sign, clamp; plus (Cin, Cout) for narrow layers) is defined once in model.c
(include-guarded text) and shared by all its layers:

* general variant: a generic widening loop (4 words per pass), then per channel group the
  same 2x4 block, its k-pairs run as a loop of C_CHUNK pairs entered part-way (a computed
  ``ldr pc``: every k-pair block is 56 bytes of wide instructions, so the first pass skips
  j0 = (-kp) mod C_CHUNK blocks and the scratch pointer starts j0 pairs early); pixel b's
  outputs through a second pointer; records shrink to {mult, h}: h = 2^(r-1) + (out_zp << r)
  = (2 out_zp + 1) << (r-1), so r - 1 is h's lowest set bit (RBIT + CLZ), no shift word
  (constant channels store h + 1, which keeps the value and marks r = 1);
* narrow layers (kp <= C_STRAIGHT_KP, Cout >= 4): a variant specialised to (Cin, Cout) with
  straight k-pairs, the Cin-specialised widening and immediate store offsets, records
  {mult, half, shift} (the per-channel work dominates these layers);
* the last Cout % 4 channels run as one more group into a staging area, copied out in C;
* general variant, odd pixel count: the last pixel through ``pwc_one_<variant>`` (1 x 4
  blocks, k-pairs in a loop of ONE_UNROLL after the remainder, records {mult, h}).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier
from edgenn.backends.cortexm.ccall import (
    IN0,
    OUT0,
    SCRATCH,
    Array,
    Cast,
    CCall,
    Generated,
    c_call,
    generated,
)
from edgenn.backends.cortexm.codesize import is_compact
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import dsp_dense_conv, fast_requant_mode
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import EdgennError
from edgenn.ir import Graph, Node

MAX_CIN = 1016  # pixel-pair scratch addressed with 12-bit immediates: 8 + 8 * pairs <= 4095
MAX_COUT = 4088  # second pixel's stores: strb [op, #Cout + c], 12-bit immediate
UNROLL_BUDGET = 1600  # instructions of unrolled channel-group code allowed per layer
KP_UNROLL = 64  # k-pairs emitted straight; beyond, a loop over chunks of KP_CHUNK k-pairs
KP_CHUNK = 32  # (7 cycles of loop test per 480: code size stays bounded for large Cin)
ONE_UNROLL = 8  # k-pairs per pass of the single-pixel blocks' loops
ONE_STRAIGHT = 16  # fast form: up to this many k-pairs of a single-pixel block straight
TWO_GROUP_KP = 32  # looped groups: two groups per iteration when blocks are this small
COMPACT_KEEP_UNROLLED = 500  # compact mode keeps unrolled layers up to this many instructions
FORCE_MODE: int | None = None  # tests: cap the requantization mode (0 = exact)
GROUP = 4

ACC = ("A0a", "B1a", "A2a", "B3a", "A0b", "B1b", "A2b", "B3b")


def pair_plan(cin: int) -> list[tuple[int, int]]:
    """Input index pairs (k0, k1) of the widened pixel, -1 for an absent (zero) element."""
    pairs: list[tuple[int, int]] = []
    nq, rem = divmod(cin, 4)
    for q in range(nq):
        pairs += [(4 * q, 4 * q + 2), (4 * q + 1, 4 * q + 3)]
    b = 4 * nq
    if rem == 1:
        pairs.append((b, -1))
    elif rem == 2:
        pairs += [(b, -1), (b + 1, -1)]
    elif rem == 3:
        pairs += [(b, b + 2), (b + 1, -1)]
    return pairs


@dataclass(frozen=True)
class Plan:
    """What the generator decided for one layer."""

    p: ConvParams
    mode: int  # 0 exact, 1 fast + clamp at act_min, 2 fast (SSAT alone)
    const: np.ndarray  # bool per channel: all-zero weights, output folded to a constant
    bias: np.ndarray  # int64 per channel: the bias the block adds (0 / folded constants)
    mult: np.ndarray
    shift: np.ndarray  # fast: right shift r >= 1; exact: TFLite shift
    half: np.ndarray
    sign: bool  # the (h < 0) rounding correction is needed
    unroll: bool  # channel groups unrolled (immediate shifts)
    compact: bool = False  # shared compact functions (codesize.is_compact), fast modes only
    # sparse form (fast modes, see "Dead channels" in the module docstring): the input
    # channels the block reads (None: every one, widened by words) and the output channels
    # it computes (None: every one); the others are constants, copied from ``tpl``
    kin: tuple[int, ...] | None = None
    kout: tuple[int, ...] | None = None
    tpl: np.ndarray | None = None  # int8 [out_c]: every channel's constant output

    @property
    def pairs(self) -> list[tuple[int, int]]:
        """The (k0, k1) input indices of the widened pixel's pairs, -1 for an absent one."""
        if self.kin is None:
            return pair_plan(self.p.in_c)
        ks = list(self.kin)
        return [(ks[j], ks[j + 1] if j + 1 < len(ks) else -1) for j in range(0, len(ks), 2)]

    @property
    def kp(self) -> int:
        return len(self.pairs)

    @property
    def chans(self) -> tuple[int, ...]:
        """The output channels the blocks compute, in block order."""
        return tuple(range(self.p.out_c)) if self.kout is None else self.kout

    @property
    def nout(self) -> int:
        return len(self.chans)

    @property
    def groups(self) -> int:
        return -(-self.nout // GROUP)

    @property
    def staged(self) -> bool:
        """Looped sparse groups store into a staging area, scattered to their channels
        afterwards (an unrolled block stores at each channel's own offset)."""
        return self.kout is not None and not self.unroll

    @property
    def bstride(self) -> int:
        """Pixel b's store offset from pixel a's."""
        return self.nout if self.staged else self.p.out_c

    def off(self, j: int) -> int:
        """Pixel a's store offset of computed channel ``j`` from the block's output base."""
        return j if self.staged else self.chans[j]


def _exact_out(p: ConvParams, acc: np.ndarray) -> np.ndarray:
    v = multiply_by_quantized_multiplier(acc, p.mult.astype(np.int64), p.shift.astype(np.int64))
    return np.clip(np.asarray(v, np.int64) + p.out_zp, p.act_min, p.act_max)


def _bound_ok(w: np.ndarray, bias: np.ndarray) -> bool:
    """|2 acc| < 2^31 for every int8 input (the doubled accumulator cannot wrap)."""
    w_abs = np.abs(w.reshape(w.shape[0], -1).astype(np.int64)).sum(axis=1)
    return bool(np.all(2 * (np.abs(bias) + 128 * w_abs) < 2**31))


def make_plan(p: ConvParams, force_mode: int | None = None,
              unroll: bool | None = None, compact: bool = False) -> Plan | None:
    """The layer's plan, or None when the doubled accumulator could overflow."""
    cout = p.out_c
    w = p.w.reshape(cout, -1).astype(np.int64)
    const = ~np.any(w != 0, axis=1)
    folded = np.asarray(p.bias_folded, np.int64)
    cval = _exact_out(p, folded)  # the constant channels' outputs (weights all zero)
    live = ~const
    if p.act_max != 127:
        mode = 0
    elif live.any():
        mode = fast_requant_mode(p.w[live], folded[live], p.shift[live], p.mult[live],
                                 p.out_zp, p.act_min, p.act_max)
    else:
        mode = 2 if p.act_min == -128 else 1
    if force_mode is not None:
        mode = min(mode, force_mode)
    mult = np.asarray(p.mult, np.int64).copy()
    shift = np.asarray(p.shift, np.int64).copy()
    bias = np.where(const, 0, folded)
    if mode:
        r = np.where(const, 1, -shift)
        mult[const] = 0
        half = np.where(const, cval << 1, (1 << (r - 1)) + (p.out_zp << r))
        shift = r
    else:
        # exact: a constant channel is acc = value - zp with mult 0.5 (2^30) and shift 1
        bias = np.where(const, cval - p.out_zp, folded)
        mult[const] = 1 << 30
        shift[const] = 1
        half = np.zeros(cout, np.int64)
    if not _bound_ok(p.w, bias):
        return None
    kin, kout, tpl = (_sparse(p, w, const, cval.astype(np.int8), unroll)
                      if mode else (None, None, None))
    if kout is not None:
        compact = False  # a sparse layer's code is its own (and its stream far smaller)
    kp = len(pair_plan(p.in_c)) if kin is None else -(-len(kin) // 2)
    nout = cout if kout is None else len(kout)
    groups = -(-nout // GROUP)
    if unroll is None:
        unroll = bool(mode) and groups * (50 + 14 * min(kp, KP_UNROLL)) <= UNROLL_BUDGET
    elif unroll and compact:
        compact = False  # an explicit unroll request wins
    if nout < GROUP:
        unroll = True  # no full group to loop over
    if 2 * cout + GROUP > 4095:
        unroll = False  # unrolled stores address out + 4g + Cout + c with 12-bit immediates
    # compact: exact layers keep their (looped C) form, and so do layers whose unrolled code
    # is about as small as a shared variant (the per-channel work dominates them)
    unrolled_size = groups * (50 + 14 * min(kp, KP_UNROLL))
    compact = compact and bool(mode) and unrolled_size > COMPACT_KEEP_UNROLLED
    if compact:
        unroll = False
    return Plan(p, mode, const, bias, mult, shift, half,
                sign=bool(mode) and p.act_min < p.out_zp, unroll=bool(unroll and mode),
                compact=compact, kin=kin, kout=kout, tpl=tpl)


SPARSE_GAIN = 0.9  # the sparse form is used when its estimate is below this share of dense
GATHER_MAX = 256  # input channels a gathered pixel may have (straight code per channel pair)


def _pair_cycles(p: ConvParams, kp: int, groups: int, gather: bool, tpl: bool,
                 scatter: int) -> float:
    """Estimated cycles per pixel pair (for choosing a form only): the blocks (15 per
    k-pair, ~60 of set-up and requantization), the widening of both pixels (words: ~10 per
    4 inputs; gathered bytes: ~7 per pair), the constants' copy and the staged scatter."""
    widen = 2 * 7 * kp if gather else 2 * 10 * -(-p.in_c // 4)
    return (groups * (15 * kp + 60) + widen + (p.out_c + 20 if tpl else 0)
            + 6 * scatter)


def _sparse(p: ConvParams, w: np.ndarray, const: np.ndarray, cval: np.ndarray,
            unroll: bool | None) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None,
                                          np.ndarray | None]:
    """(kin, kout, tpl) of the sparse form, or Nones when the dense form is estimated as fast.

    A channel whose weights are all zero is a constant; an input channel that no computed
    channel weighs is never read. Both are properties of the layer's constants, known here:
    the sparse form skips them (their MACs, their widening) and copies the constants."""
    live = ~const
    used = np.any(w[live] != 0, axis=0) if live.any() else np.zeros(p.in_c, bool)
    kin = tuple(int(k) for k in np.flatnonzero(used))
    kout = tuple(int(c) for c in np.flatnonzero(live))
    gather = len(kin) < p.in_c and len(kin) <= GATHER_MAX
    dead_out = len(kout) < p.out_c
    if not gather and not dead_out:
        return None, None, None
    kp_d, g_d = len(pair_plan(p.in_c)), -(-p.out_c // GROUP)
    kp_s = -(-len(kin) // 2) if gather else kp_d
    g_s = -(-len(kout) // GROUP)
    looped = (unroll is False or (unroll is None and g_s * (50 + 14 * min(kp_s, KP_UNROLL))
                                  > UNROLL_BUDGET)) and len(kout) >= GROUP
    dense = _pair_cycles(p, kp_d, g_d, False, False, 0)
    sparse = _pair_cycles(p, kp_s, g_s, gather, dead_out,
                          len(kout) if dead_out and looped else 0)
    if sparse >= SPARSE_GAIN * dense:
        return None, None, None
    return (kin if gather else None, kout if dead_out else None,
            cval if dead_out else None)


def _u32(v: int) -> int:
    return int(v) & 0xFFFFFFFF


def pack_stream(plan: Plan) -> np.ndarray:
    """uint32 words in the order the block reads them (see the module docstring)."""
    p = plan.p
    cout, cin = p.out_c, p.in_c
    pairs = plan.pairs
    chans, nout = plan.chans, plan.nout
    full = GROUP * (nout // GROUP)
    w = p.w.reshape(cout, cin).astype(np.int64)
    out: list[int] = []
    for g in range(plan.groups):
        js = [GROUP * g + i for i in range(GROUP)]  # block positions; chans[j] the channel
        cs = [chans[j] if j < nout else -1 for j in js]

        def wcol(c: int, k: int) -> int:
            return int(w[c, k]) if c >= 0 and k >= 0 else 0

        b2 = [2 * int(plan.bias[c]) if c >= 0 else 0 for c in cs]
        out += [_u32(b2[0] + 256 * b2[1]), _u32(b2[1]), _u32(b2[2] + 256 * b2[3]), _u32(b2[3])]
        for k0, k1 in pairs:
            for a, b in ((cs[0], cs[1]), (cs[2], cs[3])):
                byts = [(wcol(a, k0) + 128) & 0xFF, wcol(b, k0) & 0xFF,
                        (wcol(a, k1) + 128) & 0xFF, wcol(b, k1) & 0xFF]
                out.append(byts[0] | byts[1] << 8 | byts[2] << 16 | byts[3] << 24)
        if plan.compact and _straight(plan):  # 4 records {mult, half, shift} (padding 0, 0, 1)
            for c in cs:
                out += ([_u32(plan.mult[c]), _u32(plan.half[c]), _u32(plan.shift[c])]
                        if c >= 0 else [0, 0, 1])
        elif plan.compact:  # 4 records {mult, h} per group, r = ctz(h) + 1 (padding: 0, 1)
            for c in cs:
                live = c >= 0 and not plan.const[c]
                h = plan.half[c] if live else plan.half[c] + 1 if c >= 0 else 1
                out += [_u32(plan.mult[c]) if c >= 0 else 0, _u32(h)]
        elif plan.mode:
            for j, c in zip(js, cs, strict=True):
                if c < 0:
                    continue
                out += [_u32(plan.mult[c]), _u32(plan.half[c])]
                if not plan.unroll and j < full:
                    out.append(_u32(plan.shift[c]))  # looped full groups load the shift
    return np.asarray(out, np.uint32)


def pack_template(plan: Plan) -> np.ndarray:
    """uint32 words of two pixels' constant outputs (the sparse form's per-pair copy)."""
    assert plan.tpl is not None
    b = np.concatenate([plan.tpl, plan.tpl]).astype(np.int8).view(np.uint8)
    b = np.concatenate([b, np.zeros(-len(b) % 4, np.uint8)])
    return b.view("<u4").astype(np.uint32)


# ---- generated C / assembly --------------------------------------------------------------


def _op(name: str) -> str:
    return f"%[{name}]"


def _init(reload_xp: bool) -> list[str]:
    a = [_op(n) for n in ACC]
    xp, wp, u, v = _op("xp"), _op("wp"), _op("u"), _op("v")
    lines = [f"ldr {xp}, %[scrm]"] if reload_xp else []
    lines += [f"ldr {a[0]}, [{wp}], #4", f"ldr {a[1]}, [{wp}], #4",
              f"ldr {a[2]}, [{wp}], #4", f"ldr {a[3]}, [{wp}], #4",
              f"ldr {u}, [{xp}]", f"ldr {v}, [{xp}, #4]",
              f"sub {a[4]}, {a[0]}, {v}", f"sub {a[6]}, {a[2]}, {v}",
              f"sub {a[0]}, {a[0]}, {u}", f"sub {a[2]}, {a[2]}, {u}"]
    return lines


def _kpairs(kp: int, seeded: bool = False) -> list[str]:
    A0a, B1a, A2a, B3a, A0b, B1b, A2b, B3b = (_op(n) for n in ACC)
    xp, wp, xa, xb, u, v = (_op(n) for n in ("xp", "wp", "xa", "xb", "u", "v"))
    lines: list[str] = []
    for j in range(kp):
        off = 8 + 8 * j
        lines += [f"ldr {xa}, [{xp}, #{off}]", f"ldr {xb}, [{xp}, #{off + 4}]",
                  f"ldr {u}, [{wp}], #4", f"ldr {v}, [{wp}], #4",
                  f"smlad {A0a}, {xa}, {u}, {A0a}", f"smlad {A0b}, {xb}, {u}, {A0b}",
                  f"sxtb16 {u}, {u}, ror #8"]
        if j == 0 and not seeded:  # the b pixel's B accumulators start from pixel a's bias
            lines += [f"smlad {B1b}, {xb}, {u}, {B1a}", f"smlad {B1a}, {xa}, {u}, {B1a}"]
        else:
            lines += [f"smlad {B1a}, {xa}, {u}, {B1a}", f"smlad {B1b}, {xb}, {u}, {B1b}"]
        lines += [f"smlad {A2a}, {xa}, {v}, {A2a}", f"smlad {A2b}, {xb}, {v}, {A2b}",
                  f"sxtb16 {v}, {v}, ror #8"]
        if j == 0 and not seeded:
            lines += [f"smlad {B3b}, {xb}, {v}, {B3a}", f"smlad {B3a}, {xa}, {v}, {B3a}"]
        else:
            lines += [f"smlad {B3a}, {xa}, {v}, {B3a}", f"smlad {B3b}, {xb}, {v}, {B3b}"]
    return lines


def _mac(kp: int) -> list[str]:
    """The k-pairs of one block: straight for small Cin, else a prologue + chunk loop.

    The loop advances xp by a chunk of pairs and compares it with ``xend`` (memory): at the
    end of a chunk the temporaries are free, so no register is reserved for the count.
    """
    if kp <= KP_UNROLL:
        return _kpairs(kp)
    first = kp % KP_CHUNK  # the remainder runs first; its first pair seeds pixel b's B accs
    xp, u = _op("xp"), _op("u")
    if first:
        lines = _kpairs(first) + [f"add {xp}, {xp}, #{8 * first}"]
    else:
        lines = [f"mov {_op('B1b')}, {_op('B1a')}", f"mov {_op('B3b')}, {_op('B3a')}"]
    return (lines + ["2:"] + _kpairs(KP_CHUNK, seeded=True)
            + [f"add {xp}, {xp}, #{8 * KP_CHUNK}", f"ldr {u}, %[xendm]", f"cmp {xp}, {u}",
               "bne 2b"])


def _untangle() -> list[str]:
    """accA -= accB << 8: the even channels' true (doubled) accumulators."""
    A0a, B1a, A2a, B3a, A0b, B1b, A2b, B3b = (_op(n) for n in ACC)
    return [f"sub {A0a}, {A0a}, {B1a}, lsl #8", f"sub {A0b}, {A0b}, {B1b}, lsl #8",
            f"sub {A2a}, {A2a}, {B3a}, lsl #8", f"sub {A2b}, {A2b}, {B3b}, lsl #8"]


def _clamp_lo(x: str, lo: int) -> list[str]:
    if lo >= 0:
        return [f"cmp {x}, #{lo}", "it lt", f"movlt {x}, #{lo}"]
    return [f"cmn {x}, #{-lo}", "it lt", f"mvnlt {x}, #{-lo - 1}"]


def _smmlar_pair(plan: Plan, xs: tuple[str, str], m: str, h: str, tmp: str) -> list[str]:
    """acc = SMMLAR(acc, mult, half) for both pixels' accumulators ``xs``; with ``plan.sign``
    the rounding term first takes TFLite's -1 for a negative accumulator (``tmp`` holds it)."""
    if plan.sign:
        return [line for x in xs for line in
                (f"add {tmp}, {h}, {x}, asr #31", f"smmlar {x}, {x}, {m}, {tmp}")]
    return [f"smmlar {x}, {x}, {m}, {h}" for x in xs]


def _requant(plan: Plan, nch: int, offs: list[int], shifts: list[int] | None) -> list[str]:
    """Requantize + store channels 0..nch-1 of the block at op + offs[c] (pixel b:
    + ``plan.bstride``).

    ``shifts`` None: each record carries its shift (looped groups); else SSAT immediates.
    Records are loaded in back-to-back chains (1 cycle per load after the first) into
    whatever registers are free: the 4 temporaries at first, then each finished channel's
    record and accumulator registers.
    """
    p = plan.p
    xp, wp = _op("xp"), _op("wp")
    per = 2 if shifts is not None else 3  # record words per channel
    pool = [_op(n) for n in ("xa", "xb", "u", "v")]
    tmp = pool.pop() if plan.sign else ""  # the rounding-sign temporary
    lines = _untangle() + [f"ldr {xp}, %[opm]"]
    recs: dict[int, list[str]] = {}
    nxt = 0  # next channel whose records are not loaded yet
    for c in range(nch):
        if c not in recs:  # one chain: as many whole channels as the free registers hold
            while nxt < nch and len(pool) >= per:
                recs[nxt] = [pool.pop(0) for _ in range(per)]
                lines += [f"ldr {reg}, [{wp}], #4" for reg in recs[nxt]]
                nxt += 1
        rec = recs.pop(c)
        m, h = rec[0], rec[1]
        xs = (_op(ACC[c]), _op(ACC[4 + c]))
        lines += _smmlar_pair(plan, xs, m, h, tmp)
        for x in xs:
            if shifts is None:
                lines += [f"asr {x}, {x}, {rec[2]}", f"ssat {x}, #8, {x}"]
            else:
                lines.append(f"ssat {x}, #8, {x}, asr #{shifts[c]}")
            if plan.mode == 1:
                lines += _clamp_lo(x, p.act_min)
        lines += [f"strb {xs[0]}, [{xp}, #{offs[c]}]",
                  f"strb {xs[1]}, [{xp}, #{plan.bstride + offs[c]}]"]
        pool += rec + list(xs)
    return lines


_OUTS = ", ".join(f'[{n}] "=&r"({n})' for n in ACC)


def _asm(lines: list[str], extra_mem: str) -> str:
    body = "".join(f'        "{ln}\\n\\t"\n' for ln in lines)
    return (
        "    __asm__ volatile(\n" + body
        + f"        : {_OUTS},\n"
        '          [xp] "+r"(xp), [wp] "+r"(wp), [xa] "=&r"(xa), [xb] "=&r"(xb),\n'
        '          [u] "=&r"(u), [v] "=&r"(v)' + extra_mem + "\n"
        '        : [scrm] "m"(scr), [xendm] "m"(xend)\n'
        '        : "cc", "memory");\n'
    )


def _fast_pair_asm(plan: Plan) -> str:
    """One asm statement: all channel groups of one pixel pair (fast modes)."""
    nout, chans = plan.nout, plan.chans
    full = nout // GROUP
    tail = nout - GROUP * full
    kp = plan.kp
    lines: list[str] = []
    if plan.unroll:
        for g in range(plan.groups):
            nch = min(GROUP, nout - GROUP * g)
            shifts = [int(plan.shift[chans[GROUP * g + c]]) for c in range(nch)]
            offs = [plan.off(GROUP * g + c) for c in range(nch)]
            lines += _init(reload_xp=g > 0) + _mac(kp) + _requant(plan, nch, offs, shifts)
    else:
        xp = _op("xp")
        block = _init(reload_xp=True) + _mac(kp)
        step = 2 if kp <= TWO_GROUP_KP else 1  # groups per loop iteration
        if full % step:  # odd count: one group ahead of the two-group loop
            lines += block + _requant(plan, GROUP, list(range(GROUP)), None)
            lines += [f"adds {xp}, {xp}, #4", f"str {xp}, %[opm]"]
        if full >= step:
            lines += ["1:"]
            for i in range(step):
                lines += block + _requant(plan, GROUP, [GROUP * i + c for c in range(GROUP)],
                                          None)
            lines += [f"adds {xp}, {xp}, #{GROUP * step}", f"str {xp}, %[opm]",
                      f"ldr {_op('u')}, %[endm]", f"cmp {xp}, {_op('u')}", "bne 1b"]
        if tail:
            shifts = [int(plan.shift[chans[GROUP * full + c]]) for c in range(tail)]
            lines += block + _requant(plan, tail, list(range(tail)), shifts)
    return _asm(lines, ', [opm] "+m"(op)' + ("" if plan.unroll else ', [endm] "+m"(opend)'))


def _one_block(kp: int, reload_xp: bool) -> list[str]:
    """A 1 x 4 block of pixel slot 0 (accumulators A0a, B1a, A2a, B3a): per k-pair 3 loads,
    2 SXTB16, 4 SMLAD (10 cycles for 8 MACs, where a pair that recomputes a pixel costs 15).
    Beyond ONE_STRAIGHT k-pairs: the remainder first, then a loop of ONE_UNROLL pairs (one
    pixel of the layer runs here, so its code is kept small rather than straight)."""
    a0, b1, a2, b3 = (_op(n) for n in ACC[:4])
    xp, wp, xa, u, v = (_op(n) for n in ("xp", "wp", "xa", "u", "v"))

    def pairs(n: int) -> list[str]:
        out: list[str] = []
        for j in range(n):
            out += [f"ldr {xa}, [{xp}, #{8 + 8 * j}]", f"ldr {u}, [{wp}], #4",
                    f"ldr {v}, [{wp}], #4", f"smlad {a0}, {xa}, {u}, {a0}",
                    f"sxtb16 {u}, {u}, ror #8", f"smlad {b1}, {xa}, {u}, {b1}",
                    f"smlad {a2}, {xa}, {v}, {a2}", f"sxtb16 {v}, {v}, ror #8",
                    f"smlad {b3}, {xa}, {v}, {b3}"]
        return out

    lines = [f"ldr {xp}, %[scrm]"] if reload_xp else []
    lines += [f"ldr {a0}, [{wp}], #4", f"ldr {b1}, [{wp}], #4", f"ldr {a2}, [{wp}], #4",
              f"ldr {b3}, [{wp}], #4", f"ldr {u}, [{xp}]", f"sub {a0}, {a0}, {u}",
              f"sub {a2}, {a2}, {u}"]
    if kp <= ONE_STRAIGHT:
        return lines + pairs(kp)
    first, loops = kp % ONE_UNROLL, kp // ONE_UNROLL
    n = _op(ACC[4])  # pixel b's accumulators are free: the pass counter
    lines += pairs(first)
    if first:
        lines.append(f"add {xp}, {xp}, #{8 * first}")
    return (lines + [f"mov {n}, #{loops}", "2:"] + pairs(ONE_UNROLL)
            + [f"add {xp}, {xp}, #{8 * ONE_UNROLL}", f"subs {n}, {n}, #1", "bne 2b"])


def _one_requant(plan: Plan, nch: int, offs: list[int], shifts: list[int] | None) -> list[str]:
    """Requantize + store channels 0..nch-1 of a 1 x 4 block at op + offs[c]. Records load in
    back-to-back chains into the temporaries and pixel b's (unused) accumulators, then into
    each finished channel's registers."""
    xp, wp = _op("xp"), _op("wp")
    per = 2 if shifts is not None else 3
    pool = [_op(n) for n in ("xa", "xb", "u", "v", *ACC[4:])]
    tmp = pool.pop() if plan.sign else ""
    a0, b1, a2, b3 = (_op(n) for n in ACC[:4])
    lines = [f"sub {a0}, {a0}, {b1}, lsl #8", f"sub {a2}, {a2}, {b3}, lsl #8",
             f"ldr {xp}, %[opm]"]
    recs: dict[int, list[str]] = {}
    nxt = 0
    for c in range(nch):
        if c not in recs:
            while nxt < nch and len(pool) >= per:
                recs[nxt] = [pool.pop(0) for _ in range(per)]
                lines += [f"ldr {r}, [{wp}], #4" for r in recs[nxt]]
                nxt += 1
        rec = recs.pop(c)
        x = _op(ACC[c])
        if plan.sign:
            lines += [f"add {tmp}, {rec[1]}, {x}, asr #31", f"smmlar {x}, {x}, {rec[0]}, {tmp}"]
        else:
            lines.append(f"smmlar {x}, {x}, {rec[0]}, {rec[1]}")
        if shifts is None:
            lines += [f"asr {x}, {x}, {rec[2]}", f"ssat {x}, #8, {x}"]
        else:
            lines.append(f"ssat {x}, #8, {x}, asr #{shifts[c]}")
        if plan.mode == 1:
            lines += _clamp_lo(x, plan.p.act_min)
        lines.append(f"strb {x}, [{xp}, #{offs[c]}]")
        pool += rec
    return lines


def _fast_one_asm(plan: Plan) -> str:
    """One asm statement: all channel groups of ONE pixel (fast modes, odd pixel counts)."""
    nout, chans = plan.nout, plan.chans
    full = nout // GROUP
    tail = nout - GROUP * full
    kp = plan.kp
    lines: list[str] = []
    if plan.unroll:
        for g in range(plan.groups):
            nch = min(GROUP, nout - GROUP * g)
            shifts = [int(plan.shift[chans[GROUP * g + c]]) for c in range(nch)]
            offs = [plan.off(GROUP * g + c) for c in range(nch)]
            lines += _one_block(kp, g > 0) + _one_requant(plan, nch, offs, shifts)
    else:
        xp = _op("xp")
        lines += ["1:"] + _one_block(kp, True) + _one_requant(plan, GROUP, list(range(GROUP)),
                                                               None)
        lines += [f"adds {xp}, {xp}, #{GROUP}", f"str {xp}, %[opm]",
                  f"ldr {_op('u')}, %[endm]", f"cmp {xp}, {_op('u')}", "bne 1b"]
        if tail:
            shifts = [int(plan.shift[chans[GROUP * full + c]]) for c in range(tail)]
            lines += _one_block(kp, True) + _one_requant(plan, tail, list(range(tail)), shifts)
    return _asm(lines, ', [opm] "+m"(op)' + ("" if plan.unroll else ', [endm] "+m"(opend)'))


def _exact_group_asm(plan: Plan) -> str:
    """One group's accumulators (doubled, untangled) handed to C (exact requantization)."""
    lines = _init(reload_xp=True) + _mac(plan.kp) + _untangle()
    return _asm(lines, ', [opm] "+m"(op)')


WIDEN_UNROLL = 16  # input words widened straight per pixel; more: a loop of WIDEN_CHUNK
WIDEN_CHUNK = 8


def _widen_lines(plan: Plan, s: str, slot: int) -> list[str]:
    """Assembly widening one pixel (base register ``s``) into pixel slot ``slot``.

    Straight code for up to WIDEN_UNROLL input words, else a loop over chunks of WIDEN_CHUNK
    words (5 cycles per 8 words, and the code stays small for large Cin).
    """
    if plan.kin is not None:
        return _gather_lines(plan, s, slot)
    cin = plan.p.in_c
    nq, rem = divmod(cin, 4)
    c, k, d, v0, v1, t, dd, e = (_op(n) for n in ("c", "k", "d", "v0", "v1", "t", "dd", "e"))

    def word(v: str, q: int, dst: str) -> list[str]:
        o = 8 + 16 * q + 4 * slot  # pairs 2q and 2q+1 of this slot
        return [f"sxtb16 {t}, {v}", f"sxtb16 {v}, {v}, ror #8", f"sadd16 {t}, {t}, {t}",
                f"sadd16 {v}, {v}, {v}", f"str {t}, [{dst}, #{o}]", f"str {v}, [{dst}, #{o + 8}]",
                f"smlad {c}, {t}, {k}, {c}", f"smlad {c}, {v}, {k}, {c}"]

    def words(n: int, dst: str) -> list[str]:
        out: list[str] = []
        for q in range(0, n - 1, 2):  # two loads back to back (pipelined)
            out += [f"ldr {v0}, [{s}, #{4 * q}]", f"ldr {v1}, [{s}, #{4 * q + 4}]"]
            out += word(v0, q, dst) + word(v1, q + 1, dst)
        if n % 2:
            out += [f"ldr {v0}, [{s}, #{4 * (n - 1)}]"] + word(v0, n - 1, dst)
        return out

    lines = [f"mov {c}, #0"]
    if nq > WIDEN_UNROLL:
        loops = nq // WIDEN_CHUNK
        lines += [f"mov {dd}, {d}", f"add {e}, {s}, #{4 * WIDEN_CHUNK * loops}", "3:"]
        lines += words(WIDEN_CHUNK, dd)
        lines += [f"add {s}, {s}, #{4 * WIDEN_CHUNK}", f"add {dd}, {dd}, #{16 * WIDEN_CHUNK}",
                  f"cmp {s}, {e}", "bne 3b"]
        nq -= WIDEN_CHUNK * loops  # the rest is addressed from the advanced pointers
        base = dd
    else:
        base = d
    lines += words(nq, base)
    b, j = 4 * nq, 2 * nq

    def store(pair: int) -> list[str]:
        return [f"str {t}, [{base}, #{8 + 8 * pair + 4 * slot}]", f"smlad {c}, {t}, {k}, {c}"]

    def single(byte: int) -> list[str]:  # (x, 0) doubled
        return [f"ldrsb {t}, [{s}, #{byte}]", f"add {t}, {t}, {t}", f"uxth {t}, {t}"]

    if rem in (1, 2):
        for i in range(rem):
            lines += single(b + i) + store(j + i)
    elif rem == 3:
        lines += [f"ldrsb {t}, [{s}, #{b}]", f"ldrsb {v1}, [{s}, #{b + 2}]",
                  f"add {t}, {t}, {t}", f"add {v1}, {v1}, {v1}", f"uxth {t}, {t}",
                  f"orr {t}, {t}, {v1}, lsl #16"] + store(j)
        lines += single(b + 1) + store(j + 1)
    lines.append(f"str {c}, [{d}, #{4 * slot}]")
    return lines


def _gather_lines(plan: Plan, s: str, slot: int) -> list[str]:
    """The sparse form's widening: only the input channels ``plan.kin``, pair by pair (two
    LDRSB, PKHBT, SADD16: about 7 cycles a pair), straight code (at most GATHER_MAX
    channels). Pairs two at a time so that four loads run back to back."""
    c, k, d, v0, v1, t, e = (_op(n) for n in ("c", "k", "d", "v0", "v1", "t", "e"))
    pairs = plan.pairs
    lines = [f"mov {c}, #0"]
    regs = ((t, v0), (v1, e))
    for j0 in range(0, len(pairs), 2):
        chunk = list(zip(pairs[j0:j0 + 2], regs[:len(pairs[j0:j0 + 2])], strict=True))
        for (k0, k1), (ra, rb) in chunk:
            lines.append(f"ldrsb {ra}, [{s}, #{k0}]")
            if k1 >= 0:
                lines.append(f"ldrsb {rb}, [{s}, #{k1}]")
        for jj, ((_k0, k1), (ra, rb)) in enumerate(chunk):
            if k1 >= 0:  # (x0, x1) doubled
                lines += [f"pkhbt {ra}, {ra}, {rb}, lsl #16", f"sadd16 {ra}, {ra}, {ra}"]
            else:  # (x0, 0) doubled
                lines += [f"add {ra}, {ra}, {ra}", f"uxth {ra}, {ra}"]
            lines += [f"str {ra}, [{d}, #{8 + 8 * (j0 + jj) + 4 * slot}]",
                      f"smlad {c}, {ra}, {k}, {c}"]
    lines.append(f"str {c}, [{d}, #{4 * slot}]")
    return lines


def _widen_fn(plan: Plan) -> str:
    """@P@_widen(sa, sb, d): both pixels of a pair into the scratch.

    Doubled int16 pairs (SXTB16, SADD16) and the correction c = 128 * sum of the pairs.
    """
    lines = ["mov %[k], #0x00800080"]
    lines += _widen_lines(plan, "%[sa]", 0) + _widen_lines(plan, "%[sb]", 1)
    body = "".join(f'        "{ln}\\n\\t"\n' for ln in lines)
    return ("static void @P@_widen(const int8_t *sa, const int8_t *sb, uint32_t *d)\n{\n"
            "    uint32_t c, k, v0, v1, t, dd, e;\n"
            "    __asm__ volatile(\n" + body
            + '        : [c] "=&r"(c), [k] "=&r"(k), [v0] "=&r"(v0), [v1] "=&r"(v1), '
            '[t] "=&r"(t),\n'
            '          [dd] "=&r"(dd), [e] "=&r"(e), [sa] "+r"(sa), [sb] "+r"(sb)\n'
            '        : [d] "r"(d)\n'
            '        : "cc", "memory");\n'
            "}\n")


def generate_code(plan: Plan) -> str:
    """The layer's C: @P@_widen and @P@_run(in, out, scratch, stream[, mult, shift]).

    The constant arrays are parameters and the function is not inlined, so layers of the
    same shape and quantization mode get byte-identical functions that gcc folds into one
    (-fipa-icf): the unrolled code is paid once per distinct shape, not per layer.
    """
    p = plan.p
    cout, cin = p.out_c, p.in_c
    npix = p.out_h * p.out_w
    pair_words = 2 + 2 * plan.kp
    if p.stride_h == 1 and p.stride_w == 1:
        src = f"in + (p) * {cin}"
    else:
        src = (f"in + (((p) / {p.out_w}) * {p.stride_h * p.in_w} + ((p) % {p.out_w}) * "
               f"{p.stride_w}) * {cin}")
    extra = "" if plan.mode else ", const int32_t *mult, const int32_t *shift"
    if plan.kout is not None:
        extra += ", const uint32_t *tpl"
    if plan.nout == 0:  # every channel a constant: the outputs are copies of the template
        return ("static void __attribute__((noinline)) @P@_run(const int8_t *in, int8_t *out, "
                f"uint32_t *scr, const uint32_t *w{extra})\n{{\n"
                "    (void)in; (void)scr; (void)w;\n"
                f"    for (int pa = 0; pa < {npix}; pa += 2)\n"
                f"        memcpy(out + pa * {cout}, tpl, pa + 1 < {npix} ? {2 * cout} : {cout});\n"
                "}\n")
    lines = [_widen_fn(plan)]
    lines.append(f"#define @P@_SRC(p) ({src})")
    lines.append("static void __attribute__((noinline)) @P@_run(const int8_t *in, int8_t *out, "
                 f"uint32_t *scr, const uint32_t *w{extra})\n{{")
    lines.append("    int32_t A0a, B1a, A2a, B3a, A0b, B1b, A2b, B3b;")
    lines.append("    uint32_t xa, xb, u, v;")
    one = bool(plan.mode) and npix % 2 == 1  # an odd last pixel runs alone (1 x 4 blocks)
    stage_at = f"(int8_t *)(scr + {pair_words})"  # the sparse form's staged outputs
    first = stage_at if plan.staged else f"out + pa * {cout}"
    if one:
        lines.append(f"    for (int pa = 0; pa < {npix}; pa += 2) {{")
        lines.append(f"        const int alone = pa == {npix - 1};")
        lines.append("        @P@_widen(@P@_SRC(pa), @P@_SRC(alone ? pa : pa + 1), scr);")
        lines.append(f"        int8_t *op = {first};")
    elif npix == 1:  # no second pixel: both slots hold pixel 0, outputs staged in scratch
        stage = f"(int8_t *)(scr + {pair_words})"
        lines.append("    for (int pa = 0; pa < 1; pa++) {")
        lines.append("        @P@_widen(@P@_SRC(0), @P@_SRC(0), scr);")
        lines.append(f"        int8_t *op = {stage};")
    else:
        lines.append(f"    for (int pp = 0; pp < {npix}; pp += 2) {{")
        # odd count: the last pair overlaps the previous one (same values written twice)
        lines.append(f"        const int pa = pp + 1 < {npix} ? pp : {npix - 2};")
        lines.append("        @P@_widen(@P@_SRC(pa), @P@_SRC(pa + 1), scr);")
        lines.append(f"        int8_t *op = {first};")
        lines.append("        const int alone = 0;")
    if plan.kout is not None:  # constants first: an unrolled block's stores overwrite them
        lines.append(f"        memcpy(out + pa * {cout}, tpl, alone ? {cout} : {2 * cout});")
    lines.append("        const uint32_t *xp = scr;")
    lines.append("        const uint32_t *wp = w;")
    lines.append(f"        const uint32_t *xend = scr + {2 * plan.kp}; /* the chunk loop's end */")
    if plan.mode:
        if not plan.unroll:
            lines.append(f"        int8_t *opend = op + {GROUP * (plan.nout // GROUP)};")
            if plan.nout < GROUP:  # no full group: skip the loop (the tail block follows)
                raise EdgennError("internal: looped plan without full groups")
        if one:
            lines.append("        if (alone) {")
            lines.append(_fast_one_asm(plan))
            lines.append("        } else {")
            lines.append(_fast_pair_asm(plan))
            lines.append("        }")
        else:
            lines.append(_fast_pair_asm(plan))
    else:
        lines.append(f"        for (int g = 0; g < {plan.groups}; g++) {{")
        lines.append(_exact_group_asm(plan))
        lines.append("            const int32_t acc[8] = {A0a, B1a, A2a, B3a, A0b, B1b, A2b, B3b};")
        lines.append(f"            for (int c = 0; c < 4 && 4 * g + c < {cout}; c++) {{")
        lines.append("                const int ch = 4 * g + c;")
        for pix, accoff, ooff in (("a", 0, 0), ("b", 4, cout)):
            lines.append(
                f"                op[4 * g + c + {ooff}] = (int8_t)edgenn_requant_s32("
                f"acc[c + {accoff}] >> 1, mult[ch], shift[ch], {p.out_zp}, "
                f"{p.act_min}, {p.act_max}); /* {pix} */")
        lines.append("            }")
        lines.append("            xp = scr;")
        lines.append("        }")
    lines.append("        (void)xa; (void)xb; (void)u; (void)v; (void)xp; (void)wp;")
    lines.append("        (void)A0a; (void)B1a; (void)A2a; (void)B3a;")
    lines.append("        (void)A0b; (void)B1b; (void)A2b; (void)B3b;")
    if npix == 1 and not one:
        lines.append(f"        memcpy(out, {stage}, {cout});")
    if plan.staged:  # each computed channel to its place
        lines.append(f"        const int8_t *st = {stage_at};")
        lines.append(f"        int8_t *oa = out + pa * {cout};")
        lines += [f"        oa[{c}] = st[{j}];" for j, c in enumerate(plan.chans)]
        lines.append("        if (!alone) {")
        lines += [f"            oa[{cout + c}] = st[{plan.nout + j}];"
                  for j, c in enumerate(plan.chans)]
        lines.append("        }")
    if not one and npix != 1:
        lines.append("        (void)alone;")
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- compact form (codesize.is_compact): functions shared by every layer of a variant --------

C_CHUNK = 32  # k-pairs per pass of the compact chunk loop (entered part-way for the remainder)
C_PAIR_BYTES = 56  # one k-pair block: 14 wide (32-bit) instructions, the computed entry's unit


C_STRAIGHT_KP = 16  # up to this many k-pairs: straight code specialised to Cin (narrow layers
# are dominated by per-group and widening overhead; such functions are at most ~1.4 KB)


def compact_variant(plan: Plan) -> str:
    """What the shared compact functions are specialised to: requant mode, sign, clamp, and
    the k-pair count when it is small."""
    lo = f"_lo{plan.p.act_min + 128}" if plan.mode == 1 else ""
    shape = (f"_c{plan.p.in_c}x{plan.p.out_c}" if _straight(plan) else
             "_a" if plan.kp % C_CHUNK == 0 else "")  # aligned: no computed entry
    return f"m{plan.mode}s{int(plan.sign)}{lo}{shape}"


def _straight(plan: Plan) -> bool:
    """Narrow layers: a variant specialised to (Cin, Cout): straight k-pairs, pixel b's stores
    at immediate offsets, records {mult, half, shift} (a few bytes more per channel, spent
    where per-channel work is a large share of the layer). Cout >= 4: the staged last group
    of pixel a must not overlap pixel b's, which starts Cout bytes later."""
    return plan.kp <= C_STRAIGHT_KP and GROUP <= plan.p.out_c <= (4095 - GROUP) // 2


def _compact_pairs() -> list[str]:
    """C_CHUNK k-pair blocks of identical size (wide encodings), seeded accumulators."""
    lines = _kpairs(C_CHUNK, seeded=True)
    return [ln.replace("ldr %[xa], [", "ldr.w %[xa], [").replace("ldr %[xb], [", "ldr.w %[xb], [")
            for ln in lines]


def _compact_requant(plan: Plan) -> list[str]:
    """Requantize + store the 4 channels of a group; records {mult, h}, r = ctz(h) + 1.

    h = 2^(r-1) + (out_zp << r) = (2 out_zp + 1) << (r-1): its lowest set bit is r - 1, so
    the record needs no shift word (RBIT + CLZ recover it once h has been used).
    """
    p = plan.p
    xp, wp = _op("xp"), _op("wp")
    pool = [_op(n) for n in ("xa", "xb", "u", "v")]
    ob = pool.pop(0)  # pixel b's output pointer
    tmp = pool.pop(0) if plan.sign else ""
    lines = _untangle() + [f"ldr {xp}, %[opm]", f"ldr {ob}, %[opbm]"]
    for c in range(GROUP):
        m, h = pool.pop(0), pool.pop(0)
        lines += [f"ldr {m}, [{wp}], #4", f"ldr {h}, [{wp}], #4"]
        xs = (_op(ACC[c]), _op(ACC[4 + c]))
        lines += _smmlar_pair(plan, xs, m, h, tmp)
        lines += [f"rbit {h}, {h}", f"clz {h}, {h}"]
        for x in xs:
            lines += [f"asr {x}, {x}, {h}", f"ssat {x}, #8, {x}, asr #1"]
            if plan.mode == 1:
                lines += _clamp_lo(x, p.act_min)
        lines += [f"strb {xs[0]}, [{xp}, #{c}]", f"strb {xs[1]}, [{ob}, #{c}]"]
        pool += [m, h, *xs]
    u = _op("u")
    lines += [f"adds {xp}, {xp}, #{GROUP}", f"str {xp}, %[opm]",
              f"adds {ob}, {ob}, #{GROUP}", f"str {ob}, %[opbm]",
              f"ldr {u}, %[endm]", f"cmp {xp}, {u}", "bne 1b"]
    return lines


def _compact_groups_fn(plan: Plan) -> str:
    """pwc_grp_V: channel groups op..opend of one pixel pair; returns the stream pointer."""
    v = compact_variant(plan)
    xp, u, vv = _op("xp"), _op("u"), _op("v")
    if _straight(plan):
        lines = ["1:"] + _init(reload_xp=True) + _kpairs(plan.kp)
        lines += _requant(plan, GROUP, list(range(GROUP)), None)
        lines += [f"adds {xp}, {xp}, #{GROUP}", f"str {xp}, %[opm]", f"ldr {u}, %[endm]",
                  f"cmp {xp}, {u}", "bne 1b"]
    else:  # chunk loop entered at ent = C_PAIR_BYTES * j0 into its first pass
        aligned = plan.kp % C_CHUNK == 0  # j0 = 0: xs = scr, fall into the loop
        lines = [] if aligned else [f"ldr {vv}, %[entm]", f"adr.w {u}, 2f",
                                    f"add {u}, {u}, {vv}", f"orr {u}, {u}, #1",
                                    f"str {u}, %[entm]"]
        lines += ["1:"] + _init(reload_xp=True)
        lines += [f"mov {_op('B1b')}, {_op('B1a')}", f"mov {_op('B3b')}, {_op('B3a')}"]
        lines += ["2:"] if aligned else [f"ldr {xp}, %[xsm]", "ldr pc, %[entm]", "2:"]
        lines += _compact_pairs()
        lines += [f"add {xp}, {xp}, #{8 * C_CHUNK}", f"ldr {u}, %[xendm]", f"cmp {xp}, {u}",
                  "bne 2b"]
        lines += _compact_requant(plan)
    body = "".join(f'        "{ln}\\n\\t"\n' for ln in lines)
    return (
        f"static const uint32_t *__attribute__((noinline)) pwc_grp_{v}(const uint32_t *scr,\n"
        "    const uint32_t *wp, int8_t *op, int8_t *opb, int8_t *opend, const uint32_t *xs,\n"
        "    const uint32_t *xend, uint32_t ent)\n{\n"
        "    int32_t A0a, B1a, A2a, B3a, A0b, B1b, A2b, B3b;\n"
        "    uint32_t xa, xb, u, v;\n"
        "    const uint32_t *xp;\n"
        "    __asm__ volatile(\n" + body
        + f"        : {_OUTS},\n"
        '          [xp] "=&r"(xp), [wp] "+r"(wp), [xa] "=&r"(xa), [xb] "=&r"(xb),\n'
        '          [u] "=&r"(u), [v] "=&r"(v), [opm] "+m"(op), [opbm] "+m"(opb),\n'
        '          [entm] "+m"(ent)\n'
        '        : [scrm] "m"(scr), [xsm] "m"(xs), [xendm] "m"(xend), [endm] "m"(opend)\n'
        '        : "cc", "memory");\n'
        "    (void)A0a; (void)B1a; (void)A2a; (void)B3a; (void)A0b; (void)B1b; (void)A2b;\n"
        "    (void)B3b; (void)xa; (void)xb; (void)u; (void)v; (void)xp;\n"
        "    return wp;\n}\n")


def _one_pixel_fn(plan: Plan) -> str:
    """pwc_one_V: channel groups of ONE pixel (slot 0 of the scratch); returns the stream
    pointer. Odd pixel counts run their last pixel here instead of a pair that recomputes
    the previous pixel: a 1 x 4 block costs 10 cycles per k-pair (3 loads, 2 SXTB16,
    4 SMLAD) where the overlapping pair costs 15. Records {mult, h} as in the general
    compact variant; the k-pairs loop ONE_UNROLL at a time after kp % ONE_UNROLL singles."""
    v = compact_variant(plan)
    a0, b1, a2, b3, xp, wp, xa, u, vv, n = (_op(x) for x in (
        "a0", "b1", "a2", "b3", "xp", "wp", "xa", "u", "v", "n"))
    scr, kp, ng, op = _op("scr"), _op("kp"), _op("ng"), _op("op")

    def kpair(off: int, post: bool) -> list[str]:
        load = f"ldr {xa}, [{xp}], #8" if post else f"ldr {xa}, [{xp}, #{off}]"
        return [load, f"ldr {u}, [{wp}], #4", f"ldr {vv}, [{wp}], #4",
                f"smlad {a0}, {xa}, {u}, {a0}", f"sxtb16 {u}, {u}, ror #8",
                f"smlad {b1}, {xa}, {u}, {b1}", f"smlad {a2}, {xa}, {vv}, {a2}",
                f"sxtb16 {vv}, {vv}, ror #8", f"smlad {b3}, {xa}, {vv}, {b3}"]

    lines = ["1:", f"ldr {a0}, [{wp}], #4", f"ldr {b1}, [{wp}], #4",
             f"ldr {a2}, [{wp}], #4", f"ldr {b3}, [{wp}], #4", f"ldr {u}, [{scr}]",
             f"sub {a0}, {a0}, {u}", f"sub {a2}, {a2}, {u}", f"add {xp}, {scr}, #8",
             f"ands {n}, {kp}, #{ONE_UNROLL - 1}", "beq 3f", "2:"]
    lines += kpair(0, True) + [f"subs {n}, {n}, #1", "bne 2b", "3:",
                               f"lsrs {n}, {kp}, #{ONE_UNROLL.bit_length() - 1}", "beq 5f",
                               "4:"]
    for j in range(ONE_UNROLL):
        lines += kpair(8 * j, False)
    lines += [f"add {xp}, {xp}, #{8 * ONE_UNROLL}", f"subs {n}, {n}, #1", "bne 4b", "5:",
              f"sub {a0}, {a0}, {b1}, lsl #8", f"sub {a2}, {a2}, {b3}, lsl #8"]
    m, h, t = xa, u, vv
    for c, x in enumerate((a0, b1, a2, b3)):
        lines += [f"ldr {m}, [{wp}], #4", f"ldr {h}, [{wp}], #4"]
        if plan.sign:
            lines += [f"add {t}, {h}, {x}, asr #31", f"smmlar {x}, {x}, {m}, {t}"]
        else:
            lines.append(f"smmlar {x}, {x}, {m}, {h}")
        lines += [f"rbit {h}, {h}", f"clz {h}, {h}", f"asr {x}, {x}, {h}",
                  f"ssat {x}, #8, {x}, asr #1"]
        if plan.mode == 1:
            lines += _clamp_lo(x, plan.p.act_min)
        lines.append(f"strb {x}, [{op}, #{c}]")
    lines += [f"add {op}, {op}, #{GROUP}", f"subs {ng}, {ng}, #1", "bne 1b"]
    body = "".join(f'        "{ln}\\n\\t"\n' for ln in lines)
    return (
        f"static const uint32_t *__attribute__((noinline)) pwc_one_{v}(const uint32_t *scr,\n"
        "    const uint32_t *wp, int8_t *op, int ng, int kp)\n{\n"
        "    int32_t a0, b1, a2, b3;\n"
        "    uint32_t xa, u, v, n;\n"
        "    const uint32_t *xp;\n"
        "    __asm__ volatile(\n" + body
        + '        : [a0] "=&r"(a0), [b1] "=&r"(b1), [a2] "=&r"(a2), [b3] "=&r"(b3),\n'
        '          [xp] "=&r"(xp), [xa] "=&r"(xa), [u] "=&r"(u), [v] "=&r"(v), [n] "=&r"(n),\n'
        '          [wp] "+&r"(wp), [op] "+&r"(op), [ng] "+&r"(ng)\n'
        '        : [scr] "r"(scr), [kp] "r"(kp)\n'
        '        : "cc", "memory");\n'
        "    (void)a0; (void)b1; (void)a2; (void)b3; (void)xa; (void)u; (void)v; (void)n;\n"
        "    (void)xp;\n"
        "    return wp;\n}\n")


_COMPACT_COMMON = r"""
#ifndef PWC_COMMON
#define PWC_COMMON
/* compact pointwise: one pixel widened into slot d (= scratch + 0 or + 1) for any Cin */
static void __attribute__((noinline, unused)) pwc_widen(const int8_t *s, uint32_t *d, int cin)
{
    const uint32_t k = 0x00800080u;
    int32_t c = 0;
    uint32_t *p = d + 2;
    const int8_t *e = s + (cin & ~15);
    if (s != e) { /* 4 words per pass: loads back to back, 10.5 cycles per word */
        uint32_t v0, v1, v2, v3, t;
        __asm__ volatile(
            "1:\n\t"
            "ldr %[v1], [%[s], #4]\n\tldr %[v2], [%[s], #8]\n\t"
            "ldr %[v3], [%[s], #12]\n\tldr %[v0], [%[s]], #16\n\t"
#define PWC_W(v, o) "sxtb16 %[t], %[" v "]\n\tsxtb16 %[" v "], %[" v "], ror #8\n\t" \
    "sadd16 %[t], %[t], %[t]\n\tsadd16 %[" v "], %[" v "], %[" v "]\n\t" \
    "str %[t], [%[p], #" o "]\n\tstr %[" v "], [%[p], #" o "+8]\n\t" \
    "smlad %[c], %[t], %[k], %[c]\n\tsmlad %[c], %[" v "], %[k], %[c]\n\t"
            PWC_W("v0", "0") PWC_W("v1", "16") PWC_W("v2", "32") PWC_W("v3", "48")
#undef PWC_W
            "add %[p], %[p], #64\n\t"
            "cmp %[s], %[e]\n\t"
            "bne 1b\n\t"
            : [s] "+r"(s), [p] "+r"(p), [c] "+r"(c), [v0] "=&r"(v0), [v1] "=&r"(v1),
              [v2] "=&r"(v2), [v3] "=&r"(v3), [t] "=&r"(t)
            : [e] "r"(e), [k] "r"(k)
            : "cc", "memory");
    }
    e = s + (cin & 12);
    for (; s != e; s += 4, p += 4) {
        uint32_t v = edgenn_load32(s), t;
        __asm__("sxtb16 %0, %1\n\tsxtb16 %1, %1, ror #8\n\tsadd16 %0, %0, %0\n\t"
                "sadd16 %1, %1, %1" : "=&r"(t), "+r"(v));
        p[0] = t;
        p[2] = v;
        c = edgenn_smlad(t, k, c);
        c = edgenn_smlad(v, k, c);
    }
    const int r = cin & 3;
    if (r) { /* pair_plan's tail: (b, b+2) or (b, -), then (b+1, -) */
        uint32_t t = ((uint32_t)(2 * (int32_t)s[0]) & 0xFFFFu)
                     | (r == 3 ? (uint32_t)(2 * (int32_t)s[2]) << 16 : 0u);
        p[0] = t;
        c = edgenn_smlad(t, k, c);
        if (r >= 2) {
            t = (uint32_t)(2 * (int32_t)s[1]) & 0xFFFFu;
            p[2] = t;
            c = edgenn_smlad(t, k, c);
        }
    }
    d[0] = (uint32_t)c;
}
#endif
"""


def _compact_run_fn(plan: Plan) -> str:
    """pwc_run_V: the pixel-pair loop of any 1x1 layer of this variant (shape as arguments)."""
    v = compact_variant(plan)
    one = ""
    if _straight(plan):  # the layer-specific widening, specialised to Cin
        widen = _widen_fn(plan).replace("@P@_widen", f"pwc_widen_{v}")
        call = f"pwc_widen_{v}(sa, sb, scr);"
    else:
        widen = ""
        one = _one_pixel_fn(plan)
        call = "pwc_widen(sa, scr, cin);\n        pwc_widen(sb, scr + 1, cin);"
    return f"""
#ifndef PWC_RUN_{v}
#define PWC_RUN_{v}
{widen}
{_compact_groups_fn(plan)}
{one}
/* kp k-pairs; row/col: input bytes between output rows / columns; scratch: the pair, then
   8 staging bytes (the last group of Cout % 4 channels), then Cout bytes when npix == 1 */
static void __attribute__((noinline)) pwc_run_{v}(const int8_t *in, int8_t *out,
    uint32_t *scr, const uint32_t *w, int npix, int cin, int cout, int kp, int out_w, int row,
    int col)
{{
    const int j0 = (C_CHUNK_N - kp % C_CHUNK_N) % C_CHUNK_N;
    /* the first pass starts j0 pairs early: xs may point before scr, never dereferenced */
    const uintptr_t xs0 = (uintptr_t)scr - 8u * (uintptr_t)j0;
    const uint32_t *xs = (const uint32_t *)xs0;
    const uint32_t *xend =
        (const uint32_t *)(xs0 + 8u * C_CHUNK_N * (uintptr_t)((kp + j0) / C_CHUNK_N));
    int8_t *stage = (int8_t *)(scr + 2 + 2 * kp);
    const int full = cout / 4, tail = cout % 4;
    const int dense = row == out_w * col; /* stride 1: pixel p at in + p * Cin */
    (void)cin;
    /* general variant: whole pairs here, an odd last pixel alone below (pwc_one) */
    for (int pp = 0; pp < ({int(not _straight(plan))} ? npix - (npix & 1) : npix); pp += 2) {{
        const int pa = pp + 1 < npix ? pp : (npix > 1 ? npix - 2 : 0);
        const int pb = npix > 1 ? pa + 1 : 0;
        const int8_t *sa = dense ? in + pa * col : in + (pa / out_w) * row + (pa % out_w) * col;
        const int8_t *sb = dense ? in + pb * col : in + (pb / out_w) * row + (pb % out_w) * col;
        {call}
        int8_t *op = out + pa * cout;
        const uint32_t *wp = w;
#if {int(_straight(plan))} /* pixel b at op + Cout: a single pixel is staged whole */
        int8_t *dst = npix > 1 ? op : stage;
        if (full)
            wp = pwc_grp_{v}(scr, wp, dst, 0, dst + 4 * full, xs, xend, 0u);
        if (tail) {{
            int8_t *t = stage + (npix > 1 ? 0 : 4 * full);
            (void)pwc_grp_{v}(scr, wp, t, 0, t + 4, xs, xend, 0u);
            for (int c = 0; c < tail; c++) {{
                dst[4 * full + c] = t[c];
                dst[cout + 4 * full + c] = t[cout + c];
            }}
        }}
        if (npix == 1)
            memcpy(out, stage, (size_t)cout);
#else
        int8_t *opb = npix > 1 ? op + cout : stage + 8;
        if (full)
            wp = pwc_grp_{v}(scr, wp, op, opb, op + 4 * full, xs, xend, {C_PAIR_BYTES}u * j0);
        if (tail) {{
            (void)pwc_grp_{v}(scr, wp, stage, stage + 4, stage + 4, xs, xend,
                              {C_PAIR_BYTES}u * j0);
            for (int c = 0; c < tail; c++) {{
                op[4 * full + c] = stage[c];
                opb[4 * full + c] = stage[4 + c];
            }}
        }}
#endif
    }}
#if {int(not _straight(plan))}
    if (npix & 1) {{
        const int pa = npix - 1;
        const int8_t *sa = dense ? in + pa * col : in + (pa / out_w) * row + (pa % out_w) * col;
        int8_t *op = out + pa * cout;
        const uint32_t *wp = w;
        pwc_widen(sa, scr, cin);
        if (full)
            wp = pwc_one_{v}(scr, wp, op, full, kp);
        if (tail) {{
            (void)pwc_one_{v}(scr, wp, stage, 1, kp);
            for (int c = 0; c < tail; c++)
                op[4 * full + c] = stage[c];
        }}
    }}
#endif
}}
#endif
"""


def generate_compact_code(plan: Plan) -> str:
    """Compact mode: the shared functions (defined once per variant in model.c)."""
    return (f"#ifndef C_CHUNK_N\n#define C_CHUNK_N {C_CHUNK}\n#endif\n"
            + _COMPACT_COMMON + _compact_run_fn(plan))


def compact_call(plan: Plan, name: str) -> CCall:
    """The call of the compact code's shared function of the plan's variant."""
    p = plan.p
    return c_call(Generated(f"pwc_run_{compact_variant(plan)}", name, per_layer=False),
                  *_STREAM, p.out_h * p.out_w, p.in_c, p.out_c, plan.kp, p.out_w,
                  p.stride_h * p.in_w * p.in_c, p.stride_w * p.in_c)


# the input, the output, the scratch pixel pair and the weight stream every variant takes
_STREAM = (IN0, OUT0, Cast("uint32_t *", SCRATCH), Array("w"))


def scratch_bytes(plan: Plan) -> int:
    """The interleaved pixel pair (2 correction words + 2 words per pair) + npix==1 staging."""
    p = plan.p
    words = 2 + 2 * plan.kp
    if plan.compact and _straight(plan):  # staging: the tail group, or a whole single pixel
        return 4 * words + -(-(2 * p.out_c + GROUP) // 4) * 4
    if plan.compact:  # tail-group staging, then pixel b's discarded outputs when npix == 1
        return 4 * words + 8 + -(-(p.out_c if p.out_h * p.out_w == 1 else 0) // 4) * 4
    stage = 2 * p.out_c if p.out_h * p.out_w == 1 else 2 * plan.nout if plan.staged else 0
    return 4 * words + -(-stage // 4) * 4


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not dsp_dense_conv(node, graph, core) or len(node.inputs) < 2:
        return False
    wt = graph.tensor(node.inputs[1])
    if not wt.is_const or len(wt.shape) != 4 or tuple(wt.shape[1:3]) != (1, 1):
        return False
    x = graph.tensor(node.inputs[0])
    if x.is_const or len(x.shape) != 4 or x.shape[0] != 1 or x.shape[3] != wt.shape[3]:
        return False
    if not 1 <= wt.shape[3] <= MAX_CIN or not 1 <= wt.shape[0] <= MAX_COUT:
        return False
    try:
        p = conv_params(node, graph)
    except EdgennError:
        return False
    if p.has_padding:
        return False
    return make_plan(p) is not None


class PointwiseConv:
    """1x1 Conv2D: generated 2-pixel x 4-channel SMLAD blocks over int8 weights (DSP cores)."""

    op = "Conv2D"
    priority = 30
    name = "edgenn_conv_s8_1x1_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        plan = make_plan(p, force_mode=FORCE_MODE, compact=is_compact())
        assert plan is not None
        return prepare_plan(plan, self.name)


def prepare_plan(plan: Plan, name: str = "edgenn_conv_s8_1x1_dsp") -> KernelCall:
    """The KernelCall of a plan (tests force modes through here)."""
    p = plan.p
    arrays = [CArray("w", "uint32_t", pack_stream(plan))]
    if not plan.mode:
        arrays += [CArray("mult", "int32_t", plan.mult), CArray("shift", "int32_t", plan.shift)]
    if plan.kout is not None:
        arrays.append(CArray("tpl", "uint32_t", pack_template(plan)))
    how = ("exact requant" if not plan.mode else "fast requant, compact shared code"
           if plan.compact else
           "fast requant, groups unrolled" if plan.unroll else "fast requant, group loop")
    if plan.kin is not None or plan.kout is not None:
        how += (f", sparse: {plan.nout} of {p.out_c} channels computed"
                f"{'' if plan.kin is None else f' from {len(plan.kin)} of {p.in_c} inputs'}")
    return KernelCall(
        call=compact_call(plan, name) if plan.compact else
        generated("run", name, *_STREAM, *(() if plan.mode else (Array("mult"), Array("shift"))),
                  *(() if plan.kout is None else (Array("tpl"),))),
        sources=("edgenn_conv_s8_1x1_dsp.h",),
        arrays=tuple(arrays),
        scratch_bytes=scratch_bytes(plan),
        comment=f"{p.in_h}x{p.in_w}x{p.in_c} -> {p.out_h}x{p.out_w}x{p.out_c}, 1x1 stride "
        f"{p.stride_h},{p.stride_w}, 2x4 SMLAD blocks, {how}",
        code=generate_compact_code(plan) if plan.compact else generate_code(plan),
    )


register_kernel(PointwiseConv())
