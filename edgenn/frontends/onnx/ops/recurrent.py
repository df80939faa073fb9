"""ONNX LSTM and GRU (float32, forward direction) onto IR ``LSTM`` / ``GRU``.

ONNX stacks the gates in one tensor per kind: LSTM ``W[1, 4H, I]`` in the order i, o, f, c,
``R[1, 4H, H]``, ``B[1, 8H]`` (input then recurrent biases) and peepholes ``P[1, 3H]`` (i, o,
f); IR LSTM takes TFLite's operands (one matrix per gate, one summed bias per gate). GRU keeps
ONNX's stacking (z, r, h) and its two biases, which ``linear_before_reset`` needs apart.
``layout`` 0 (``X[T, B, I]``) is a time-major sequence, 1 (``X[B, T, I]``) batch-major; ``Y``
(``[T, 1, B, H]`` / ``[B, T, 1, H]``), ``Y_h`` and ``Y_c`` (``[1, B, H]`` / ``[B, 1, H]``)
are reshapes of the IR outputs.

Refused with one error naming the node: reverse and bidirectional directions, ``input_forget``,
activations other than the defaults (an LSTM's cell gate may also be Sigmoid), a
``sequence_lens`` shorter than the sequence, and quantized (QDQ) recurrences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import NodeProto

from edgenn.frontends.onnx.context import Context
from edgenn.frontends.onnx.registry import converter
from edgenn.ir import DType, Node, Tensor
from edgenn.ir.opdefs.recurrent import LSTM_INDEX, LSTM_OPERANDS
from edgenn.ir.shapes import infer

_LSTM_GATES = ("input", "output", "forget", "cell")  # ONNX's order in W, R and B
_PEEPHOLES = ("input", "output", "forget")  # ONNX's order in P


def _check_common(ctx: Context, kinds: int) -> tuple[str, int, bool]:
    """(X's ONNX name, hidden size, time_major) after the checks LSTM and GRU share."""
    assert ctx.node is not None
    if ctx.quantized:
        raise ctx.fail(f"quantized {ctx.node.op_type} is not supported (float32 only)")
    direction = ctx.attr("direction", "forward")
    if direction != "forward":
        raise ctx.fail(f"{ctx.node.op_type} direction {direction!r} is not supported "
                       "(forward only)")
    x = ctx.need(0)
    if ctx.rank(x) != 3 or ctx.ir_tensor(x).dtype is not DType.FLOAT32:
        raise ctx.fail(f"{ctx.node.op_type} needs a float32 rank-3 input, got {x!r}")
    w = ctx.const_array(ctx.need(1))
    if w.ndim != 3 or w.shape[0] != 1 or w.shape[1] % kinds:
        raise ctx.malformed(f"weights of shape {list(w.shape)} are not [1, {kinds}*H, I]")
    hidden = w.shape[1] // kinds
    if int(ctx.attr("hidden_size", hidden)) != hidden:
        raise ctx.malformed(f"hidden_size {ctx.attr('hidden_size')} does not match the weights")
    layout = int(ctx.attr("layout", 0))
    if layout not in (0, 1):
        raise ctx.malformed(f"layout {layout} is not 0 or 1")
    steps = ctx.onnx_shape(x)[0 if layout == 0 else 1]
    lens = ctx.input(4)
    if lens is not None and (not ctx.is_const(lens) or np.any(ctx.const_array(lens) != steps)):
        raise ctx.fail("sequence_lens other than the full sequence length is not supported")
    return x, hidden, layout == 0


def _check_activations(ctx: Context, defaults: Sequence[str], cell: int | None) -> str:
    """The cell gate activation ("tanh" or "sigmoid"); anything else is refused."""
    acts = [a.decode() if isinstance(a, bytes) else str(a)
            for a in (ctx.attr("activations") or defaults)]
    ok = list(acts) == list(defaults)
    if cell is not None and not ok:
        alt = list(defaults)
        alt[cell] = "Sigmoid"
        ok = acts == alt
    if not ok:
        raise ctx.fail(f"activations {acts} are not supported (the defaults {list(defaults)})")
    return "sigmoid" if cell is not None and acts[cell] == "Sigmoid" else "tanh"


def _gate_clip(ctx: Context) -> float:
    clip = ctx.attr("clip")
    if clip is None:
        return 0.0
    if not float(clip) > 0:
        raise ctx.malformed(f"clip {clip} must be positive")
    return float(clip)


def _state(ctx: Context, index: int, hint: str, batch: int, hidden: int,
           time_major: bool) -> str:
    """An initial state ([1, B, H] or [B, 1, H] in ONNX) as an IR [B, H] tensor."""
    name = ctx.input(index)
    if name is None:
        return ctx.new_const(hint, np.zeros((batch, hidden), np.float32))
    if ctx.is_const(name):
        data = ctx.const_array(name)
        if data.size != batch * hidden:
            raise ctx.malformed(f"{hint} {name!r} of shape {list(data.shape)} does not hold "
                                f"[{batch}, {hidden}]")
        return ctx.new_const(name, data.astype(np.float32).reshape(batch, hidden))
    shape = ctx.onnx_shape(name)
    want = (1, batch, hidden) if time_major else (batch, 1, hidden)
    if tuple(shape) != want:
        raise ctx.malformed(f"{hint} {name!r} has shape {list(shape)}, expected {list(want)}")
    return ctx.emit("Reshape", [ctx.onnx_order(name)], {"shape": (batch, hidden)},
                    hint=f"{name}:2d")


def _fresh(ctx: Context, base: str) -> str:
    name, k = base, 1
    while name in ctx.tensors:
        name, k = f"{base}_{k}", k + 1
    return name


def _emit_sequence(ctx: Context, op: str, inputs: Sequence[str], attrs: dict[str, Any],
                   n_outputs: int) -> list[str]:
    """Append one multi-output recurrent node (``Context.emit`` makes single-output ones)."""
    base = ctx.node_name
    outs = [_fresh(ctx, f"{base}/{op}:{k}") for k in range(n_outputs)]
    node_names = {n.name for n in ctx.nodes}
    # why not the ONNX node's own name: Context.emit names the Reshapes after it
    node_name, k = f"{base}/{op}", 1
    while node_name in node_names:
        node_name, k = f"{base}/{op}_{k}", k + 1
    node = Node(node_name, op, tuple(inputs), tuple(outs), attrs)
    for name, (shape, dtype) in zip(outs, infer(node, [ctx.tensors[i] if i else None
                                                        for i in inputs]), strict=True):
        ctx.tensors[name] = Tensor(name, shape, dtype)
    ctx.nodes.append(node)
    return outs


def _bind_outputs(ctx: Context, y: str, states: Sequence[str], time_major: bool) -> None:
    """Reshape the IR outputs to ONNX's Y ([T,1,B,H] / [B,T,1,H]) and states ([1,B,H] /
    [B,1,H]) and bind the ONNX output names the node has."""
    assert ctx.node is not None
    a, b, hidden = ctx.tensors[y].shape
    onnx_outs = list(ctx.node.output) + [""] * (1 + len(states))
    if onnx_outs[0]:
        y_shape = (a, 1, b, hidden) if time_major else (a, b, 1, hidden)
        ctx.emit("Reshape", [y], {"shape": y_shape}, out=onnx_outs[0])
    for k, state in enumerate(states, start=1):
        if onnx_outs[k]:
            batch = ctx.tensors[state].shape[0]
            shape = (1, batch, hidden) if time_major else (batch, 1, hidden)
            ctx.emit("Reshape", [state], {"shape": shape}, out=onnx_outs[k])


@converter("LSTM")
def convert_lstm(ctx: Context, node: NodeProto) -> None:
    x, hidden, time_major = _check_common(ctx, 4)
    if int(ctx.attr("input_forget", 0)):
        raise ctx.fail("LSTM with input_forget (coupled input and forget gates) is not "
                       "supported")
    activation = _check_activations(ctx, ("Sigmoid", "Tanh", "Tanh"), cell=1)
    w = ctx.const_array(ctx.need(1))[0]
    r = ctx.const_array(ctx.need(2))[0]
    if r.shape != (4 * hidden, hidden):
        raise ctx.malformed(f"recurrent weights of shape {list(r.shape)} are not "
                            f"[1, {4 * hidden}, {hidden}]")
    b_name = ctx.input(3)
    b = ctx.const_array(b_name).reshape(-1) if b_name else np.zeros(8 * hidden, np.float32)
    if b.size != 8 * hidden:
        raise ctx.malformed(f"bias of {b.size} values is not [1, {8 * hidden}]")
    operands = [""] * len(LSTM_OPERANDS)
    operands[0] = ctx.onnx_order(x)
    base = ctx.node_name
    for k, gate in enumerate(_LSTM_GATES):
        rows = slice(k * hidden, (k + 1) * hidden)
        operands[LSTM_INDEX[f"input_to_{gate}_weights"]] = ctx.new_const(
            f"{base}/w_{gate}", np.ascontiguousarray(w[rows], np.float32))
        operands[LSTM_INDEX[f"recurrent_to_{gate}_weights"]] = ctx.new_const(
            f"{base}/r_{gate}", np.ascontiguousarray(r[rows], np.float32))
        bias = b[rows] + b[4 * hidden:][rows]
        operands[LSTM_INDEX[f"{gate}_gate_bias"]] = ctx.new_const(
            f"{base}/b_{gate}", bias.astype(np.float32))
    p_name = ctx.input(7)
    if p_name is not None:
        p = ctx.const_array(p_name).reshape(-1)
        if p.size != 3 * hidden:
            raise ctx.malformed(f"peepholes of {p.size} values are not [1, {3 * hidden}]")
        for k, gate in enumerate(_PEEPHOLES):
            operands[LSTM_INDEX[f"cell_to_{gate}_weights"]] = ctx.new_const(
                f"{base}/p_{gate}", p[k * hidden:(k + 1) * hidden].astype(np.float32))
    shape = ctx.onnx_shape(x)
    batch = shape[1] if time_major else shape[0]
    operands[LSTM_INDEX["output_state"]] = _state(ctx, 5, "initial_h", batch, hidden,
                                                  time_major)
    operands[LSTM_INDEX["cell_state"]] = _state(ctx, 6, "initial_c", batch, hidden,
                                                time_major)
    attrs = {"time_major": time_major, "activation": activation,
             "gate_clip": _gate_clip(ctx)}
    y, h, c = _emit_sequence(ctx, "LSTM", operands, attrs, 3)
    _bind_outputs(ctx, y, (h, c), time_major)


@converter("GRU")
def convert_gru(ctx: Context, node: NodeProto) -> None:
    x, hidden, time_major = _check_common(ctx, 3)
    _check_activations(ctx, ("Sigmoid", "Tanh"), cell=None)
    w = ctx.const_array(ctx.need(1))[0]
    r = ctx.const_array(ctx.need(2))[0]
    base = ctx.node_name
    operands = [ctx.onnx_order(x), ctx.new_const(f"{base}/w", np.ascontiguousarray(w)),
                ctx.new_const(f"{base}/r", np.ascontiguousarray(r)), "", ""]
    b_name = ctx.input(3)
    if b_name is not None:
        b = ctx.const_array(b_name).reshape(-1)
        if b.size != 6 * hidden:
            raise ctx.malformed(f"bias of {b.size} values is not [1, {6 * hidden}]")
        operands[3] = ctx.new_const(f"{base}/wb", np.ascontiguousarray(b[:3 * hidden]))
        operands[4] = ctx.new_const(f"{base}/rb", np.ascontiguousarray(b[3 * hidden:]))
    shape = ctx.onnx_shape(x)
    batch = shape[1] if time_major else shape[0]
    operands.append(_state(ctx, 5, "initial_h", batch, hidden, time_major))
    attrs = {"time_major": time_major,
             "linear_before_reset": int(ctx.attr("linear_before_reset", 0)),
             "gate_clip": _gate_clip(ctx)}
    y, h = _emit_sequence(ctx, "GRU", operands, attrs, 2)
    _bind_outputs(ctx, y, (h,), time_major)
