"""Structure-aware TFLite mutators: valid flatbuffers with hostile content.

A mutator is ``Callable[[bytes, random.Random], bytes]``. Each one unpacks the seed into
plain records (``tflite_fb``), breaks one thing an attacker (or a buggy converter) could
break, and packs the records again, so the file passes the flatbuffer layer and reaches the
importer's checks: buffer lengths, shapes, tensor / opcode / buffer indices, builtin codes,
options tables, quantization, weight values, subgraphs, graph inputs and outputs, window
attributes and axis operands. A seed that does not unpack (e.g. an already byte-mutated file)
is returned unchanged.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable

import numpy as np
import tflite

from tools.fuzzing.tflite_fb import (
    FbModel,
    FbOpcode,
    FbOperator,
    FbQuant,
    FbSubgraph,
    FbTensor,
    option_class,
    pack,
    unpack,
)

Mutator = Callable[[bytes, random.Random], bytes]

# values a careless reader trips over: zero, negative, one past the end, int32 limits
_HOSTILE_INTS = (0, -1, -2, 1, 2, 3, 7, 255, 256, 65535, 1 << 20, (1 << 31) - 1, -(1 << 31))
_HOSTILE_FLOATS = (0.0, -0.0, -1.0, math.nan, math.inf, -math.inf, 1e-45, 1e38, 3.4e38)
_TENSOR_TYPES = [v for k, v in vars(tflite.TensorType).items() if not k.startswith("_")]
_BUILTINS = [v for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")]
_OPTION_TAGS = [v for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")]
_CONTROL_FLOW = ("CALL_ONCE", "WHILE", "IF")


def _hostile_int(rng: random.Random, n: int = 0) -> int:
    """A hostile integer, often relative to a count ``n`` (``n``, ``n + 1``, ``-n``)."""
    return rng.choice((*_HOSTILE_INTS, n, n + 1, -n - 1, rng.randint(-300, 300)))


Edit = Callable[[FbModel, random.Random], bool]
_EDITS: list[Edit] = []


def _structured(fn: Edit) -> Mutator:
    """A byte mutator from ``fn(model, rng) -> changed``. When ``fn`` finds nothing to change
    in the seed another edit is tried (so a call nearly always changes the model); a seed that
    is not a well-formed TFLite file comes back unchanged."""
    _EDITS.append(fn)

    def mutate(data: bytes, rng: random.Random) -> bytes:
        try:
            model = unpack(data)
        except Exception:  # why: flatbuffers raises anything on corrupt bytes
            return data
        edit = fn
        for _ in range(8):
            if model.subgraphs and edit(model, rng):
                return pack(model)
            edit = rng.choice(_EDITS)
        return data

    mutate.__name__ = fn.__name__
    mutate.__doc__ = fn.__doc__
    return mutate


def _main(model: FbModel) -> FbSubgraph:
    return model.subgraphs[0]


def _pick_op(model: FbModel, rng: random.Random) -> FbOperator | None:
    ops = _main(model).operators
    return rng.choice(ops) if ops else None


def _const_tensors(model: FbModel) -> list[FbTensor]:
    sg = _main(model)
    return [t for t in sg.tensors if 0 < t.buffer < len(model.buffers) and model.buffers[t.buffer]]


# -- mutators ---------------------------------------------------------------------------------
@_structured
def buffer_length(model: FbModel, rng: random.Random) -> bool:
    """A constant's buffer cut, grown, emptied or made one byte off."""
    consts = _const_tensors(model)
    if not consts:
        return False
    t = rng.choice(consts)
    data = model.buffers[t.buffer]
    how = rng.randrange(5)
    if how == 0:
        data = data[: rng.randrange(len(data))]
    elif how == 1:
        data = data + bytes(rng.randrange(1, 64))
    elif how == 2:
        data = data[:-1]
    elif how == 3:
        data = data[:1]
    else:
        data = data + data
    model.buffers[t.buffer] = data
    return True


