"""The records of Conv2D (grouped, depthwise, dilated, explicitly padded): int8, 16x8, float32.

As TFLite Micro's ``ConvPerChannel`` / ``DepthwiseConvPerChannel`` prepare: the per-channel
multiplier of ``in_scale * w_scale[c] / out_scale`` (in double, TFLite's
``PopulateConvolutionQuantizationParams``), the zero points, the fused activation's clamp and
the geometry. The int8 record also carries the bias with the input zero point folded in
(``edgenn.arith.zero_point``), the constant the Cortex-M kernels add.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range_float,
    quantize_multipliers,
)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node
from edgenn.ir.conv import is_depthwise_conv
from edgenn.prepared.linear import Int8Linear, int8_linear
from edgenn.prepared.quant import activation_of, const_data, per_tensor, quant_of
from edgenn.prepared.s16 import S16Requant, int8_weights_s16, symmetric


def channel_multipliers(node: Node, graph: Graph, w_index: int = 1) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Per-output-channel (multiplier, shift) as TFLite's PopulateConvolutionQuantizationParams."""
    x, out = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    w = graph.tensor(node.inputs[w_index])
    in_s = per_tensor(node, x, "input").s
    out_s = per_tensor(node, out, "output").s
    wq = quant_of(node, w, "weight")
    co = w.shape[0]
    if wq.per_channel and (wq.axis != 0 or wq.scale.size != co):
        raise UnsupportedOperatorError(
            f"{node}: weight quantization must be per tensor or along axis 0 "
            f"({co} channels), got {wq!r}")
    w_scales = np.broadcast_to(wq.scale.astype(np.float64), (co,))
    real = np.float64(in_s) * w_scales / np.float64(out_s)
    return quantize_multipliers(real)


