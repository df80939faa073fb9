"""Shape and dtype inference, one function per operator.

The operator catalogue (all rank-4 activations NHWC):

=================  =====================================  ==========================================
op                 inputs                                 attrs
=================  =====================================  ==========================================
Conv2D             x[N,H,W,Ci], w[Co,KH,KW,Ci/g], b[Co]?  strides, dilations, pads(t,l,b,r), groups,
                                                          activation
FullyConnected     x[N,K], w[Co,K], b[Co]?                activation
MatMul             a[...,M,K], b[...,K,N] (float only)    -
Add, Mul           a, b (numpy broadcasting)              activation
Relu, Relu6        x                                      -
Clip               x                                      min, max
MaxPool2D          x[N,H,W,C]                             kernel, strides, pads, activation
AvgPool2D          x[N,H,W,C]                             kernel, strides, pads, activation,
                                                          count_include_pad
Mean               x                                      axes, keepdims
Reshape            x                                      shape (complete static output shape)
Transpose          x                                      perm
Concat             x0, x1, ...                            axis
Pad                x                                      pads ((before, after) per dim), value
Softmax            x (over the last axis)                 beta, dtype (int16 output of int8)
BatchNorm          x, scale, bias, mean, var (last axis)  epsilon
Quantize           x float32/int8/int16 -> int8 or int16  dtype (output type, default int8)
Dequantize         x int8 or int16 -> float32             -
LRN                x[N,H,W,C] (float)                     radius, bias, alpha, beta (TFLite form)
Sigmoid, Tanh      x (float)                              -
FusedConvChain     x, then each member's w, b (in order)  members (Conv2D Nodes), intermediates
                                                          (their Tensors), variant, scratch_bytes,
                                                          residual (an Add of the last output and x)
SVM                x[N,d] (float32 or int8),              classes, buffer_capacity, C, tol,
                   w[P,d], b[P] float32, P = k(k-1)/2     max_iter, carry, carry_limit
=================  =====================================  ==========================================

A quantized tensor's dtype is INT8 (or INT16) and it carries ``QuantParams``; Quantize's
output dtype is its ``dtype`` attribute (INT8 by default), Dequantize's FLOAT32; SVM's is
FLOAT32 ``[N, k]`` (one score per class, see ``backends/ref/kernels/svm.py``); every other op
keeps its first input's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

import edgenn.ir.opdefs  # noqa: F401  (each module defines its operators)
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir.checks import check_attributes
from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import validate_node
from edgenn.ir.shape_rules import (
    RULES,
    Inferred,
    Shape,
    fail,
    need,
    need_rank,
    register_shape,
)
from edgenn.ir.tensor import Tensor

if TYPE_CHECKING:
    from edgenn.ir.graph import Graph


def supported_ops() -> list[str]:
    """Every operator with a shape function (the same names as ``schema.op_schemas``)."""
    return sorted(RULES)


def infer_node(graph: Graph, node: Node) -> Inferred:
    return infer(node, graph.node_inputs(node))


def infer(node: Node, inputs: list[Tensor | None]) -> Inferred:
    """Infer outputs of ``node`` from input tensors (frontends use this while building graphs);
    the node is first checked against its schema (``edgenn.ir.schema``) and for NaN /
    infinite float attributes (``edgenn.ir.checks``)."""
    validate_node(node, inputs)
    check_attributes(node)
    fn = RULES.get(node.op)
    if fn is None:
        raise UnsupportedOperatorError(f"node {node.name!r}: unsupported operator {node.op!r}")
    inferred = fn(node, inputs)
    for shape, _ in inferred:
        _check_size(node, shape)
    return inferred


# why a cap: the C runtimes index tensors with int32, and a hostile file can ask for a tensor
# of 2**40 elements through one attribute (pads, a repeat count) without storing any data
MAX_ELEMENTS = (1 << 31) - 1


def _check_size(node: Node, shape: Shape) -> None:
    size = 1
    for d in shape:
        if d < 0:
            raise fail(node, f"gives the negative dimension in shape {list(shape)}")
        size *= d
    if size > MAX_ELEMENTS:
        raise fail(node, f"gives a tensor of shape {list(shape)} ({size} elements, more than "
                          f"the {MAX_ELEMENTS} edgenn supports)")


def ints_attr(node: Node, key: str, default: Sequence[int], length: int,
              minimum: int) -> tuple[int, ...]:
    """Attribute ``key`` as ``length`` integers, each ``>= minimum``, or one error naming the
    node (a zero stride or a negative pad in a file must not reach a division or a kernel)."""
    raw = node.attr(key, default)
    values = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
    if len(values) != length or any(
            isinstance(v, bool) or not isinstance(v, int | np.integer) for v in values):
        raise fail(node, f"{key} {list(values)} must be {length} integers")
    if any(v < minimum for v in values):
        raise fail(node, f"{key} {list(values)} must all be >= {minimum}")
    return tuple(int(v) for v in values)


def conv_out_dim(size: int, k: int, stride: int, dilation: int, pad0: int, pad1: int) -> int:
    eff = (k - 1) * dilation + 1
    return (size + pad0 + pad1 - eff) // stride + 1


@register_shape("Conv2D")
def _conv2d(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x, w = need(node, inputs, 0), need(node, inputs, 1)
    need_rank(node, x, 4)
    need_rank(node, w, 4)
    n, h, wd, ci = x.shape
    co, kh, kw, cig = w.shape
    (groups,) = ints_attr(node, "groups", (1,), 1, 1)
    if ci % groups or co % groups or cig * groups != ci:
        raise fail(
            node,
            f"input channels {ci}, weight {list(w.shape)} and groups {groups} do not agree",
        )
    sh, sw = ints_attr(node, "strides", (1, 1), 2, 1)
    dh, dw = ints_attr(node, "dilations", (1, 1), 2, 1)
    pt, pl, pb, pr = ints_attr(node, "pads", (0, 0, 0, 0), 4, 0)
    oh = conv_out_dim(h, kh, sh, dh, pt, pb)
    ow = conv_out_dim(wd, kw, sw, dw, pl, pr)
    if oh <= 0 or ow <= 0:
        raise fail(node, f"kernel {kh}x{kw} does not fit input {list(x.shape)}")
    if len(inputs) > 2 and inputs[2] is not None and inputs[2].shape != (co,):
        raise fail(node, f"bias shape {list(inputs[2].shape)} != [{co}]")
    return [((n, oh, ow, co), x.dtype)]


@register_shape("FullyConnected")
def _fully_connected(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x, w = need(node, inputs, 0), need(node, inputs, 1)
    need_rank(node, x, 2)
    need_rank(node, w, 2)
    if x.shape[1] != w.shape[1]:
        raise fail(node, f"input {list(x.shape)} and weight {list(w.shape)} do not agree")
    if len(inputs) > 2 and inputs[2] is not None and inputs[2].shape != (w.shape[0],):
        raise fail(node, f"bias shape {list(inputs[2].shape)} != [{w.shape[0]}]")
    return [((x.shape[0], w.shape[0]), x.dtype)]


@register_shape("MatMul")
def _matmul(node: Node, inputs: list[Tensor | None]) -> Inferred:
    a, b = need(node, inputs, 0), need(node, inputs, 1)
    return [(matmul_shape(node, a.shape, b.shape), a.dtype)]


def matmul_shape(node: Node, a: tuple[int, ...], b: tuple[int, ...]) -> Shape:
    """numpy's matmul result shape (1-D operands promoted and dropped), without allocating."""
    if not a or not b:
        raise fail(node, f"cannot multiply {list(a)} by {list(b)}")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        raise fail(node, f"cannot multiply {list(a)} by {list(b)}") from None
    if a2[-1] != b2[-2]:
        raise fail(node, f"cannot multiply {list(a)} by {list(b)}")
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return tuple(int(d) for d in out)


