"""Structure-aware ONNX mutators: valid protobufs with hostile contents.

Each is a ``Mutator`` ``(data, rng) -> bytes`` that parses the seed with the ``onnx`` package,
changes one thing a careless exporter or an attacker could (an initializer of the wrong length
or dtype, a zero / negative / huge attribute, a dangling input, a cycle, an unknown operator,
non-finite weights, an empty graph, duplicate or strange names) and serializes it again, so the
file always gets past the protobuf decoder and reaches the importer, the passes and the
runtimes. A mutator that finds nothing to change in a seed falls back to ``bad_attribute``'s
sibling ``add_attribute``, so every call changes the model.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import onnx
from onnx import AttributeProto, ModelProto, TensorProto, helper, numpy_helper

Mutator = Callable[[bytes, random.Random], bytes]

# Integer attribute values past every range check worth having: zero (division, modulo),
# negative (sizes, pads), huge (allocation, overflow), and int64's edges.
_HOSTILE_INTS = (0, -1, -3, 7, 1 << 16, (1 << 31) - 1, 1 << 40, -(1 << 63), (1 << 63) - 1)
_HOSTILE_FLOATS = (0.0, -1.0, 1e-45, 1e38, float("nan"), float("inf"), -float("inf"))
# Names that break naive string handling: empty, control characters (a newline would split a
# one-line error), non-ASCII, a bytes repr, and very long.
_HOSTILE_NAMES = ("", "\n", "a\nb", "\x00", "b'\\xff'", "\u00e9\u4e2d\U0001f600", "../x", "%s%n",
                  "x" * 5000)
# Attributes of the operators edgenn imports, added where a node lacks them.
_INT_ATTRS = ("strides", "dilations", "pads", "kernel_shape", "output_padding", "output_shape")
_SCALAR_ATTRS = ("group", "axis", "keepdims", "transA", "transB", "ceil_mode", "blocksize",
                 "count_include_pad", "storage_order", "spatial", "hidden_size", "k")
_FLOAT_ATTRS = ("epsilon", "alpha", "beta", "momentum", "bias", "size")
_DTYPES = (TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.INT32,
           TensorProto.INT8, TensorProto.UINT8, TensorProto.BOOL, TensorProto.INT16)
_OPS = ("Conv", "BatchNormalization", "Gemm", "MaxPool", "AveragePool", "Relu", "Add", "Mul",
        "Reshape", "Concat", "Softmax", "Transpose", "Pad", "ConvTranspose", "Flatten",
        "FusedConv", "NoSuchOp", "")


def _load(data: bytes) -> ModelProto:
    return onnx.load_model_from_string(data)


def _save(model: ModelProto) -> bytes:
    return model.SerializeToString()


def _set_attr(node: onnx.NodeProto, attr: AttributeProto) -> None:
    for i, a in enumerate(node.attribute):
        if a.name == attr.name:
            node.attribute[i].CopyFrom(attr)
            return
    node.attribute.append(attr)


def add_attribute(model: ModelProto, rng: random.Random) -> None:
    """Give a node an attribute (maybe one it does not take) with a hostile value."""
    if not model.graph.node:
        model.graph.node.append(helper.make_node("Relu", ["x"], ["y"]))
    node = rng.choice(model.graph.node)
    kind = rng.randrange(3)
    if kind == 0:
        n = rng.choice((1, 2, 4, 3))
        value: object = [rng.choice(_HOSTILE_INTS) for _ in range(n)]
        name = rng.choice(_INT_ATTRS)
    elif kind == 1:
        value, name = rng.choice(_HOSTILE_INTS), rng.choice(_SCALAR_ATTRS)
    else:
        value, name = rng.choice(_HOSTILE_FLOATS), rng.choice(_FLOAT_ATTRS)
    _set_attr(node, helper.make_attribute(name, value))


def bad_attribute(model: ModelProto, rng: random.Random) -> None:
    """Set an existing int / ints / float attribute to zero, negative or huge values, or give
    an ints attribute the wrong number of entries."""
    found = [(n, a) for n in model.graph.node for a in n.attribute
             if a.type in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT)]
    if not found:
        add_attribute(model, rng)
        return
    node, attr = rng.choice(found)
    if attr.type == AttributeProto.INT:
        new = helper.make_attribute(attr.name, rng.choice(_HOSTILE_INTS))
    elif attr.type == AttributeProto.FLOAT:
        new = helper.make_attribute(attr.name, rng.choice(_HOSTILE_FLOATS))
    else:
        ints = list(attr.ints) or [1]
        if rng.random() < 0.3:  # wrong length
            ints = ints[:-1] if len(ints) > 1 and rng.random() < 0.5 else ints + [1]
        else:
            for i in range(len(ints)) if rng.random() < 0.3 else [rng.randrange(len(ints))]:
                ints[i] = rng.choice(_HOSTILE_INTS)
        new = helper.make_attribute(attr.name, ints)
    _set_attr(node, new)


def _float_inits(model: ModelProto) -> list[TensorProto]:
    return [t for t in model.graph.initializer if t.data_type == TensorProto.FLOAT]


def _replace_init(model: ModelProto, old: TensorProto, array: np.ndarray) -> None:
    new = numpy_helper.from_array(array, old.name)
    old.CopyFrom(new)


def wrong_initializer_length(model: ModelProto, rng: random.Random) -> None:
    """Make an initializer shorter or longer along one axis (e.g. batch-norm parameters of the
    wrong channel count, a conv weight with one output channel too many), or change its rank."""
    inits = list(model.graph.initializer)
    if not inits:
        add_attribute(model, rng)
        return
    t = rng.choice(inits)
    a = numpy_helper.to_array(t)
    choice = rng.randrange(4)
    if choice == 0 and a.ndim:
        axis = rng.randrange(a.ndim)
        size = a.shape[axis]
        new_len = rng.choice((0, 1, max(0, size - 1), size + 1, 2 * size))
        idx = np.resize(np.arange(max(1, a.shape[axis])), new_len)
        a = np.take(a, idx, axis=axis) if a.shape[axis] else np.zeros(
            a.shape[:axis] + (new_len,) + a.shape[axis + 1:], a.dtype)
    elif choice == 1:
        a = a.reshape(-1)  # rank 1
    elif choice == 2:
        a = a.reshape((1,) + a.shape)  # one more axis
    else:
        a = a.reshape(-1)[:1].reshape(())  # a scalar
    _replace_init(model, t, np.ascontiguousarray(a))


def wrong_initializer_dtype(model: ModelProto, rng: random.Random) -> None:
    """Store an initializer in another element type (double, float16, int64, bool, ...)."""
    inits = list(model.graph.initializer)
    if not inits:
        add_attribute(model, rng)
        return
    t = rng.choice(inits)
    a = numpy_helper.to_array(t)
    dtype = helper.tensor_dtype_to_np_dtype(rng.choice(_DTYPES))
    with np.errstate(all="ignore"):  # why: wrapping out-of-range values is the point here
        _replace_init(model, t, np.nan_to_num(a).astype(dtype))


def nonfinite_weights(model: ModelProto, rng: random.Random) -> None:
    """Put NaN, +-inf or float32's extremes into a float initializer."""
    inits = _float_inits(model)
    if not inits:
        add_attribute(model, rng)
        return
    t = rng.choice(inits)
    a = numpy_helper.to_array(t).copy()
    if a.size == 0:
        return
    value = rng.choice((np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e30))
    flat = a.reshape(-1)
    if rng.random() < 0.2:
        flat[:] = value
    else:
        flat[rng.randrange(flat.size)] = value
    _replace_init(model, t, a)


