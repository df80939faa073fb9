"""Fast int8 general Conv2D (groups 1, kernel not 1x1) for DSP cores, int8 weights in flash.

Per layer the generator emits C specialised to the layer's shape (``KernelCall.code``, header
``c/edgenn_conv_s8_gemm_dsp.h``):

* a patch copy unrolled for this layer's window: every run of 4 input bytes that are adjacent
  both in the input and in the patch becomes one word load + SXTB16 + SXTB16-ROR-8 (any
  Cin, 1 and 3 included, any dilation); other elements are paired with two byte loads. The
  patch holds the int16 pairs of a block's output pixels interleaved (word P p + j = pixel
  j's pair p). Windows wholly inside the input are copied straight from it (no bounds
  checks); border windows are first gathered into a small dense window whose padding taps
  hold the input zero point, then copied by a second instance of the same unrolled code
  (layers whose windows never leave the input get no window buffer at all);
* a block of 8 accumulators in hand-scheduled asm, the K loop unrolled for this layer's K
  (the first step adds the biases, fewer straight steps than loop iterations, a loop of
  u >= U steps: :func:`_loop_shape`):
  4 pixels x 2 channels with signed weights (``CGEMM_STEP``, 17 cycles per 16 MACs), or with
  packed-pair weights (:func:`packed_ok`: each raw int16 half of a weight word is
  w[c] + 256 w[c+1], so one SXTB16 serves 2 channels: 16 cycles per 16 MACs) in 4x2 blocks
  or, for long K, 2x4 blocks whose patch is half as large (:func:`layer_plan_of`);
* requantization in the same asm statement, with the accumulator doubled (SMMLAR) when
  :func:`fast_common.fast_requant_mode` proves it exact, else TFLite's exact double rounding
  in C; all full channel groups of a block run in one asm loop.

Compact code (``codesize.is_compact``, chosen by the flash policy when the default build
exceeds the flash budget): K loops of COMPACT_UNROLL steps entered mid-body for the partial
iteration, and one non-inlined row copy serving both the interior and the border window
(measured on IC ResNet-8: -10 KB of code, +1.9% cycles).

The input offset is folded into the bias (``bias - in_zp * sum(w)``); padding taps hold
``in_zp``, so their products cancel exactly. Pair halves that carry no element get weight 0.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, generated
from edgenn.backends.cortexm.codesize import is_compact
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import i32
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import (
    dsp_dense_conv,
    fast_requant_mode,
    quant_records,
)
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node

UNROLL = 16  # k pairs per iteration of the MAC loop (~0.9 KB of code), doubled for long K
MAX_SCRATCH = 16384  # bytes: the largest patch + window + few-pixel outputs claimed
SMALL_PATCH4 = 1024  # bytes: 4-pixel patches always up to this (K <= 128)
MAX_PATCH4 = 4096  # up to this (K <= 512) where the arena surely has room (layer_plan_of)
ROW_LOOP_MIN = 16  # rows of at least this many elements are copied by a loop over rows
COMPACT_UNROLL = 16  # k pairs per loop iteration in compact code (8: IC -3 KB, +2.5% cycles)


@dataclass(frozen=True)
class CopyOp:
    """One step of the patch copy: ``kind`` "w4" (4 adjacent bytes), "p2" (2 bytes), "s1".

    ``q`` is the first element's index in the patch sequence (always even); the op writes
    pair ``q // 2`` (and ``q // 2 + 1`` for "w4").
    """

    kind: str
    q: int


def interior_offsets(p: ConvParams) -> np.ndarray:
    """Byte offset of each window element (ky, kx, ci order) from the window's first byte."""
    ky, kx, ci = np.meshgrid(np.arange(p.k_h), np.arange(p.k_w), np.arange(p.in_c),
                             indexing="ij")
    off = ky * p.dil_h * p.in_w * p.in_c + kx * p.dil_w * p.in_c + ci
    return off.ravel().astype(np.int64)


def plan_ops(offs: np.ndarray, n: int) -> list[CopyOp]:
    """Greedy copy plan of elements 0..n-1: a word op wherever 4 elements are adjacent.

    Adjacent in the dense window too (element index + 1), so the same plan serves both.
    """
    ops: list[CopyOp] = []
    q = 0
    while q < n:
        if q + 3 < n and all(offs[q + i] == offs[q] + i for i in range(4)):
            ops.append(CopyOp("w4", q))
            q += 4
        elif q + 1 < n:
            ops.append(CopyOp("p2", q))
            q += 2
        else:
            ops.append(CopyOp("s1", q))
            q += 1
    return ops


def row_loop(p: ConvParams) -> bool:
    """Copy row by row with one loop (rows of even length start at an even pair position)."""
    row = p.k_w * p.in_c
    return p.k_h > 1 and row % 2 == 0 and row >= ROW_LOOP_MIN


def layer_plan(p: ConvParams) -> list[CopyOp]:
    """The copy plan of the whole window, as the generated code runs it."""
    k = p.k_h * p.k_w * p.in_c
    offs = interior_offsets(p)
    if not row_loop(p):
        return plan_ops(offs, k)
    row = p.k_w * p.in_c
    ops = plan_ops(offs, row)
    return [CopyOp(op.kind, op.q + r * row) for r in range(p.k_h) for op in ops]