def _broadcast(node: Node, inputs: list[Tensor | None]) -> Inferred:
    a, b = need(node, inputs, 0), need(node, inputs, 1)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise fail(node, f"cannot broadcast {list(a.shape)} with {list(b.shape)}") from None
    return [(tuple(shape), a.dtype)]


register_shape("Add", "Mul")(_broadcast)


@register_shape("Relu", "Relu6", "Clip", "Sigmoid", "Tanh", "LRN")
def _same(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    return [(x.shape, x.dtype)]


@register_shape("BatchNorm")
def _batchnorm(node: Node, inputs: list[Tensor | None]) -> Inferred:
    """scale, bias, mean and var are [C] for the last axis C of x."""
    x = need(node, inputs, 0)
    if not x.shape:
        raise fail(node, "expects an input of rank >= 1, got a scalar")
    c = x.shape[-1]
    for i, what in enumerate(("scale", "bias", "mean", "variance"), start=1):
        p = need(node, inputs, i)
        if p.shape != (c,):
            raise fail(node, f"{what} {p.name!r} has shape {list(p.shape)}; the input "
                              f"{list(x.shape)} has {c} channels")
    eps = node.attr("epsilon", 1e-5)
    if not isinstance(eps, float | int | np.floating) or not 0 <= float(eps) < np.inf:
        raise fail(node, f"epsilon {eps!r} must be a finite number >= 0")
    var = need(node, inputs, 4).data
    if var is not None and var.size and float(np.min(var)) + float(eps) <= 0:
        # why: 1 / sqrt(var + eps) is the scale; a file may carry a negative variance
        raise fail(node, f"variance + epsilon must be > 0 (min variance {float(np.min(var))}, "
                          f"epsilon {eps})")
    return [(x.shape, x.dtype)]


@register_shape("MaxPool2D", "AvgPool2D")
def _pool(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    need_rank(node, x, 4)
    n, h, w, c = x.shape
    kh, kw = ints_attr(node, "kernel", (), 2, 1)
    sh, sw = ints_attr(node, "strides", (1, 1), 2, 1)
    pt, pl, pb, pr = ints_attr(node, "pads", (0, 0, 0, 0), 4, 0)
    if max(pt, pb) >= kh or max(pl, pr) >= kw:
        # why: ONNX and TFLite require it; a window wholly in the padding has no maximum
        raise fail(node, f"pads {[pt, pl, pb, pr]} must be smaller than the window {kh}x{kw}")
    oh = conv_out_dim(h, kh, sh, 1, pt, pb)
    ow = conv_out_dim(w, kw, sw, 1, pl, pr)
    if oh <= 0 or ow <= 0:
        raise fail(node, f"window {kh}x{kw} does not fit input {list(x.shape)}")
    return [((n, oh, ow, c), x.dtype)]


@register_shape("Mean")
def _mean(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    axes = sorted(a % len(x.shape) for a in node.attr("axes"))
    keep = bool(node.attr("keepdims", True))
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else [
        d for i, d in enumerate(x.shape) if i not in axes
    ]
    return [(tuple(shape), x.dtype)]


@register_shape("Reshape")
def _reshape(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    shape = tuple(int(d) for d in node.attr("shape"))
    if int(np.prod(shape)) != x.size:
        raise fail(node, f"cannot reshape {list(x.shape)} to {list(shape)}")
    return [(shape, x.dtype)]


@register_shape("Transpose")
def _transpose(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    perm = tuple(node.attr("perm"))
    if sorted(perm) != list(range(len(x.shape))):
        raise fail(node, f"perm {list(perm)} does not fit shape {list(x.shape)}")
    return [(tuple(x.shape[p] for p in perm), x.dtype)]


@register_shape("Concat")
def _concat(node: Node, inputs: list[Tensor | None]) -> Inferred:
    xs = [need(node, inputs, i) for i in range(len(inputs))]
    rank = len(xs[0].shape)
    axis = int(node.attr("axis")) % rank
    for t in xs[1:]:
        if len(t.shape) != rank or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, xs[0].shape, strict=True)) if i != axis
        ):
            raise fail(node, f"cannot concatenate {list(xs[0].shape)} with {list(t.shape)}")
    shape = list(xs[0].shape)
    shape[axis] = sum(t.shape[axis] for t in xs)
    return [(tuple(shape), xs[0].dtype)]


@register_shape("Pad")
def _pad(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    pads = node.attr("pads")
    if len(pads) != len(x.shape) or any(b < 0 or a < 0 for b, a in pads):
        raise fail(node, f"pads {pads} do not fit shape {list(x.shape)}")
    return [(tuple(d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)), x.dtype)]


def _declared_dtype(node: Node, default: DType) -> DType:
    """The node's ``dtype`` attribute (a DType or its name), ``default`` when absent."""
    raw = node.attr("dtype", default)
    try:
        return raw if isinstance(raw, DType) else DType(str(raw))
    except ValueError:
        raise fail(node, f"unknown output type {raw!r}") from None


@register_shape("Quantize")
def _quantize(node: Node, inputs: list[Tensor | None]) -> Inferred:
    """The output type is the ``dtype`` attribute, INT8 when absent."""
    x = need(node, inputs, 0)
    dtype = _declared_dtype(node, DType.INT8)
    if dtype not in (DType.INT8, DType.INT16, DType.INT32) and (dtype, x.dtype) != (
            DType.UINT8, DType.INT8):
        raise fail(node, "quantizes to int8, int16 or int32 (uint8 from int8), "
                    f"not {dtype.value}")
    return [(x.shape, dtype)]


@register_shape("Softmax")
def _softmax(node: Node, inputs: list[Tensor | None]) -> Inferred:
    """The input's type, or the ``dtype`` attribute: int16 from int8 (TFLM allows it)."""
    x = need(node, inputs, 0)
    dtype = _declared_dtype(node, x.dtype)
    if dtype != x.dtype and (x.dtype, dtype) != (DType.INT8, DType.INT16):
        raise fail(node, f"softmax of {x.dtype.value} gives {x.dtype.value}, not {dtype.value}")
    return [(x.shape, dtype)]


@register_shape("Dequantize")
def _dequantize(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x = need(node, inputs, 0)
    return [(x.shape, DType.FLOAT32)]


@register_shape("FusedConvChain")
def _fused_conv_chain(node: Node, inputs: list[Tensor | None]) -> Inferred:
    """Chain the members' Conv2D inference; each must give its recorded intermediate."""
    x = need(node, inputs, 0)
    by_name = {t.name: t for t in inputs if t is not None}
    members, inter = node.attr("members", ()), node.attr("intermediates", ())
    residual = node.attr("residual", None)  # an Add of the last member's output and x
    if len(members) < 2 or len(inter) != len(members) - 1 + (residual is not None):
        raise fail(node, f"{len(members)} members and {len(inter)} intermediates do not agree")
    x0 = x
    result: Inferred = []
    for k, member in enumerate(members):
        try:
            operands = [x] + [by_name[n] if n else None for n in member.inputs[1:]]
        except KeyError as err:
            raise fail(node, f"member {member.name!r} reads {err.args[0]!r}, "
                              "which is not an input of the chain") from None
        result = _conv2d(member, operands)
        if k < len(inter):
            shape, dtype = result[0]
            if inter[k].shape != shape or inter[k].dtype != dtype:
                raise fail(node, f"intermediate {inter[k].name!r} is declared "
                                  f"{inter[k].dtype.value}{list(inter[k].shape)} but member "
                                  f"{member.name!r} gives {dtype.value}{list(shape)}")
            x = inter[k]
    if residual is not None and result[0] != (x0.shape, x0.dtype):
        shape, dtype = result[0]
        raise fail(node, f"residual Add {residual.name!r}: the last member gives "
                          f"{dtype.value}{list(shape)}, the chain input is "
                          f"{x0.dtype.value}{list(x0.shape)}")
    return result


@register_shape("SVM")
def _svm(node: Node, inputs: list[Tensor | None]) -> Inferred:
    x, w, b = need(node, inputs, 0), need(node, inputs, 1), need(node, inputs, 2)
    need_rank(node, x, 2)
    k = len(node.attr("classes", ()))
    if k < 2:
        raise fail(node, f"needs at least 2 classes, got {k}")
    pairs = k * (k - 1) // 2
    if w.shape != (pairs, x.shape[1]) or b.shape != (pairs,):
        raise fail(node, f"{k} classes and {x.shape[1]} features need weights "
                          f"[{pairs}, {x.shape[1]}] and bias [{pairs}], got "
                          f"{list(w.shape)} and {list(b.shape)}")
    if w.dtype is not DType.FLOAT32 or b.dtype is not DType.FLOAT32:
        raise fail(node, "weights and bias must be float32")
    capacity = node.attr("buffer_capacity")
    if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity < 2:
        raise fail(node, f"buffer_capacity must be an integer >= 2, got {capacity!r}")
    return [((x.shape[0], k), DType.FLOAT32)]