@_structured
def tensor_shape(model: FbModel, rng: random.Random) -> bool:
    """A tensor's shape with a zero, negative or huge dimension, or a dimension added or
    dropped."""
    sg = _main(model)
    if not sg.tensors:
        return False
    t = rng.choice(sg.tensors)
    how = rng.randrange(4)
    if how == 0 and t.shape:
        t.shape[rng.randrange(len(t.shape))] = _hostile_int(rng)
    elif how == 1 and t.shape:
        t.shape.pop(rng.randrange(len(t.shape)))
    elif how == 2:
        t.shape.insert(rng.randint(0, len(t.shape)), rng.choice((1, 2, 0, 1 << 16)))
    else:
        t.shape = [rng.choice((0, 1, -1, 1 << 30))] * rng.randint(0, 9)
    return True


@_structured
def tensor_index(model: FbModel, rng: random.Random) -> bool:
    """An operator's or the subgraph's tensor index out of range, or pointing elsewhere."""
    sg = _main(model)
    n = len(sg.tensors)
    lists = [op.inputs for op in sg.operators] + [op.outputs for op in sg.operators]
    lists += [sg.inputs, sg.outputs]
    lists = [v for v in lists if v]
    if not lists:
        return False
    target = rng.choice(lists)
    slot = rng.randrange(len(target))
    target[slot] = _hostile_int(rng, n) if rng.random() < 0.6 else rng.randrange(max(n, 1))
    return True


@_structured
def operand_count(model: FbModel, rng: random.Random) -> bool:
    """An operator with an operand or result dropped, duplicated or set to -1 (omitted)."""
    op = _pick_op(model, rng)
    if op is None:
        return False
    target = op.inputs if rng.random() < 0.7 or not op.outputs else op.outputs
    how = rng.randrange(3)
    if how == 0 and target:
        target.pop(rng.randrange(len(target)))
    elif how == 1 and target:
        target.append(rng.choice(target))
    elif target:
        target[rng.randrange(len(target))] = -1
    else:
        target.append(rng.randrange(max(len(_main(model).tensors), 1)))
    return True


@_structured
def opcode_index(model: FbModel, rng: random.Random) -> bool:
    """An operator's opcode index out of range (or the opcode table emptied)."""
    op = _pick_op(model, rng)
    if op is None:
        return False
    if rng.random() < 0.15:
        model.opcodes.clear()
    else:
        op.opcode_index = rng.choice((len(model.opcodes), len(model.opcodes) + 1, 255, 1 << 16,
                                      0xFFFFFFFF, 0x80000000))
    return True


@_structured
def builtin_code(model: FbModel, rng: random.Random) -> bool:
    """An opcode changed to another (known) operator, an unknown builtin code, or CUSTOM."""
    if not model.opcodes:
        return False
    code = rng.choice(model.opcodes)
    how = rng.randrange(4)
    if how == 0:
        code.builtin = rng.choice((max(_BUILTINS) + 1, 200, 255, 1000, (1 << 31) - 1))
    elif how == 1:
        code.builtin, code.custom = tflite.BuiltinOperator.CUSTOM, rng.choice(("", "Fuzz", "\x00"))
    else:  # why most often: another operator's converter meets this operator's operands
        code.builtin = rng.choice(_BUILTINS)
    code.version = rng.choice((code.version, 0, 1, 99))
    return True


@_structured
def options_table(model: FbModel, rng: random.Random) -> bool:
    """An operator's options missing, tagged as another table, or given another table."""
    op = _pick_op(model, rng)
    if op is None:
        return False
    how = rng.randrange(3)
    if how == 0:
        op.options_type, op.options_class, op.options = 0, None, {}
    elif how == 1:  # the tag says one table, the bytes hold another
        op.options_type = rng.choice(_OPTION_TAGS)
    else:
        op.options_type = rng.choice(_OPTION_TAGS)
        op.options_class, op.options = option_class(op.options_type), {}
    return True


def _option_value(rng: random.Random, old: object) -> object:
    if isinstance(old, bool):
        return not old
    if isinstance(old, float):
        return rng.choice(_HOSTILE_FLOATS)
    return _hostile_int(rng)


