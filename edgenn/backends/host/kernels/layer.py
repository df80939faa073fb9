"""The shape of a layer the host kernels compute, read once from the IR node.

Everything a generated kernel bakes in as a constant lives here: spatial sizes, channels,
kernel window, strides, padding and the fused activation's clamp. Weights and bias are kept
separately (they are packed, not baked in).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.arith.fixed_point import activation_range_float
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Activation, DType, Graph, Node
from edgenn.ir.conv import is_depthwise_conv


@dataclass(frozen=True)
class ConvShape:
    """A batch-1 NHWC convolution (``groups == 1``) or depthwise convolution."""

    h: int
    w: int
    cin: int
    oh: int
    ow: int
    cout: int
    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    pb: int
    pr: int
    depthwise: bool
    lo: float  # the fused activation's clamp (-inf / inf when absent)
    hi: float

    @property
    def m(self) -> int:
        """GEMM rows: output pixels."""
        return self.oh * self.ow

    @property
    def k(self) -> int:
        """GEMM depth: one output value's inputs."""
        return self.kh * self.kw * (1 if self.depthwise else self.cin)

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def pointwise(self) -> bool:
        """A 1x1 stride-1 unpadded convolution: the input already is the GEMM's A matrix."""
        return (self.kh == self.kw == 1 and self.sh == self.sw == 1
                and self.pt == self.pl == self.pb == self.pr == 0)

    @property
    def macs(self) -> int:
        return self.m * self.cout * self.k


@dataclass(frozen=True)
class DenseShape:
    """A FullyConnected layer ``y[1, n] = x[1, k] @ W[n, k].T + b``."""

    k: int
    n: int
    lo: float
    hi: float

    @property
    def macs(self) -> int:
        return self.k * self.n


LayerShape = ConvShape | DenseShape


def _clamp(node: Node, graph: Graph) -> tuple[float, float]:
    act = node.attr("activation", Activation.NONE) or Activation.NONE
    try:
        act = act if isinstance(act, Activation) else Activation(act)
    except ValueError:
        raise UnsupportedOperatorError(f"{node}: unknown activation {act!r}") from None
    return activation_range_float(act, graph.finite_float_clamp)


def layer_shape(node: Node, graph: Graph) -> LayerShape:
    """The shape of a float32 Conv2D / depthwise Conv2D / FullyConnected node, or one line
    saying why the host kernels do not compute it."""
    if node.op not in ("Conv2D", "FullyConnected"):
        raise UnsupportedOperatorError(f"{node}: the host kernels compute Conv2D and "
                                       "FullyConnected only")
    x, w = graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1])
    if x.dtype is not DType.FLOAT32 or w.data is None:
        raise UnsupportedOperatorError(
            f"{node}: the host kernels need float32 data and constant weights")
    if not np.isfinite(w.data).all():
        # why: their padding multiplies zeros by the weights (0 * inf is NaN where TFLite
        # Micro skips the tap) and Winograd mixes the weights; the reference layer skips
        raise UnsupportedOperatorError(f"{node}: the host kernels need finite weights")
    lo, hi = _clamp(node, graph)
    out = graph.tensor(node.outputs[0])
    if node.op == "FullyConnected":
        if x.shape[0] != 1:
            raise UnsupportedOperatorError(f"{node}: host kernels take batch 1, got {x.shape}")
        return DenseShape(k=int(w.shape[1]), n=int(w.shape[0]), lo=lo, hi=hi)
    _, h, wd, cin = x.shape
    _, oh, ow, cout = out.shape
    co, kh, kw, cig = w.shape
    groups = int(node.attr("groups", 1))
    if tuple(node.attr("dilations", (1, 1))) != (1, 1):
        raise UnsupportedOperatorError(f"{node}: dilated convolution is not a host kernel")
    depthwise = is_depthwise_conv(groups, cin, w.shape) and co == cin  # multiplier 1 only
    if groups != 1 and not depthwise:
        raise UnsupportedOperatorError(
            f"{node}: grouped convolution ({groups} groups, {cig} channels each) is not a "
            "host kernel")
    sh, sw = (int(s) for s in node.attr("strides", (1, 1)))
    pt, pl, pb, pr = (int(p) for p in node.attr("pads", (0, 0, 0, 0)))
    return ConvShape(h=h, w=wd, cin=cin, oh=oh, ow=ow, cout=cout, kh=kh, kw=kw, sh=sh, sw=sw,
                     pt=pt, pl=pl, pb=pb, pr=pr, depthwise=depthwise, lo=lo, hi=hi)


def layer_params(node: Node, graph: Graph) -> tuple[np.ndarray, np.ndarray | None]:
    """(weights, bias or None) as float32: conv ``[Cout, KH, KW, Cin]``, dense ``[N, K]``."""
    w = graph.tensor(node.inputs[1]).data
    assert w is not None
    b = None
    if len(node.inputs) > 2 and node.inputs[2]:
        b = graph.tensor(node.inputs[2]).data
    return (np.asarray(w, np.float32),
            None if b is None else np.asarray(b, np.float32).reshape(-1))
