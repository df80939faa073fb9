"""Evaluate ONNX nodes whose inputs are all constants (weights built by ConstantOfShape,
shape arithmetic such as Shape -> Gather -> Concat -> Reshape, reshaped weights).

Common operators are evaluated with numpy here; any other operator falls back to the onnx
package's reference evaluator, which implements the full standard.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.reshape import resolve_reshape
from edgenn.frontends.onnx.values import ConstVal

# Never folded: the QDQ converters need to see quantized constants themselves.
NOT_FOLDED = frozenset({"QuantizeLinear", "DequantizeLinear"})

Fold = Callable[[Context, list[np.ndarray]], list[np.ndarray]]
_FOLDERS: dict[str, Fold] = {}


def _folder(*ops: str) -> Callable[[Fold], Fold]:
    def deco(fn: Fold) -> Fold:
        for op in ops:
            _FOLDERS[op] = fn
        return fn

    return deco


def to_array(ctx: Context, tensor: TensorProto) -> np.ndarray:
    """A TensorProto as numpy, with a one-line error when the stored bytes are malformed."""
    try:
        return np.asarray(numpy_helper.to_array(tensor))
    except (ValueError, TypeError, KeyError) as err:
        raise ctx.malformed(f"constant {tensor.name!r} cannot be read ({err})") from None


@_folder("Constant")
def _constant(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    assert ctx.node is not None
    for a in ctx.node.attribute:
        if a.name == "value":
            return [to_array(ctx, a.t)]
        if a.name in ("value_float", "value_int"):
            return [np.asarray(helper.get_attribute_value(a),
                               np.float32 if a.name == "value_float" else np.int64)]
        if a.name in ("value_floats", "value_ints"):
            return [np.asarray(helper.get_attribute_value(a),
                               np.float32 if a.name == "value_floats" else np.int64)]
    raise ctx.fail("Constant without a supported value attribute")


@_folder("ConstantOfShape")
def _constant_of_shape(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    assert ctx.node is not None
    value = np.zeros(1, np.float32)
    for a in ctx.node.attribute:
        if a.name == "value":
            value = to_array(ctx, a.t).reshape(-1)
    shape = tuple(int(d) for d in xs[0].reshape(-1))
    if any(d < 0 for d in shape):
        raise ctx.malformed(f"negative shape {list(shape)}")
    return [np.full(shape, value[0], value.dtype)]


@_folder("Identity", "Dropout")
def _identity(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    return [xs[0], np.ones(xs[0].shape, np.bool_)]


@_folder("Cast")
def _cast(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    to = int(ctx.attr("to"))
    return [xs[0].astype(helper.tensor_dtype_to_np_dtype(to))]


@_folder("Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Pow")
def _binary(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    assert ctx.node is not None
    op = ctx.node.op_type
    dtype = xs[0].dtype
    if op == "Div" and np.issubdtype(dtype, np.integer):
        return [(xs[0] // xs[1]).astype(dtype)]
    fn = {"Add": np.add, "Sum": np.add, "Sub": np.subtract, "Mul": np.multiply,
          "Div": np.divide, "Max": np.maximum, "Min": np.minimum, "Pow": np.power}[op]
    result = xs[0]
    for x in xs[1:]:
        result = fn(result, x)
    return [np.asarray(result).astype(dtype)]


@_folder("Sqrt", "Reciprocal", "Neg")
def _unary(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    assert ctx.node is not None
    fn = {"Sqrt": np.sqrt, "Reciprocal": np.reciprocal, "Neg": np.negative}[ctx.node.op_type]
    return [np.asarray(fn(xs[0])).astype(xs[0].dtype)]


def _axes(ctx: Context, xs: list[np.ndarray]) -> list[int] | None:
    if len(xs) > 1:
        return [int(a) for a in xs[1].reshape(-1)]
    axes = ctx.attr("axes")
    return None if axes is None else [int(a) for a in axes]


@_folder("Unsqueeze")
def _unsqueeze(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    axes = _axes(ctx, xs) or []
    rank = xs[0].ndim + len(axes)
    out = xs[0]
    for a in sorted(a % rank for a in axes):
        out = np.expand_dims(out, a)
    return [out]


@_folder("Squeeze")
def _squeeze(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    axes = _axes(ctx, xs)
    if axes is None:
        return [np.squeeze(xs[0])]
    return [np.squeeze(xs[0], axis=tuple(a % xs[0].ndim for a in axes))]


@_folder("Reshape")
def _reshape(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    spec = xs[1] if len(xs) > 1 else np.asarray(ctx.attr("shape"))
    return [xs[0].reshape(resolve_reshape(ctx, xs[0].shape, spec))]


@_folder("Flatten")
def _flatten(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    axis = int(ctx.attr("axis", 1))
    axis = axis + xs[0].ndim if axis < 0 else axis
    return [xs[0].reshape(int(np.prod(xs[0].shape[:axis])), -1)]


@_folder("Transpose")
def _transpose(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    perm = ctx.attr("perm")
    return [np.ascontiguousarray(xs[0].transpose(perm))]


@_folder("Concat")
def _concat(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate(xs, axis=int(ctx.attr("axis")))]


@_folder("Gather")
def _gather(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.take(xs[0], xs[1], axis=int(ctx.attr("axis", 0)))]


@_folder("Shape")
def _shape(ctx: Context, xs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(xs[0].shape, np.int64)]


def _reference(ctx: Context, node: NodeProto, xs: list[np.ndarray]) -> list[np.ndarray]:
    """Fallback: the onnx package's reference implementation of one node."""
    from onnx.reference import ReferenceEvaluator

    names = [n for n in node.input if n]
    feeds = dict(zip(names, xs, strict=True))
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
            for o in node.output if o]
    graph = helper.make_graph([node], "fold", ins, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        results = ReferenceEvaluator(model).run(None, feeds)
    except (NotImplementedError, ValueError, TypeError, KeyError, IndexError, RuntimeError) as err:
        raise ctx.fail(f"cannot evaluate constant {node.op_type} ({err})") from None
    return [np.asarray(r) for r in results]


def fold(ctx: Context, node: NodeProto) -> None:
    """Evaluate ``node`` (all inputs constant) and record its outputs as constants."""
    names = [n for n in node.input if n]
    xs = [ctx.const_array(n) for n in names]
    fn = _FOLDERS.get(node.op_type)
    # why quiet for float operands: +-inf and NaN constants fold as onnxruntime computes them
    # (inf - inf is NaN), not as a numpy warning; integer arithmetic keeps numpy's checks
    quiet = any(x.dtype.kind == "f" for x in xs)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore") if quiet \
            else contextlib.nullcontext():
        results = fn(ctx, xs) if fn is not None else _reference(ctx, node, xs)
    for name, arr in zip(node.output, results, strict=False):
        if name:
            ctx.set_const(name, ConstVal(np.asarray(arr)))


def foldable(ctx: Context, node: NodeProto) -> bool:
    if node.op_type in NOT_FOLDED:
        return False
    names = [n for n in node.input if n]
    if node.op_type == "Shape" and names and names[0] in ctx.values:
        return False
    return all(ctx.is_const(n) for n in names)