def dangling_input(model: ModelProto, rng: random.Random) -> None:
    """Make a node read a tensor that nothing produces, or drop one of its inputs."""
    nodes = [n for n in model.graph.node if n.input]
    if not nodes:
        add_attribute(model, rng)
        return
    node = rng.choice(nodes)
    i = rng.randrange(len(node.input))
    if rng.random() < 0.3:
        del node.input[i]
    else:
        node.input[i] = rng.choice(("", "nowhere", node.input[i] + "_missing"))


def cycle(model: ModelProto, rng: random.Random) -> None:
    """Feed an earlier node from a later node's output (or from its own)."""
    nodes = list(model.graph.node)
    if not nodes or not any(n.input for n in nodes):
        add_attribute(model, rng)
        return
    j = rng.randrange(len(nodes))
    i = rng.randrange(j + 1)
    if not nodes[i].input or not nodes[j].output:
        dangling_input(model, rng)
        return
    k = rng.randrange(len(nodes[i].input))
    model.graph.node[i].input[k] = nodes[j].output[0]


def reorder_nodes(model: ModelProto, rng: random.Random) -> None:
    """Break the topological order: swap two nodes."""
    nodes = list(model.graph.node)
    if len(nodes) < 2:
        add_attribute(model, rng)
        return
    i, j = rng.sample(range(len(nodes)), 2)
    nodes[i], nodes[j] = nodes[j], nodes[i]
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def unknown_op(model: ModelProto, rng: random.Random) -> None:
    """Change a node's operator type (to another known op or to none) or its domain."""
    if not model.graph.node:
        add_attribute(model, rng)
        return
    node = rng.choice(model.graph.node)
    if rng.random() < 0.2:
        node.domain = rng.choice(("com.microsoft", "ai.onnx.ml", "evil"))
    else:
        node.op_type = rng.choice(_OPS)