@dataclass(frozen=True)
class ConvGeometry:
    """Shapes, strides, dilations, padding (top, left, bottom, right) and groups."""

    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    k_h: int
    k_w: int
    stride_h: int
    stride_w: int
    dil_h: int
    dil_w: int
    pad_t: int
    pad_l: int
    pad_b: int
    pad_r: int
    groups: int

    @property
    def depthwise(self) -> bool:
        return is_depthwise_conv(self.groups, self.in_c,
                                 (self.out_c, self.k_h, self.k_w, self.in_c // self.groups))

    @property
    def has_padding(self) -> bool:
        return any((self.pad_t, self.pad_l, self.pad_b, self.pad_r))

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return self.pad_t, self.pad_l, self.pad_b, self.pad_r

    @property
    def strides(self) -> tuple[int, int]:
        return self.stride_h, self.stride_w

    @property
    def dilations(self) -> tuple[int, int]:
        return self.dil_h, self.dil_w

    def shape_args(self) -> str:
        """in_h .. pad_l as a comma-separated argument list (the kernels' common part)."""
        return ", ".join(str(v) for v in (
            self.in_h, self.in_w, self.in_c, self.out_h, self.out_w, self.out_c, self.k_h,
            self.k_w, self.stride_h, self.stride_w, self.dil_h, self.dil_w, self.pad_t,
            self.pad_l))


def conv_geometry(node: Node, graph: Graph) -> ConvGeometry:
    """The geometry of a Conv2D (or TransposeConv2D) node from its attributes and shapes."""
    _, in_h, in_w, in_c = graph.tensor(node.inputs[0]).shape
    _, out_h, out_w, _ = graph.tensor(node.outputs[0]).shape
    co, kh, kw, _ = graph.tensor(node.inputs[1]).shape
    sh, sw = (int(s) for s in node.attr("strides", (1, 1)))
    dh, dw = (int(d) for d in node.attr("dilations", (1, 1)))
    pt, pl, pb, pr = (int(p) for p in node.attr("pads", (0, 0, 0, 0)))
    return ConvGeometry(in_h, in_w, in_c, out_h, out_w, co, kh, kw, sh, sw, dh, dw,
                        pt, pl, pb, pr, int(node.attr("groups", 1)))


@dataclass(frozen=True)
class ConvParams(ConvGeometry, Int8Linear):
    """Everything an int8 Conv2D kernel needs, computed as TFLite Micro's prepare does: the
    geometry and ``Int8Linear`` (``w`` int8 [Cout, KH, KW, Cin/groups]; ``bias_folded`` valid
    where a window lies wholly inside the input)."""

    def quant_args(self) -> str:
        return ", ".join(str(v) for v in (self.in_zp, self.out_zp, self.act_min, self.act_max))


def prepare_conv(node: Node, graph: Graph) -> ConvParams:
    """The int8 record of a Conv2D node (raises for float or malformed nodes)."""
    return ConvParams(**asdict(conv_geometry(node, graph)),
                      **int8_linear(node, graph, *channel_multipliers(node, graph)))


@dataclass(frozen=True)
class FloatConvParams(ConvGeometry):
    """A float32 Conv2D: ``w`` float32 [Cout, KH, KW, Cin/groups], ``bias`` float32 or None,
    the clamp ``act_min`` / ``act_max`` (+-FLT_MAX without an activation in a TFLite model,
    +-inf in an ONNX one)."""

    w: np.ndarray
    bias: np.ndarray | None
    act_min: float
    act_max: float


def float_bias(node: Node, graph: Graph, index: int = 2) -> np.ndarray | None:
    """The optional float32 bias input ``index``."""
    t = graph.tensor(node.inputs[index]) if len(node.inputs) > index and node.inputs[index] \
        else None
    data = const_data(node, t)
    return None if data is None else data.astype(np.float32)


def prepare_float_conv(node: Node, graph: Graph) -> FloatConvParams:
    """The float32 record of a Conv2D node."""
    g = conv_geometry(node, graph)
    data = const_data(node, graph.tensor(node.inputs[1]))
    assert data is not None
    lo, hi = activation_range_float(activation_of(node), graph.finite_float_clamp)
    return FloatConvParams(**asdict(g), w=data.astype(np.float32), bias=float_bias(node, graph),
                           act_min=lo, act_max=hi)


@dataclass(frozen=True)
class ConvS16Params(ConvGeometry):
    """A 16x8 Conv2D: int8 weights (as int64, symmetric), per-channel ``mult`` / ``shift``
    and the epilogue ``requant`` (bias, accumulator width, int16 clamp)."""

    w: np.ndarray
    mult: np.ndarray
    shift: np.ndarray
    requant: S16Requant


def prepare_conv_s16(node: Node, graph: Graph, *, allow_narrow: bool = True) -> ConvS16Params:
    """The 16x8 record of a Conv2D (or, with ``allow_narrow=False``, TransposeConv2D) node."""
    g = conv_geometry(node, graph)
    symmetric(node, graph.tensor(node.inputs[0]), "input")
    w = int8_weights_s16(node, graph.tensor(node.inputs[1]))
    mult, shift = channel_multipliers(node, graph)
    bias_t = graph.tensor(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    requant = S16Requant.build(node, const_data(node, bias_t), g.out_c, mult, shift,
                               graph.tensor(node.outputs[0]), allow_narrow=allow_narrow)
    return ConvS16Params(**asdict(g), w=w, mult=mult, shift=shift, requant=requant)


def prepare_transpose_conv(node: Node, graph: Graph) -> ConvParams:
    """The int8 record of a TransposeConv2D node: as Conv2D's, and TFLite Micro's int8
    TransposeConv takes an int32 bias only."""
    bias_t = graph.tensor(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    bias = const_data(node, bias_t)
    if bias is not None and bias.dtype != np.int32:
        raise UnsupportedOperatorError(
            f"{node}: int8 TransposeConv2D needs an int32 bias, got {bias.dtype}")
    return prepare_conv(node, graph)
