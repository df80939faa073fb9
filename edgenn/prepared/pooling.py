"""The record of MaxPool2D and AvgPool2D (float32, int8, int16), as TFLite Micro prepares it.

Windows cover only in-bounds elements: ``count`` is, per output pixel, how many taps fall
inside the input (the full window with ONNX's ``count_include_pad``). Quantized pools compute
in the input's quantization (the fused activation's clamp in that quantization); ``requant``
rescales to a differently declared output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from edgenn.arith.fixed_point import activation_range, activation_range_float
from edgenn.errors import GraphValidationError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import activation_of, per_tensor
from edgenn.prepared.requant import QUANTIZED, Requant, output_requant


def in_bounds_counts(size: int, k: int, stride: int, pad0: int, out: int) -> np.ndarray:
    """For each output position along one axis, how many window taps fall inside the input."""
    starts = np.arange(out) * stride - pad0
    return np.minimum(starts + k, size) - np.maximum(starts, 0)


def div_round_half_away(acc: np.ndarray, count: np.ndarray) -> Any:
    """AvgPool2D's division: ``acc > 0 ? (acc + c/2) / c : (acc - c/2) / c`` with C's
    truncating division."""
    q = (np.abs(acc) + count // 2) // count
    return np.where(acc > 0, q, -q)


@dataclass(frozen=True)
class PoolParams:
    """A 2-D pool over NHWC. ``act_min`` / ``act_max`` are integers for quantized types (in
    the input's quantization), floats for float32; ``in_zp`` is 0 for float32."""

    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    k_h: int
    k_w: int
    stride_h: int
    stride_w: int
    pad_t: int
    pad_l: int
    pad_b: int
    pad_r: int
    dtype: DType
    in_zp: int
    act_min: int | float
    act_max: int | float
    count_include_pad: bool
    count: np.ndarray  # [1, OH, OW, 1] taps per output pixel (the divisor of AvgPool2D)
    requant: Requant | None

    @property
    def quantized(self) -> bool:
        return self.dtype in QUANTIZED

    @property
    def kernel(self) -> tuple[int, int]:
        return self.k_h, self.k_w

    @property
    def strides(self) -> tuple[int, int]:
        return self.stride_h, self.stride_w

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return self.pad_t, self.pad_l, self.pad_b, self.pad_r


def prepare_pool(node: Node, graph: Graph) -> PoolParams:
    """The record of a MaxPool2D / AvgPool2D node."""
    x = graph.tensor(node.inputs[0])
    _, h, w, c = x.shape
    _, oh, ow, _ = graph.tensor(node.outputs[0]).shape
    kh, kw = (int(k) for k in node.attr("kernel"))
    sh, sw = (int(s) for s in node.attr("strides", (1, 1)))
    pt, pl, pb, pr = (int(p) for p in node.attr("pads", (0, 0, 0, 0)))
    act = activation_of(node)
    lo: int | float
    hi: int | float
    zp = 0
    if x.dtype in QUANTIZED:
        q = per_tensor(node, x, "input")
        zp = q.zp
        lo, hi = activation_range(act, q, x.dtype)
    else:
        lo, hi = activation_range_float(act, graph.finite_float_clamp)
    ch = in_bounds_counts(h, kh, sh, pt, oh)
    cw = in_bounds_counts(w, kw, sw, pl, ow)
    count = (ch[:, None] * cw[None, :])[None, :, :, None]
    if count.min() <= 0:  # TFLM fails such a pool too
        raise GraphValidationError(
            f"{node}: a {kh}x{kw} window lies entirely in the padding {[pt, pl, pb, pr]}")
    include = node.op == "AvgPool2D" and bool(node.attr("count_include_pad", False))
    if include:
        count = np.full_like(count, kh * kw)
    return PoolParams(h, w, c, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, x.dtype, zp, lo, hi, include,
                      count, output_requant(node, graph))