def empty_graph(model: ModelProto, rng: random.Random) -> None:
    """Drop all nodes, all outputs, all inputs or all initializers."""
    what = rng.randrange(4)
    field = (model.graph.node, model.graph.output, model.graph.input,
             model.graph.initializer)[what]
    del field[:]


def duplicate_names(model: ModelProto, rng: random.Random) -> None:
    """Two nodes writing the same tensor, two initializers of one name, or an initializer that
    shadows a computed tensor."""
    g = model.graph
    choice = rng.randrange(3)
    if choice == 0 and len(g.node) >= 2:
        a, b = rng.sample(range(len(g.node)), 2)
        g.node[b].output[0] = g.node[a].output[0]
    elif choice == 1 and g.initializer:
        t = rng.choice(g.initializer)
        g.initializer.append(t)
    elif g.initializer and g.node:
        rng.choice(g.initializer).name = rng.choice(g.node).output[0]
    else:
        add_attribute(model, rng)


def strange_names(model: ModelProto, rng: random.Random) -> None:
    """Rename a node or a tensor (everywhere it is used) to an empty, multi-line, non-ASCII,
    bytes-looking or very long name."""
    g = model.graph
    new = rng.choice(_HOSTILE_NAMES)
    if rng.random() < 0.4 and g.node:
        rng.choice(g.node).name = new
        return
    names = [o for n in g.node for o in n.output] + [t.name for t in g.initializer]
    if not names:
        add_attribute(model, rng)
        return
    old = rng.choice(names)
    for n in g.node:
        n.input[:] = [new if x == old else x for x in n.input]
        n.output[:] = [new if x == old else x for x in n.output]
    for coll in (g.initializer, g.input, g.output, g.value_info):
        for item in coll:
            if item.name == old:
                item.name = new


def bad_input_shape(model: ModelProto, rng: random.Random) -> None:
    """Declare a graph input with a zero, huge or extra dimension, or another element type."""
    inputs = list(model.graph.input)
    if not inputs:
        add_attribute(model, rng)
        return
    vi = rng.choice(inputs)
    tt = vi.type.tensor_type
    if rng.random() < 0.25:
        tt.elem_type = rng.choice(_DTYPES)
        return
    dims = tt.shape.dim
    if not dims or rng.random() < 0.25:
        dims.add().dim_value = rng.choice((1, 3))
        return
    rng.choice(dims).dim_value = rng.choice((0, 2, 1 << 20, 1 << 40))


def opset_change(model: ModelProto, rng: random.Random) -> None:
    """Claim an older or a future opset."""
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = rng.choice((1, 6, 9, 11, 99))
            return
    add_attribute(model, rng)


def _structural(fn: Callable[[ModelProto, random.Random], None]) -> Mutator:
    """Wrap an in-place ``ModelProto`` edit as a bytes -> bytes ``Mutator``."""

    def mutate(data: bytes, rng: random.Random) -> bytes:
        model = _load(data)
        fn(model, rng)
        return _save(model)

    mutate.__name__ = fn.__name__
    mutate.__doc__ = fn.__doc__
    return mutate


def bytes_names(data: bytes, rng: random.Random) -> bytes:
    """Give a node or a tensor a name that is not UTF-8 (the protobuf stays well-formed:
    ONNX's proto2 string fields then decode to ``bytes`` in Python, not ``str``)."""
    model = _load(data)
    g = model.graph
    marker = f"M{rng.randrange(10**6):06d}"  # why fixed length: the bytes swap keeps sizes
    raw = bytes([0xFF, 0xFE]) + marker[2:].encode()
    if rng.random() < 0.5 and g.node:
        rng.choice(g.node).name = marker
    else:
        names = [o for n in g.node for o in n.output if o]
        if not names:
            return _save(model)
        old = rng.choice(names)
        for n in g.node:
            n.input[:] = [marker if x == old else x for x in n.input]
            n.output[:] = [marker if x == old else x for x in n.output]
        for coll in (g.output, g.value_info):
            for item in coll:
                if item.name == old:
                    item.name = marker
    return _save(model).replace(marker.encode(), raw)


ONNX_MUTATORS: list[Mutator] = [
    *(_structural(fn) for fn in (
        bad_attribute, add_attribute, wrong_initializer_length, wrong_initializer_dtype,
        nonfinite_weights, dangling_input, cycle, reorder_nodes, unknown_op, empty_graph,
        duplicate_names, strange_names, bad_input_shape, opset_change)),
    bytes_names,
]