@_structured
def option_values(model: FbModel, rng: random.Random) -> bool:
    """One options field (stride, dilation, filter size, axis, padding, activation, beta...)
    set to zero, negative, huge or non-finite."""
    ops = [op for op in _main(model).operators if op.options]
    if not ops:
        return False
    op = rng.choice(ops)
    for key in rng.sample(sorted(op.options), k=min(len(op.options), rng.randint(1, 2))):
        old = op.options[key]
        if isinstance(old, list):
            op.options[key] = [_hostile_int(rng) for _ in range(rng.randint(0, 5))]
        else:
            op.options[key] = _option_value(rng, old)
    return True


_WINDOW_FIELDS = ("StrideW", "StrideH", "DilationWFactor", "DilationHFactor", "FilterWidth",
                  "FilterHeight", "DepthMultiplier", "Padding")


@_structured
def window_attrs(model: FbModel, rng: random.Random) -> bool:
    """A convolution's or pool's stride, dilation, filter size or padding zero or huge."""
    ops = [op for op in _main(model).operators if any(k in op.options for k in _WINDOW_FIELDS)]
    if not ops:
        return False
    op = rng.choice(ops)
    key = rng.choice([k for k in _WINDOW_FIELDS if k in op.options])
    op.options[key] = rng.choice((0, -1, 2, 3, 100, 1 << 15, (1 << 31) - 1, -(1 << 31)))
    return True


@_structured
def quantization(model: FbModel, rng: random.Random) -> bool:
    """A tensor's quantization with empty, mismatched, zero, negative or NaN scales, zero
    points out of range, a quantized dimension out of range, or none at all."""
    sg = _main(model)
    quantized = [t for t in sg.tensors if t.quant is not None]
    if not quantized:
        return False
    t = rng.choice(quantized)
    q = t.quant
    assert q is not None
    how = rng.randrange(7)
    if how == 0:
        q.scale = []
    elif how == 1:
        q.scale = q.scale + [q.scale[0]] * rng.randint(1, 3)
    elif how == 2:
        q.scale[rng.randrange(len(q.scale))] = rng.choice(_HOSTILE_FLOATS)
    elif how == 3:
        q.zero_point = [rng.choice((-129, 128, 1 << 40, -(1 << 40), 32768))] * max(
            1, len(q.zero_point))
    elif how == 4:
        q.zero_point = q.zero_point[:0] if rng.random() < 0.5 else q.zero_point + [0, 0]
    elif how == 5:
        q.axis = _hostile_int(rng, len(t.shape))
    else:
        t.quant = None
    return True