def patch_positions(p: ConvParams) -> np.ndarray:
    """Position (2 * pair + half) in a pixel's patch of every window element."""
    k = p.k_h * p.k_w * p.in_c
    pos = np.zeros(k, np.int64)
    for op in layer_plan(p):
        q = op.q
        if op.kind == "w4":  # SXTB16 -> (b0, b2) in pair q/2; ROR 8 -> (b1, b3) in the next
            pos[q:q + 4] = (q, q + 2, q + 1, q + 3)
        elif op.kind == "p2":
            pos[q:q + 2] = (q, q + 1)
        else:
            pos[q] = q
    return pos


def k_pairs(p: ConvParams) -> int:
    return (p.k_h * p.k_w * p.in_c + 1) // 2


def packed_ok(p: ConvParams, mode: int) -> bool:
    """Can the layer use packed-pair weights (16 instead of 17 cycles per 16 MACs)?

    A weight word holds channels c (even) and c+1 as bytes {w0, v1, w0', v1'} with
    v1 = w1 - (w0 < 0): then each raw int16 half is exactly w0 + 256 w1 (the borrow of the
    signed low byte is paid back in the high byte), and SXTB16 gives (w0, w0'). So
    U = bias_c + sum x w0 = acc[c] and T = bias_c + 256 bias_{c+1} + sum x (w0 + 256 w1),
    acc[c+1] = (T - U) / 256: one SXTB16 per 2 channels instead of 2. Exact while every v1
    fits int8 (w1 = -128 with w0 < 0 does not) and |256 acc| < 2^31 for every channel:
    |folded bias| + 128 sum|w| < 2^23 (T wraps mod 2^32 and still gives 256 acc[c+1]).
    Fast requantization only (it consumes 2 acc).
    """
    if not mode:
        return False
    w = p.w.reshape(p.out_c, -1).astype(np.int64)
    cpad = p.out_c + (p.out_c & 1)
    wp = np.zeros((cpad, w.shape[1]), np.int64)
    wp[:p.out_c] = w
    if np.any(wp[1::2] - (wp[0::2] < 0) < -128):
        return False
    bound = np.abs(fold_input_zero_point(p.bias, p.w, p.in_zp)) + 128 * np.abs(w).sum(axis=1)
    return bool(np.all(bound < 2**23))


@dataclass(frozen=True)
class Plan:
    """Generation-time choices of one layer."""

    mode: int  # requantization: 0 exact, 1/2 doubled-accumulator SMMULR (fast_common)
    packed: bool  # packed-pair weights (:func:`packed_ok`), else signed
    pixels: int  # 4 (x 2 channels) or 2 (x 4 channels, packed only: half the patch)

    @property
    def chans(self) -> int:
        return 8 // self.pixels


