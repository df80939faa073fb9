"""Cortex-M kernel of FusedConvChain: conv chains over row rings.

C side: ``c/edgenn_fused_chain_s8_dsp.c``.

The intermediate maps of a fused chain never exist: member k reads a ring of KH_k rows that
member k-1 fills on demand. Generation-time layout (this module) and its reasons:

* every ring (the chain input's too) stores int16 values minus the reading member's input
  zero point, widened once when the row is produced; the reader's left/right padding columns
  are zeros and a shared zero row stands for padding rows, so the reader's bias needs no
  input-offset folding and its loops no bounds checks;
* weights are packed as int16 pairs in the order the loops read them: per group of 4 output
  channels, per kernel row ky, the KW*C contiguous taps in pairs (odd counts padded with a
  zero weight), 4 channel words per pair (:func:`pack_ring_weights`); a 1-input-channel first
  member in the pair variant uses the channel-stationary packing of ``fast_conv1ch``;
  depthwise members use one int32 word per weight, [ky][kx][channel];
* requantization is TFLite Micro's double rounding, or the single-SMMULR form when
  :func:`ring_fast_mode` proves it equal (ring inputs span [-255, 255], not [-128, 127]).

``scratch_bytes`` = rings + slack (only for odd tap pairs / odd widths) + zero row (only when
a window reaches a padding row) + the 1-channel gather row (none when it fits the chain
output's next row, which is free until the last member writes it): the memory planner places
it; the chain is one layer to it. Variants: "ring_modulo" (b), "ring_hoisted" (c),
"ring_hoisted_pair" (d); the ring format is the same in all three, so the ablation measures
only the addressing (b vs c) and the 2-pixel SMLAD reuse (c vs d).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.backends.cortexm.ccall import IN0, OUT0, SCRATCH, Array, Calls, c_call, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.conv import ConvParams, conv_params
from edgenn.backends.cortexm.kernels.fast_common import fast_requant_mode, quant_records
from edgenn.backends.cortexm.kernels.fast_conv1ch import pack_conv1ch_weights, tap_pairs
from edgenn.backends.cortexm.kernels.fused_residual import residual_code
from edgenn.backends.cortexm.kernels.fused_rows import plan_rows, rows_call
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node, Tensor

VARIANT_CODES = {"ring_modulo": 0, "ring_hoisted": 1, "ring_hoisted_pair": 2}
KIND_GENERAL, KIND_ONE_CHANNEL, KIND_DEPTHWISE = 0, 1, 2
# edgenn_fused_chain_s8_dsp.h FUSED_META_HEADER / FUSED_META_FIELDS
META_HEADER, META_FIELDS = 8, 32
MAX_KH, MAX_MEMBERS = 16, 16  # FUSED_MAX_KH / FUSED_MAX_MEMBERS
# the order of the FM_* enum in edgenn_fused_chain_s8_dsp.c
MEMBER_FIELDS = ("in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "kh", "kw", "sh", "sw",
                 "pad_t", "pad_l", "kind", "fast", "out_zp", "act_lo", "act_hi", "in_zp",
                 "ring_off", "ring_rows", "ring_wp", "w_off", "q_off", "kp", "tp", "dw_mult")


def _align4(n: int) -> int:
    return -(-n // 4) * 4


def member_graph(node: Node, graph: Graph, k: int) -> Graph:
    """A one-node graph of member ``k`` (its input/output are intermediates of the chain)."""
    members: tuple[Node, ...] = tuple(node.attr("members"))
    inter: tuple[Tensor, ...] = tuple(node.attr("intermediates"))
    m = members[k]
    x = graph.tensor(node.inputs[0]) if k == 0 else inter[k - 1]
    y = inter[k] if k < len(inter) else graph.tensor(node.outputs[0])
    tensors = {x.name: x, y.name: y}
    for name in m.inputs[1:]:
        if name:
            tensors[name] = graph.tensor(name)
    m_io = Node(m.name, m.op, (x.name, *m.inputs[1:]), (y.name,), dict(m.attrs))
    return Graph(f"{graph.name}/{m.name}", tensors, (m_io,), (x.name,), (y.name,))


def ring_fast_mode(p: ConvParams) -> int:
    """The fast requantization mode (0 = exact double rounding) for ring inputs.

    Ring values are x - zp in [-255, 255]; ``fast_requant_mode`` bounds |acc| by
    |b| + 128 * sum|w|, so it is given b' = |b| + 127 * sum|w| to bound |b| + 255 * sum|w|.
    """
    w_abs = np.abs(p.w.reshape(p.out_c, -1).astype(np.int64)).sum(axis=1)
    b = np.abs(np.asarray(p.bias, np.int64)) + 127 * w_abs
    return fast_requant_mode(p.w, b, p.shift, p.mult, p.out_zp, p.act_min, p.act_max)


def pack_ring_weights(w: np.ndarray, scale: int = 1) -> np.ndarray:
    """int8 [Cout, KH, KW, Cin] -> uint32 [Cout/4][KH][kp][4]: per ky, the KW*Cin taps in
    int16 pairs (the ring's NHWC order), channels padded to 4, odd tap counts zero-padded."""
    cout, kh, kw, cin = w.shape
    kp = (kw * cin + 1) // 2
    cpad = _align4(cout)
    mat = np.zeros((cpad, kh, 2 * kp), np.int64)
    mat[:cout, :, : kw * cin] = w.reshape(cout, kh, kw * cin).astype(np.int64) * scale
    words = ((mat[..., 0::2] & 0xFFFF) | ((mat[..., 1::2] & 0xFFFF) << 16)).astype(np.uint32)
    return np.ascontiguousarray(words.reshape(cpad // 4, 4, kh, kp).transpose(0, 2, 3, 1)).ravel()


def pack_depthwise(w: np.ndarray, scale: int = 1) -> np.ndarray:
    """int8 [Cout, KH, KW, 1] -> int32 words [KH][KW][Cout] (as uint32 bit patterns)."""
    v = w[..., 0].transpose(1, 2, 0).astype(np.int64) * scale
    return (v & 0xFFFFFFFF).astype(np.uint32).ravel()


@dataclass(frozen=True)
class ChainPlan:
    """Everything the C call needs: the three constant arrays and the scratch size."""

    meta: np.ndarray
    w: np.ndarray
    quant: np.ndarray
    scratch_bytes: int
    ring_bytes: int  # rings + zero row (the memset part)
    kinds: tuple[int, ...]
    fast: tuple[int, ...]


def _kind(p: ConvParams, variant: int) -> int:
    if p.depthwise:
        return KIND_DEPTHWISE
    if p.in_c == 1 and variant == VARIANT_CODES["ring_hoisted_pair"] and p.k_h * p.k_w <= 49:
        return KIND_ONE_CHANNEL
    return KIND_GENERAL


def plan_chain(node: Node, graph: Graph) -> ChainPlan:
    """Lay out the rings, pack the weights and quantization records of a FusedConvChain."""
    variant_name = str(node.attr("variant", "ring_hoisted_pair"))
    if variant_name not in VARIANT_CODES:
        raise UnsupportedOperatorError(f"{node}: unknown fusion variant {variant_name!r}")
    variant = VARIANT_CODES[variant_name]
    members = tuple(node.attr("members"))
    if not 2 <= len(members) <= MAX_MEMBERS:
        raise UnsupportedOperatorError(f"{node}: {len(members)} members (2..{MAX_MEMBERS})")
    params = [conv_params(members[k], member_graph(node, graph, k))
              for k in range(len(members))]
    rows: list[dict[str, int]] = []
    w_parts: list[np.ndarray] = []
    q_parts: list[np.ndarray] = []
    offset = w_off = q_off = max_row = gather = 0
    kinds, fasts = [], []
    for p in params:
        if p.dil_h != 1 or p.dil_w != 1 or p.k_h > MAX_KH or (p.groups > 1 and not p.depthwise):
            raise UnsupportedOperatorError(f"{node}: member {p.k_h}x{p.k_w} groups {p.groups} "
                                           "dilated or grouped convs are not fusable here")
        kind = _kind(p, variant)
        fast = ring_fast_mode(p)
        scale = 2 if fast else 1
        wp = max(p.pad_l + p.in_w + p.pad_r, (p.out_w - 1) * p.stride_w + p.k_w)
        # why slack: an odd pair reads one element past the taps (zero weight) and the
        # pair variant's odd last pixel reads one pixel step further (result discarded)
        slack = 2 * ((p.stride_w * p.in_c if p.out_w % 2 else 0)
                     + (2 if (p.k_w * p.in_c) % 2 else 0))
        kp = (p.k_w * p.in_c + 1) // 2
        tp = tap_pairs(p.k_h, p.k_w)
        if kind == KIND_DEPTHWISE:
            packed = pack_depthwise(p.w, scale)
        elif kind == KIND_ONE_CHANNEL:
            packed = pack_conv1ch_weights(p.w, scale)
            gather = max(gather, 4 * p.out_w * tp)
        else:
            packed = pack_ring_weights(p.w, scale)
        rec = quant_records(p.bias, p.mult, p.shift, p.out_zp, fast, pad_to=4)
        rows.append({
            "in_h": p.in_h, "in_w": p.in_w, "in_c": p.in_c, "out_h": p.out_h,
            "out_w": p.out_w, "out_c": p.out_c, "kh": p.k_h, "kw": p.k_w, "sh": p.stride_h,
            "sw": p.stride_w, "pad_t": p.pad_t, "pad_l": p.pad_l, "kind": kind, "fast": fast,
            "out_zp": p.out_zp, "act_lo": p.act_min, "act_hi": p.act_max, "in_zp": p.in_zp,
            "ring_off": offset, "ring_rows": p.k_h, "ring_wp": wp, "w_off": w_off,
            "q_off": q_off, "kp": kp, "tp": tp, "dw_mult": max(1, p.out_c // p.in_c),
        })
        offset += _align4(2 * p.k_h * wp * p.in_c + slack)
        max_row = max(max_row, 2 * wp * p.in_c + slack)
        w_parts.append(packed)
        q_parts.append(rec.ravel())
        w_off += packed.size
        q_off += rec.size
        kinds.append(kind)
        fasts.append(fast)
    # the shared zero row stands for padding rows: only needed when some window leaves the map
    need_zero = variant == VARIANT_CODES["ring_modulo"] or any(
        p.pad_t > 0 or (p.out_h - 1) * p.stride_h + p.k_h > p.in_h for p in params)
    zero_off = offset
    ring_end = offset + (_align4(max_row) if need_zero else 0)
    # why: the 1-channel gather row may live in the chain output's next row, which is not
    # written until every member below has produced what that row needs
    last = params[-1]
    out_row = last.out_w * last.out_c
    gather_in_out = int(gather > 0 and kinds[-1] != KIND_ONE_CHANNEL and out_row % 4 == 0
                        and gather <= out_row)
    meta = np.zeros(META_HEADER + META_FIELDS * len(params), np.int64)
    meta[:5] = (len(params), variant, zero_off, ring_end, out_row if gather_in_out else 0)
    if gather_in_out:
        gather = 0
    for k, row in enumerate(rows):
        base = META_HEADER + META_FIELDS * k
        meta[base: base + len(MEMBER_FIELDS)] = [row[f] for f in MEMBER_FIELDS]
    return ChainPlan(meta.astype(np.int32), np.concatenate(w_parts).astype(np.uint32),
                     np.concatenate(q_parts).astype(np.int32), ring_end + gather, ring_end,
                     tuple(kinds), tuple(fasts))


class FusedChainKernel:
    """FusedConvChain on any Cortex-M core (SMLAD assembly on DSP cores, plain C elsewhere)."""

    op = "FusedConvChain"
    priority = 10
    name = "edgenn_fused_chain_s8_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        x = graph.tensor(node.inputs[0])
        y = graph.tensor(node.outputs[0])
        return x.dtype is DType.INT8 and y.dtype is DType.INT8

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        variant = str(node.attr("variant", "ring_hoisted_pair"))
        names = ",".join(m.name for m in node.attr("members"))
        if variant == "ring_hoisted_pair" and core.has_dsp:
            # the per-layer kernels over row windows (fused_rows.py); the ring kernel below
            # stays for the ablation variants and for rows that are not word multiples
            rows = plan_rows(node, graph, core)
            if rows is not None:
                return rows_call(rows, variant, names)
        plan = plan_chain(node, graph)
        ring = c_call("edgenn_fused_chain_s8_dsp", IN0, OUT0, SCRATCH, Array("meta"), Array("w"),
                      Array("quant"))
        call: Calls = ring
        arrays: tuple[CArray, ...] = (
            CArray("meta", "int32_t", plan.meta), CArray("w", "uint32_t", plan.w),
            CArray("quant", "int32_t", plan.quant))
        sources: tuple[str, ...] = ("edgenn_fused_chain_s8_dsp.c",)
        code = ""
        if node.attr("residual", None) is not None:
            # the ring kernel writes the last member's map into the output, then the residual
            # Add runs over it in place (the output is never written over the input here)
            h = graph.tensor(node.outputs[0]).shape[1]
            res = residual_code(node, graph, core, h, "res")
            call = (ring, generated("res", res.kernel_name, IN0, OUT0, OUT0))
            arrays += res.arrays
            sources += tuple(s for s in res.sources if s not in sources)
            code = res.code
        return KernelCall(
            call=call,
            sources=sources,
            arrays=arrays,
            scratch_bytes=plan.scratch_bytes,
            comment=f"fused {names}: {variant}, rings {plan.ring_bytes} B",
            code=code,
        )


register_kernel(FusedChainKernel())