def _poke_floats(data: bytes, rng: random.Random) -> bytes:
    arr = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = 4 * rng.randrange(len(arr) // 4)
        arr[at:at + 4] = struct.pack("<f", rng.choice((math.nan, math.inf, -math.inf, 3.4e38)))
    return bytes(arr)


@_structured
def weight_values(model: FbModel, rng: random.Random) -> bool:
    """Non-finite float weights, or extreme int32 / int64 constants (biases, shapes)."""
    consts = [t for t in _const_tensors(model) if t.type in (0, 2, 4)]  # float32, int32, int64
    if not consts:
        return False
    t = rng.choice(consts)
    data = model.buffers[t.buffer]
    if len(data) < 4:
        return False
    if t.type == tflite.TensorType.FLOAT32:
        model.buffers[t.buffer] = _poke_floats(data, rng)
    else:
        width = 4 if t.type == tflite.TensorType.INT32 else 8
        arr = np.frombuffer(data[: len(data) // width * width], f"<i{width}").copy()
        if arr.size == 0:
            return False
        info = np.iinfo(arr.dtype)
        arr[rng.randrange(arr.size)] = rng.choice((info.max, info.min, -1, 0, 1 << 20))
        model.buffers[t.buffer] = arr.tobytes() + data[arr.nbytes:]
    return True


@_structured
def axis_operands(model: FbModel, rng: random.Random) -> bool:
    """A small integer constant (axes, permutation, begin / end, paddings, a shape) with an
    entry out of range, or an entry duplicated."""
    consts = [t for t in _const_tensors(model)
              if t.type in (2, 4) and len(model.buffers[t.buffer]) <= 64]
    if not consts:
        return False
    t = rng.choice(consts)
    width = 4 if t.type == tflite.TensorType.INT32 else 8
    data = model.buffers[t.buffer]
    arr = np.frombuffer(data[: len(data) // width * width], f"<i{width}").copy()
    if arr.size == 0:
        return False
    k = rng.randrange(arr.size)
    arr[k] = rng.choice((-9, -5, -1, 4, 5, 8, 100, int(arr[0]), int(np.iinfo(arr.dtype).min)))
    model.buffers[t.buffer] = arr.tobytes() + data[arr.nbytes:]
    return True


@_structured
def tensor_type(model: FbModel, rng: random.Random) -> bool:
    """A tensor's element type changed to another (maybe unsupported or unknown) type."""
    sg = _main(model)
    if not sg.tensors:
        return False
    t = rng.choice(sg.tensors)
    t.type = rng.choice((*_TENSOR_TYPES, max(_TENSOR_TYPES) + 1, 100, 127))
    return True


@_structured
def buffer_index(model: FbModel, rng: random.Random) -> bool:
    """A tensor pointing at a buffer out of range, at buffer 0, or at another tensor's data."""
    sg = _main(model)
    if not sg.tensors:
        return False
    t = rng.choice(sg.tensors)
    n = len(model.buffers)
    t.buffer = rng.choice((n, n + 1, 0xFFFFFFFF, 0, rng.randrange(max(n, 1))))
    return True


@_structured
def subgraphs(model: FbModel, rng: random.Random) -> bool:
    """Subgraphs that call each other (a cycle), an empty subgraph, or none at all."""
    how = rng.randrange(4)
    if how == 0:
        model.subgraphs.clear()
        return True
    if how == 1:
        model.subgraphs.insert(0, FbSubgraph(name="empty"))
        return True
    # a control-flow operator in the main subgraph calling subgraph 0 (itself) or 1 (which
    # calls 0 back)
    sg = _main(model)
    model.subgraphs.append(FbSubgraph(sg.tensors, list(sg.inputs), list(sg.outputs),
                                      list(sg.operators), "callee"))
    name = rng.choice(_CONTROL_FLOW)
    model.opcodes.append(FbOpcode(getattr(tflite.BuiltinOperator, name)))
    options = {"CALL_ONCE": ("CallOnceOptions", {"InitSubgraphIndex": 0}),
               "WHILE": ("WhileOptions", {"CondSubgraphIndex": 0, "BodySubgraphIndex": 1}),
               "IF": ("IfOptions", {"ThenSubgraphIndex": 1, "ElseSubgraphIndex": 0})}[name]
    op = FbOperator(len(model.opcodes) - 1, list(sg.inputs), list(sg.outputs),
                    getattr(tflite.BuiltinOptions, options[0]), options[0], dict(options[1]))
    sg.operators.insert(rng.randint(0, len(sg.operators)), op)
    return True


@_structured
def graph_io(model: FbModel, rng: random.Random) -> bool:
    """Graph inputs equal to its outputs, an operator reading its own output, two operators
    writing one tensor, or no inputs / outputs / operators."""
    sg = _main(model)
    how = rng.randrange(6)
    if how == 0:
        sg.outputs = list(sg.inputs)
    elif how == 1:
        sg.inputs = list(sg.outputs)
    elif how == 2 and sg.operators:
        op = rng.choice(sg.operators)
        if op.inputs and op.outputs:
            op.inputs[0] = op.outputs[0]
    elif how == 3 and len(sg.operators) > 1:
        a, b = rng.sample(sg.operators, 2)
        if a.outputs and b.outputs:
            b.outputs[0] = a.outputs[0]
    elif how == 4:
        sg.operators.clear()
    else:
        setattr(sg, rng.choice(("inputs", "outputs")), [])
    return True


@_structured
def operator_order(model: FbModel, rng: random.Random) -> bool:
    """Operators reordered so one reads a tensor before it is written, or one duplicated."""
    ops = _main(model).operators
    if len(ops) < 2:
        return False
    if rng.random() < 0.5:
        i, j = rng.sample(range(len(ops)), 2)
        ops[i], ops[j] = ops[j], ops[i]
    else:
        ops.insert(rng.randrange(len(ops)), rng.choice(ops))
    return True


def _tensor_quant_like(t: FbTensor) -> FbQuant | None:
    return None if t.quant is None else FbQuant(list(t.quant.scale), list(t.quant.zero_point),
                                                t.quant.axis)


@_structured
def variable_tensor(model: FbModel, rng: random.Random) -> bool:
    """A tensor marked as variable (state), or a state tensor duplicated as a graph input."""
    sg = _main(model)
    if not sg.tensors:
        return False
    t = rng.choice(sg.tensors)
    t.is_variable = not t.is_variable
    if rng.random() < 0.3:
        sg.tensors.append(FbTensor(f"{t.name}/copy", list(t.shape), t.type, t.buffer,
                                   _tensor_quant_like(t), True))
        sg.inputs.append(len(sg.tensors) - 1)
    return True


# Operators with the same operands, one group each: swapping within a group keeps every shape
# check happy and puts the runtimes' arithmetic on values it was not written for (LOG of a
# negative, DIV by zero, EXP of a large int8 range).
_SIMILAR = (
    ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "PRELU"),
    ("RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "ABS", "NEG", "SQRT",
     "RSQRT", "EXP", "LOG", "LEAKY_RELU", "QUANTIZE", "DEQUANTIZE", "L2_NORMALIZATION",
     "SOFTMAX"),
    ("MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D"),
    ("REDUCE_MAX", "REDUCE_MIN", "SUM", "MEAN", "REDUCE_PROD", "CUMSUM"),
    ("ARG_MAX", "ARG_MIN"),
    ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"),
    ("CONV_2D", "DEPTHWISE_CONV_2D"),
    ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"),
)


@_structured
def similar_operator(model: FbModel, rng: random.Random) -> bool:
    """An opcode swapped for another operator that takes the same operands."""
    by_code = {getattr(tflite.BuiltinOperator, n): group for group in _SIMILAR for n in group
               if hasattr(tflite.BuiltinOperator, n)}
    codes = [c for c in model.opcodes if c.builtin in by_code]
    if not codes:
        return False
    code = rng.choice(codes)
    code.builtin = getattr(tflite.BuiltinOperator, rng.choice(by_code[code.builtin]))
    return True


# Names that break naive string handling: empty, a newline (it would split a one-line
# error), control characters, non-ASCII, format directives, very long.
_HOSTILE_NAMES = ("", "\n", "a\nb", "\r", "\x00", "\u00e9\u4e2d\U0001f600", "%s%n{}", "x" * 5000)


@_structured
def tensor_name(model: FbModel, rng: random.Random) -> bool:
    """A tensor renamed to a hostile string, or to another tensor's name."""
    sg = _main(model)
    if not sg.tensors:
        return False
    t = rng.choice(sg.tensors)
    t.name = rng.choice((*_HOSTILE_NAMES, rng.choice(sg.tensors).name))
    return True


TFLITE_MUTATORS: list[Mutator] = [
    buffer_length, tensor_shape, tensor_index, operand_count, opcode_index, builtin_code,
    similar_operator, options_table, option_values, window_attrs, quantization, weight_values,
    axis_operands, tensor_type, buffer_index, subgraphs, graph_io, operator_order,
    variable_tensor, tensor_name,
]


def mutate(data: bytes, rng: random.Random, rounds: int = 1) -> bytes:
    """``rounds`` mutators picked at random, applied in turn."""
    for _ in range(rounds):
        data = rng.choice(TFLITE_MUTATORS)(data, rng)
    return data