def layer_plan_of(p: ConvParams, room: int = 0) -> Plan:
    """Signed 4x2 blocks unless packed-pair weights are exact; then packed 4x2 blocks while
    their patch (16 bytes per k pair) stays within SMALL_PATCH4, or within MAX_PATCH4 when
    the scratch fits in ``room`` (:func:`arena_room`), else packed 2x4 blocks, whose patch is
    the size of CMSIS-NN's im2col buffer (8 bytes per k pair), when they beat signed.
    (4x2 saves ~20 cycles per 4 pixels x 4 channels over 2x4, -1.1% on IC's 3x3x16 layers.)

    Cycle model per 4 pixels and 4 channels, calibrated on the emulated M4: signed 4x2
    2 (17 S + 76), packed 4x2 2 (16 S + 80), packed 2x4 2 (16 S + 100) (S k pairs; the
    constants are the per-block first step, recovery, requantization and loop glue).
    """
    mode = requant_mode(p)
    s = k_pairs(p)
    if not packed_ok(p, mode):
        return Plan(mode, False, 4)
    big_ok = 16 * s <= MAX_PATCH4 and scratch_bytes(p, Plan(mode, True, 4)) <= room
    if 16 * s <= SMALL_PATCH4 or big_ok:
        return Plan(mode, True, 4)
    if -(-p.out_c // 4) * 2 * (16 * s + 100) < -(-p.out_c // 2) * (17 * s + 76):
        return Plan(mode, True, 2)
    return Plan(mode, False, 4)


def _io_bytes(node: Node, graph: Graph) -> int:
    names = {n for n in (*node.inputs, *node.outputs) if n}
    return sum(graph.tensor(n).nbytes for n in names if not graph.tensor(n).is_const)


def arena_room(node: Node, graph: Graph) -> int:
    """Scratch bytes this layer may take without raising the arena above TFLite Micro's: the
    largest sum of one layer's activation inputs and outputs (which every runtime's arena
    holds at once) minus this layer's. 0 on the model's largest layer, so the 4-pixel patch
    never makes that one larger than CMSIS-NN's im2col would."""
    peak = max(_io_bytes(n, graph) for n in graph.nodes)
    return max(0, peak - _io_bytes(node, graph))


def pack_weights(p: ConvParams, packed: bool = False, group: int = 2) -> np.ndarray:
    """int8 [Cout, KH, KW, Cin] -> uint32 weight words (see edgenn_conv_s8_gemm_dsp.h).

    signed: [channel pair][k pair], bytes {w[c][2p], w[c+1][2p], w[c][2p+1], w[c+1][2p+1]};
    ``packed``: the odd channel's bytes minus the borrow of the even channel's
    (:func:`packed_ok`); ``group`` 4: [4-channel group][k pair][2 words].
    """
    s = k_pairs(p)
    cpad = -(-p.out_c // group) * group
    mat = np.zeros((cpad, 2 * s), np.int64)
    mat[:p.out_c, patch_positions(p)] = p.w.reshape(p.out_c, -1).astype(np.int64)
    quad = mat.reshape(cpad // 2, 2, s, 2)  # [pair of channels][channel][k pair][half]
    if packed:
        quad[:, 1] -= quad[:, 0] < 0
    b = quad & 0xFF
    words = b[:, 0, :, 0] | (b[:, 1, :, 0] << 8) | (b[:, 0, :, 1] << 16) | (b[:, 1, :, 1] << 24)
    if group == 4:  # [group][pair in group][k pair] -> [group][k pair][pair in group]
        words = words.reshape(cpad // 4, 2, s).transpose(0, 2, 1)
    return np.ascontiguousarray(words).astype(np.uint32).ravel()


def records(p: ConvParams, plan: Plan) -> np.ndarray:
    """int32 {bias, mult, shift, half} per channel (quant_records, accumulator doubled).

    Packed: the odd channel's bias slot holds T's start, bias_c + 256 bias_{c+1} (mod 2^32).
    """
    fb = fold_input_zero_point(p.bias, p.w, p.in_zp)
    rec = quant_records(fb, p.mult, p.shift, p.out_zp, plan.mode, pad_to=plan.chans,
                        double_bias=False).astype(np.int64)
    if plan.packed:
        rec[1::2, 0] = rec[0::2, 0] + 256 * rec[1::2, 0]
    return i32(rec).ravel()


def needs_window(p: ConvParams) -> bool:
    """Can a window leave the input (then border pixels are gathered through a buffer)?"""
    last_y = (p.out_h - 1) * p.stride_h - p.pad_t + (p.k_h - 1) * p.dil_h
    last_x = (p.out_w - 1) * p.stride_w - p.pad_l + (p.k_w - 1) * p.dil_w
    return p.pad_t > 0 or p.pad_l > 0 or last_y >= p.in_h or last_x >= p.in_w


def scratch_bytes(p: ConvParams, plan: Plan | None = None) -> int:
    """The interleaved patch (4 bytes per k pair and pixel), the dense border window (only
    when some window leaves the input), outputs of one block when the layer has fewer
    pixels than a block."""
    plan = plan or layer_plan_of(p)
    k = p.k_h * p.k_w * p.in_c
    win = (k + 3) & ~3 if needs_window(p) else 0
    few = plan.pixels * p.out_c if p.out_h * p.out_w < plan.pixels else 0
    return 4 * plan.pixels * k_pairs(p) + win + few


def requant_mode(p: ConvParams) -> int:
    return fast_requant_mode(p.w, fold_input_zero_point(p.bias, p.w, p.in_zp), p.shift, p.mult,
                             p.out_zp, p.act_min, p.act_max)


def _copy_fn(name: str, ops: list[CopyOp], offs: np.ndarray,
             loop: tuple[int, int | str, int] | None, ways: int) -> str:
    """C of one unrolled patch copy; ``loop`` = (rows, source row step, patch words per row).

    ``ways``: pixels interleaved in the patch (pair p of this pixel at word ways * p). A row
    step given as a name is a parameter of the function, which is then not inlined (compact
    code: one copy serves the interior and the border window).
    """
    shared = loop is not None and isinstance(loop[1], str)
    head = "static __attribute__((noinline)) void" if shared else \
        "static inline __attribute__((always_inline)) void"
    extra = f", int {loop[1]}" if shared and loop is not None else ""
    lines = [f"{head} {name}(const int8_t *__restrict s, uint32_t *__restrict d{extra})", "{"]
    ind = "    "
    if loop is not None:
        rows, sstep, dstep = loop
        lines.append(f"    for (int r = 0; r < {rows}; r++, s += {sstep}, d += {dstep}) {{")
        ind = "        "
    words = [op for op in ops if op.kind == "w4"]
    # why batches of 4: the loads then issue back to back (pipelined, 1 cycle each), which
    # gcc does not do by itself across the stores.
    for start in range(0, len(words), 4):
        batch = words[start:start + 4]
        lines.append(f"{ind}{{")
        n = len(batch)
        names = ", ".join(f"v{i}" for i in range(n))
        where = ", ".join(str(offs[op.q]) for op in batch)
        lines.append(f"{ind}uint32_t {names};")
        lines.append(f"{ind}CGEMM_LDR{n}(s, {where}, {names});")
        for i, op in enumerate(batch):
            pr = op.q // 2
            lines.append(f"{ind}d[{ways * pr}] = edgenn_sxtb16(v{i});")
            lines.append(f"{ind}d[{ways * pr + ways}] = cgemm_sxtb16_ror8(v{i});")
        lines.append(f"{ind}}}")
    for op in ops:
        pr = op.q // 2
        if op.kind == "p2":
            lines.append(f"{ind}d[{ways * pr}] = (uint32_t)(uint16_t)s[{offs[op.q]}] | "
                         f"((uint32_t)(int32_t)s[{offs[op.q + 1]}] << 16);")
        elif op.kind == "s1":  # the other half meets a zero weight
            lines.append(f"{ind}d[{ways * pr}] = (uint32_t)(int32_t)s[{offs[op.q]}];")
    if loop is not None:
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines)


def _q(text: str) -> str:
    """One asm line as a C string literal."""
    return '"' + text + '\\n\\t"'


def _unroll(s: int) -> int:
    """k pairs per loop iteration: 32 when the loop runs at least twice (its 8-cycle overhead
    per iteration then costs 1.5% instead of 3%, for ~0.9 KB more code), else 16; compact
    code (``codesize.is_compact``): COMPACT_UNROLL."""
    if is_compact():
        return COMPACT_UNROLL
    return 2 * UNROLL if s - 1 >= 4 * UNROLL else UNROLL


@dataclass(frozen=True)
class KLoop:
    """Shape of a block's K loop after its first step: ``straight`` steps, then ``loops``
    iterations of ``u`` steps, the first entered at step ``skip`` (0: a full iteration)."""

    straight: int
    loops: int
    u: int
    skip: int


def _loop_shape(s: int) -> KLoop:
    """The K loop of ``s`` k pairs.

    Default code: as many iterations as U-step iterations would take (the same loop
    overhead), the remainder spread over them (u = (s - 1) // loops >= U) so that fewer
    than ``loops`` steps run straight, not up to U - 1 (~50 bytes each); a loop that would
    run once runs straight. Compact code: U = COMPACT_UNROLL steps whose partial first
    iteration is entered by a branch (3 cycles and one more iteration's glue, ~8 cycles, per
    block) instead of straight steps.
    """
    n, u = s - 1, _unroll(s)
    if is_compact():
        if n <= u:
            return KLoop(n, 0, u, 0)
        return KLoop(0, -(-n // u), u, (u - n % u) % u)
    loops = n // u
    if loops <= 1:
        return KLoop(n, 0, u, 0)
    u = n // loops
    return KLoop(n - loops * u, loops, u, 0)


def _first_step(plan: Plan) -> list[str]:
    """The first k pair: adds the biases (through the ``rq`` operand) instead of starting from
    initialised accumulators; accumulators not yet live hold inputs meanwhile."""
    if plan.pixels == 2:  # 2 pixels x 4 channels: a/b = pixels 0/1 of channels 0,1; c/d: 2,3
        return [_q(t) for t in (
            "ldr %[xa], %[rq]", "ldr %[a0], [%[xa]]", "ldr %[a1], [%[xa], #16]",
            "ldr %[c0], [%[xa], #32]", "ldr %[c1], [%[xa], #48]", "ldr %[wv], [%[wp]]",
            "ldr %[xa], [%[xp]]", "ldr %[xb], [%[xp], #4]", "sxtb16 %[wt], %[wv]",
            "smlad %[b0], %[xb], %[wt], %[a0]", "smlad %[b1], %[xb], %[wv], %[a1]",
            "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]",
            "ldr %[wv], [%[wp], #4]", "sxtb16 %[wt], %[wv]",
            "smlad %[d0], %[xb], %[wt], %[c0]", "smlad %[d1], %[xb], %[wv], %[c1]",
            "smlad %[c0], %[xa], %[wt], %[c0]", "smlad %[c1], %[xa], %[wv], %[c1]")]
    # 4 pixels (a..d) x 2 channels (0, 1); packed: the raw word serves channel 1 (T)
    split = () if plan.packed else ("sxtb16 %[wv], %[wv], ror #8",)
    return [_q(t) for t in (
        "ldr %[xa], %[rq]", "ldr %[a0], [%[xa]]", "ldr %[a1], [%[xa], #16]",
        "ldr %[wv], [%[wp]]", "ldr %[xa], [%[xp]]", "ldr %[xb], [%[xp], #4]",
        "ldr %[c0], [%[xp], #8]", "ldr %[d0], [%[xp], #12]",
        "sxtb16 %[wt], %[wv]", *split,
        "smlad %[c1], %[c0], %[wv], %[a1]", "smlad %[c0], %[c0], %[wt], %[a0]",
        "smlad %[d1], %[d0], %[wv], %[a1]", "smlad %[d0], %[d0], %[wt], %[a0]",
        "smlad %[b0], %[xb], %[wt], %[a0]", "smlad %[b1], %[xb], %[wv], %[a1]",
        "smlad %[a0], %[xa], %[wt], %[a0]", "smlad %[a1], %[xa], %[wv], %[a1]")]


def _add(reg: str, imm: int) -> list[str]:
    """``reg += imm`` (nothing for 0)."""
    if not imm:
        return []
    return [_q(f"add %[{reg}], %[{reg}], #{imm}" if imm > 0 else
               f"sub %[{reg}], %[{reg}], #{-imm}")]


def _mac_asm(s: int, plan: Plan) -> list[str]:
    """Asm lines (C string literals) of the K loop of one block, ``s`` k pairs: the first
    step, straight steps, then a loop of u steps (:func:`_loop_shape`) whose first iteration
    may be entered at step ``skip`` (label 2: the pointers then start ``skip`` steps early so
    that the loop body's immediate offsets stay the same)."""
    if plan.pixels == 2:
        step, xstep, wstep = "CGEMM_PSTEP", 8, 8
    else:
        step, xstep, wstep = ("CGEMM_P4STEP" if plan.packed else "CGEMM_STEP"), 16, 4
    kl = _loop_shape(s)
    asm = _first_step(plan) + [f"{step}({xstep * i}, {wstep * i})"
                               for i in range(1, kl.straight + 1)]
    if not kl.loops:
        return asm
    start = kl.straight + 1 - kl.skip  # steps from the patch start to the loop pointer
    asm += _add("xp", xstep * start) + _add("wp", wstep * start)
    if kl.skip:
        asm.append(_q("b 2f"))
    asm.append('"1:\\n\\t"')
    for i in range(kl.u):
        if kl.skip and i == kl.skip:
            asm.append('"2:\\n\\t"')
        asm.append(f"{step}({xstep * i}, {wstep * i})")
    asm += [_q(f"add %[xp], %[xp], #{xstep * kl.u}"), _q(f"add %[wp], %[wp], #{wstep * kl.u}"),
            _q("ldr %[xa], %[end]"), _q("cmp %[xp], %[xa]"), _q("bne 1b")]
    return asm


def _outputs(plan: Plan) -> list[tuple[str, int, int]]:
    """(asm accumulator, pixel, channel) of a block, in C ``acc[]`` order."""
    if plan.pixels == 2:
        return [("a0", 0, 0), ("a1", 0, 1), ("b0", 1, 0), ("b1", 1, 1),
                ("c0", 0, 2), ("c1", 0, 3), ("d0", 1, 2), ("d1", 1, 3)]
    return [(f"{r}{h}", j, h) for j, r in enumerate("abcd"[:plan.pixels]) for h in range(2)]


def _requant_asm(p: ConvParams, plan: Plan, nch: int) -> list[str]:
    """Asm requantizing and storing channels 0..nch-1 of the block (fast modes only).

    high = SMMULR(2 acc, mult) + half in one SMMLAR; the rounding term (high >> 31) takes the
    sign of 2 acc instead (they differ only when high == 0, where adding -1 to
    2^(r-1) + (out_zp << r) cannot change the shift); SSAT 8, then max with act_min in mode
    1. xp = the records of the group, wp = pixel 0's output at the group's first channel.
    """
    out = [_q("ldr %[xp], %[rq]"), _q("ldr %[wp], %[oq]")]
    for ch in range(nch):
        out += [_q(f"ldr %[xa], [%[xp], #{16 * ch + 4}]"),
                _q(f"ldr %[xb], [%[xp], #{16 * ch + 8}]"),
                _q(f"ldr %[wv], [%[xp], #{16 * ch + 12}]")]
        for reg, j, c in _outputs(plan):
            if c != ch:
                continue
            a = f"%[{reg}]"
            if not plan.packed:  # packed: the recovery already produced 2 acc
                out.append(_q(f"add {a}, {a}, {a}"))
            out += [_q(f"smmlar %[wt], {a}, %[xa], %[wv]"), _q(f"add {a}, %[wt], {a}, asr #31"),
                    _q(f"asr {a}, {a}, %[xb]"), _q(f"ssat {a}, #8, {a}")]
            if plan.mode == 1:
                out += [_q(f"cmp {a}, #{p.act_min}"), _q("it lt"),
                        _q(f"movlt {a}, #{p.act_min}")]
            out.append(_q(f"strb {a}, [%[wp], #{j * p.out_c + ch}]"))
    return out


def _recover_asm(regs: str = "acbd") -> list[str]:
    """Packed: 2 acc of all 4 channels from U (= acc[c]) and T (= acc[c] + 256 acc[c+1]);
    ``regs``: the accumulator pairs to recover (window_conv's 3-pixel blocks use a, b, c)."""
    out = []
    for r in regs:
        u, t = f"{r}0", f"{r}1"
        out += [_q(f"sub %[{t}], %[{t}], %[{u}]"), _q(f"asr %[{t}], %[{t}], #7"),
                _q(f"add %[{u}], %[{u}], %[{u}]")]
    return out


_ASM_DECLS = """    int32_t a0, a1, b0, b1, c0, c1, d0, d1;
    uint32_t xa, xb, wv, wt;"""


def _block_fns(p: ConvParams, plan: Plan, s: int) -> str:
    """@P@_mac (accumulators to C), @P@_blkc (C requant) and, in the fast modes on DSP
    cores, @P@_blk<n> (asm MAC + requant + store of the block's first n channels)."""
    mac = "\n        ".join(_mac_asm(s, plan))
    words = plan.pixels * s
    if plan.pixels == 2:
        init = ("    acc[0] = acc[2] = r[0]; acc[1] = acc[3] = r[4];\n"
                "    acc[4] = acc[6] = r[8]; acc[5] = acc[7] = r[12];\n"
                f"    for (int p = 0; p < {s}; p++) cgemm_pstep_c(x + 2 * p, w + 2 * p, acc);")
    else:
        step_c = "cgemm_p4step_c" if plan.packed else "cgemm_step_c"
        init = ("    for (int j = 0; j < 8; j++) acc[j] = r[4 * (j & 1)];\n"
                f"    for (int p = 0; p < {s}; p++) {step_c}(x + 4 * p, w[p], acc);")
    if plan.packed:
        value = ("static inline __attribute__((always_inline)) int32_t @P@_val(const int32_t *acc,"
                 " int i)\n{\n"
                 "    const uint32_t u = (uint32_t)acc[i & ~1], t = (uint32_t)acc[i | 1];\n"
                 "    return (i & 1) ? (int32_t)(t - u) >> 7 : (int32_t)(2u * u);\n}")
    else:
        value = ("static inline __attribute__((always_inline)) int32_t @P@_val(const int32_t *acc,"
                 " int i)\n{\n"
                 + ("    return (int32_t)(2u * (uint32_t)acc[i]);\n}" if plan.mode else
                    "    return acc[i];\n}"))
    outs = _outputs(plan)
    stores = "\n".join(
        f"    if ({c} < nch) o[{j * p.out_c + c}] = @P@_rq(@P@_val(acc, {i}), r + {4 * c});"
        for i, (_, j, c) in enumerate(outs))
    text = f"""static inline __attribute__((always_inline)) void @P@_mac(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int32_t *acc)
{{
#if EDGENN_HAVE_DSP
{_ASM_DECLS}
    const uint32_t *end = x + {words};
    __asm__ volatile(
        {mac}
        : CGEMM_OPERANDS
        : [end] "m"(end), [rq] "m"(r)
        : "cc", "memory");
    acc[0] = a0; acc[1] = a1; acc[2] = b0; acc[3] = b1;
    acc[4] = c0; acc[5] = c1; acc[6] = d0; acc[7] = d1;
#else
{init}
#endif
}}

{value}

static inline __attribute__((always_inline)) void @P@_blkc(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int8_t *o, int nch)
{{
    int32_t acc[8];
    @P@_mac(x, w, r, acc);
{stores}
}}
"""
    if not plan.mode:
        return text
    for nch in sorted({plan.chans, p.out_c % plan.chans} - {0}):
        req = (_recover_asm() if plan.packed else []) + _requant_asm(p, plan, nch)
        reqs = "\n        ".join(req)
        text += f"""
#if EDGENN_HAVE_DSP
/* MAC + requantize + store the block's first {nch} channels (o: pixel 0, first channel) */
static inline __attribute__((always_inline)) void @P@_blk{nch}(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int8_t *o)
{{
{_ASM_DECLS}
    const uint32_t *end = x + {words};
    __asm__ volatile(
        {mac}
        {reqs}
        : CGEMM_OPERANDS
        : [end] "m"(end), [rq] "m"(r), [oq] "m"(o)
        : "cc", "memory");
}}
#else
#define @P@_blk{nch}(x, w, r, o) @P@_blkc(x, w, r, o, {nch})
#endif
"""
    # every full group in one asm statement: the group loop's state (records, outputs, the
    # next group's weights) lives in stack slots, cheaper than gcc's reloads around each call
    groups = p.out_c // plan.chans
    if not groups:
        return text
    wstep = 8 if plan.pixels == 2 else 4
    adv = [] if _loop_shape(s).loops else [_q(f"add %[wp], %[wp], #{wstep * s}")]
    req = (_recover_asm() if plan.packed else []) + _requant_asm(p, plan, plan.chans)
    body = "\n        ".join(
        ['"9:\\n\\t"', *_mac_asm(s, plan), *adv, _q("str %[wp], %[ws]"), *req,
         _q(f"add %[xp], %[xp], #{16 * plan.chans}"), _q("str %[xp], %[rq]"),
         _q(f"add %[wp], %[wp], #{plan.chans}"), _q("str %[wp], %[oq]"),
         _q("ldr %[xa], %[rend]"), _q("cmp %[xp], %[xa]"), _q("ldr %[wp], %[ws]"),
         _q("ldr %[xp], %[xq]"), _q("bne 9b")])
    text += f"""
#if EDGENN_HAVE_DSP
/* all {groups} full groups of channels: MAC + requantize + store */
static inline __attribute__((always_inline)) void @P@_blkall(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int8_t *o)
{{
{_ASM_DECLS}
    const uint32_t *const end = x + {words};
    const uint32_t *const x0 = x;
    const int32_t *const rend = r + {16 * groups * plan.chans // 4};
    const uint32_t *ws;
    __asm__ volatile(
        {body}
        : CGEMM_OPERANDS, [rq] "+m"(r), [oq] "+m"(o), [ws] "=m"(ws)
        : [end] "m"(end), [rend] "m"(rend), [xq] "m"(x0)
        : "cc", "memory");
}}
#else
static inline __attribute__((always_inline)) void @P@_blkall(const uint32_t *x,
    const uint32_t *w, const int32_t *r, int8_t *o)
{{
    for (int c = 0; c < {groups}; c++, w += {plan.chans // 2 * s}, r += {4 * plan.chans},
         o += {plan.chans}) @P@_blkc(x, w, r, o, {plan.chans});
}}
#endif
"""
    return text


def _rq_fn(p: ConvParams, mode: int) -> str:
    """@P@_rq: requantize one value (2 acc in the fast modes, acc in the exact one)."""
    if mode:
        clamp = "" if mode == 2 else f"    v = v < {p.act_min} ? {p.act_min} : v;\n"
        body = ("    int32_t v = edgenn_ssat8(edgenn_requant_doubled(v2, r[1], r[2], r[3]));\n"
                + clamp + "    return (int8_t)v;")
    else:
        body = (f"    return (int8_t)edgenn_requant_s32(v2, r[1], r[2], {p.out_zp}, {p.act_min}, "
                f"{p.act_max});")
    return ("static inline __attribute__((always_inline)) int8_t @P@_rq(int32_t v2, "
            "const int32_t *r)\n{\n" + body + "\n}")


def generate(p: ConvParams, plan: Plan) -> str:
    """All per-layer C of the kernel (``@P@`` = the layer's prefix)."""
    k = p.k_h * p.k_w * p.in_c
    row = p.k_w * p.in_c
    s = k_pairs(p)
    px, cg = plan.pixels, plan.chans
    offs = interior_offsets(p)
    dense = np.arange(k, dtype=np.int64)
    win = needs_window(p)
    if row_loop(p) and p.dil_w == 1 and is_compact():
        # rows are dense in the input too: one copy function, the row step a parameter
        ops = plan_ops(offs, row)
        cpr = _copy_fn("@P@_cpr", ops, offs, (p.k_h, "st", px * row // 2), px)
        wrap = ("static inline __attribute__((always_inline)) void @P@_{0}("
                "const int8_t *s, uint32_t *d)\n{{\n    @P@_cpr(s, d, {1});\n}}")
        cpi = cpr + "\n\n" + wrap.format("cpi", p.dil_h * p.in_w * p.in_c)
        cpw = wrap.format("cpw", row)
    elif row_loop(p):
        ops = plan_ops(offs, row)
        dstep = px * row // 2
        cpi = _copy_fn("@P@_cpi", ops, offs, (p.k_h, p.dil_h * p.in_w * p.in_c, dstep),
                       px)
        cpw = _copy_fn("@P@_cpw", ops, dense, (p.k_h, row, dstep), px)
    else:
        ops = plan_ops(offs, k)
        cpi = _copy_fn("@P@_cpi", ops, offs, None, px)
        cpw = _copy_fn("@P@_cpw", ops, dense, None, px)
    if not win:
        cpw = ""
    npix = p.out_h * p.out_w
    groups, tail = divmod(p.out_c, cg)
    iy_max = p.in_h - 1 - (p.k_h - 1) * p.dil_h
    ix_max = p.in_w - 1 - (p.k_w - 1) * p.dil_w
    zp = "zp"  # a parameter: layers that differ only in it share the code
    few = npix < px  # fewer pixels than a block: outputs go through a scratch buffer
    win_bytes = (k + 3) & ~3 if win else 0
    blk = "@P@_blk" if plan.mode else "@P@_blkc"
    full_call = f"{blk}{cg}(buf, w, r, o);" if plan.mode else \
        f"@P@_blkc(buf, w, r, o, {cg});"
    if plan.mode:
        group_code = (f"        @P@_blkall(buf, w, r, o);\n"
                      f"        w += {groups * (cg // 2) * s}; r += {4 * cg * groups}; "
                      f"o += {cg * groups};" if groups else "")
    else:
        group_code = (f"        for (int c = 0; c < {groups}; c++, w += {cg // 2 * s}, "
                      f"r += {4 * cg}, o += {cg}) {{\n            {full_call}\n        }}")
    tail_call = ""
    if tail:
        tail_call = (f"        {blk}{tail}(buf, w, r, o);\n" if plan.mode else
                     f"        @P@_blkc(buf, w, r, o, {tail});\n")
    if few:
        first = "const int p0 = 0;"
        advance = f"if (j + 1 < {npix}) {{ if (++ox == {p.out_w}) {{ ox = 0; oy++; }} }}"
        obase = f"(int8_t *)scratch + {4 * px * s + win_bytes}"
        flush = f"        cgemm_copy(out, (int8_t *)scratch + {4 * px * s + win_bytes}, " \
                f"{npix * p.out_c});\n"
    else:
        first = f"const int p0 = pa < {npix - px} ? pa : {npix - px};"
        advance = f"if (++ox == {p.out_w}) {{ ox = 0; oy++; }}"
        obase = f"out + p0 * {p.out_c}"
        flush = ""
    src = f"in + (iy0 * {p.in_w} + ix0) * {p.in_c}"
    cp_i = f"@P@_cpi({src}, d);"
    cp_w = "@P@_cpw(win, d);"
    if p.in_c % 4 == 0:  # whole words (unaligned allowed): 4x fewer steps than bytes
        tap_fill = (f"for (int i = 0; i < {p.in_c}; i += 4) "
                    f"edgenn_store32(wr + kx * {p.in_c} + i, (uint32_t)(uint8_t)zp * 0x01010101u);")
        tap_copy = (f"for (int i = 0; i < {p.in_c}; i += 4) edgenn_store32(wr + kx * {p.in_c} + i, "
                    f"edgenn_load32(sr + ix * {p.in_c} + i));")
    else:
        tap_fill = f"cgemm_fill(wr + kx * {p.in_c}, {p.in_c}, {zp});"
        tap_copy = f"cgemm_copy(wr + kx * {p.in_c}, sr + ix * {p.in_c}, {p.in_c});"
    if win:
        border = f"""    /* border: gather a dense window, padding taps = the input zero point */
    int8_t *win = (int8_t *)buf + {4 * px * s};
    for (int ky = 0; ky < {p.k_h}; ky++) {{
        const int iy = iy0 + ky * {p.dil_h};
        int8_t *wr = win + ky * {row};
        if (iy < 0 || iy >= {p.in_h}) {{
            cgemm_fill(wr, {row}, {zp});
            continue;
        }}
        const int8_t *sr = in + iy * {p.in_w * p.in_c};
        for (int kx = 0; kx < {p.k_w}; kx++) {{
            const int ix = ix0 + kx * {p.dil_w};
            if (ix < 0 || ix >= {p.in_w}) {tap_fill}
            else {tap_copy}
        }}
    }}
    {cp_w}"""
        inside = (f"    if (iy0 >= 0 && iy0 <= {iy_max} && ix0 >= 0 && ix0 <= {ix_max}) {{\n"
                  f"        {cp_i}\n        return;\n    }}\n{border}")
    else:  # every window lies inside the input
        inside = f"    (void)zp;\n    {{\n        {cp_i}\n    }}"
    return f"""
/* conv_gemm: {p.in_h}x{p.in_w}x{p.in_c} -> {p.out_h}x{p.out_w}x{p.out_c}, {p.k_h}x{p.k_w},
 * stride {p.stride_h},{p.stride_w}, dilation {p.dil_h},{p.dil_w}, K = {k} ({s} pairs),
 * {px} pixels x {cg} channels, {"packed-pair" if plan.packed else "signed"} weights,
 * requantization mode {plan.mode} */
{cpi}

{cpw}

/* the patch of output pixel (oy, ox) into slot j (buf + j, one word per slot and pair) */
static void @P@_patch(const int8_t *in, uint32_t *buf, int j, int oy, int ox, int8_t zp)
{{
    uint32_t *d = buf + j;
    const int iy0 = oy * {p.stride_h} - {p.pad_t};
    const int ix0 = ox * {p.stride_w} - {p.pad_l};
{inside}
}}

{_rq_fn(p, plan.mode)}

{_block_fns(p, plan, s)}

static void @P@_conv(const int8_t *in, int8_t *out, void *scratch, const uint32_t *w0,
    const int32_t *r0, int8_t zp)
{{
    uint32_t *buf = (uint32_t *)scratch;
    for (int pa = 0; pa < {npix}; pa += {px}) {{
        {first}
        int oy = p0 / {p.out_w}, ox = p0 - oy * {p.out_w};
        for (int j = 0; j < {px}; j++) {{
            @P@_patch(in, buf, j, oy, ox, zp);
            {advance}
        }}
        int8_t *o = {obase};
        const uint32_t *w = w0;
        const int32_t *r = r0;
{group_code}
{tail_call}{flush}    }}
}}
"""


def shared_code(p: ConvParams, plan: Plan) -> str:
    """The layer's code: :func:`generate`'s functions under a name derived from their text
    (``cgemm_<hash>``), defined once per model (an include guard), so layers of the same
    shape and requantization form share them (~3 KB each on IC ResNet-8's twin 16->16 3x3
    layers); the layer's ``@P@_conv`` passes its weights, records and input zero point."""
    body = generate(p, plan)
    name = "cgemm_" + hashlib.sha1(body.encode()).hexdigest()[:12]
    guard = name.upper() + "_DEFINED"
    return (f"#ifndef {guard}\n#define {guard}\n{body.replace('@P@', name)}\n#endif\n\n"
            "static inline __attribute__((always_inline)) void @P@_conv(const int8_t *in, "
            "int8_t *out, void *scratch)\n{\n"
            f"    {name}_conv(in, out, scratch, @P@_w, @P@_quant, {p.in_zp});\n}}\n")


def _claims(node: Node, graph: Graph, core: Core) -> bool:
    if not dsp_dense_conv(node, graph, core):
        return False
    w = graph.tensor(node.inputs[1])
    if w.data is None or len(w.shape) != 4:
        return False
    _, kh, kw, cin = w.shape
    if kh * kw == 1 or cin != graph.tensor(node.inputs[0]).shape[3]:
        return False
    k = kh * kw * cin
    # why 1024: the requantization stores with 12-bit immediate offsets up to 3 * Cout + 3
    cout = graph.tensor(node.outputs[0]).shape[3]
    return cout <= 1024 and 16 * ((k + 1) // 2) + k + 3 + 4 * cout <= MAX_SCRATCH


class ConvGemm:
    """General int8 Conv2D: generated im2col + 4x2 / 2x4 SMLAD asm, int8 weights."""

    op = "Conv2D"
    priority = 25  # above the portable edgenn_conv_s8 (0); 1x1 kernels elsewhere
    name = "edgenn_conv_s8_gemm_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        return _claims(node, graph, core)

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        p = conv_params(node, graph)
        plan = layer_plan_of(p, arena_room(node, graph))
        return KernelCall(
            call=generated("conv", self.name, IN0, OUT0, SCRATCH),
            sources=("edgenn_conv_s8_gemm_dsp.h",),
            arrays=(CArray("w", "uint32_t", pack_weights(p, plan.packed, plan.chans)),
                    CArray("quant", "int32_t", records(p, plan))),
            scratch_bytes=scratch_bytes(p, plan),
            comment=f"{p.in_h}x{p.in_w}x{p.in_c} -> {p.out_h}x{p.out_w}x{p.out_c}, "
            f"{p.k_h}x{p.k_w} stride {p.stride_h},{p.stride_w}, "
            f"{plan.pixels}x{plan.chans} SMLAD int8 weights (requant mode {plan.mode}"
            f"{', packed pairs' if plan.packed else ''})",
            code=shared_code(p, plan),
        )


register_kernel(ConvGemm())
