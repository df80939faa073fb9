"""Recurrent operators: LSTM (a whole unidirectional sequence), GRU and SVDF.

=======  ==========================================================  ==========================
op       inputs                                                      attrs
=======  ==========================================================  ==========================
LSTM     TFLite's 24 operands (``LSTM_OPERANDS``), "" when omitted:  time_major, activation,
         x[B,T,I] (or [T,B,I] time-major), gate weights [H,I] and    cell_clip, proj_clip,
         [H,H], peepholes [H], biases [H], projection, hidden state  gate_clip
         h0[B,H], cell state c0[B,H], layer-norm coefficients [H]
GRU      x, w[3H,I], r[3H,H] (gates z, r, h), wb[3H]?, rb[3H]?,      time_major,
         h0[B,H]                                                     linear_before_reset,
                                                                     gate_clip
SVDF     x[B,I], weights_feature[F,I], weights_time[F,M], bias[U]?,  rank, activation
         state[B,M*F] (F = U * rank)
=======  ==========================================================  ==========================

LSTM outputs ``y`` ([B,T,H] or [T,B,H], the first input's type) and optionally the final
hidden and cell states ([B,H] each; ONNX's Y_h and Y_c); GRU ``y`` and optionally the final
hidden state; SVDF ``y`` and optionally the new state (the input state shifted by one step
with the newest features). The state inputs hold the state each inference starts from
(TFLite's variable tensors become graph state, ``edgenn.ir.state``, whose new values are these
extra outputs; ONNX's initial_h / initial_c may be graph inputs).
``activation`` is the cell gate's ("tanh" or "sigmoid"; the hidden state always goes through
tanh, as in TFLite Micro); ``cell_clip`` / ``proj_clip`` are TFLite's (0: none) and
``gate_clip`` ONNX's clip of every gate's pre-activation (0: none).
"""

from __future__ import annotations

from collections.abc import Sequence

from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.schema import F32, I8, I16, define_op
from edgenn.ir.shape_rules import Inferred, fail, need, need_rank, register_shape
from edgenn.ir.tensor import Tensor

# TFLite's operand order of (UNIDIRECTIONAL_SEQUENCE_)LSTM, which IR LSTM keeps.
LSTM_OPERANDS = (
    "input",
    "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
    "input_to_output_weights",
    "recurrent_to_input_weights", "recurrent_to_forget_weights", "recurrent_to_cell_weights",
    "recurrent_to_output_weights",
    "cell_to_input_weights", "cell_to_forget_weights", "cell_to_output_weights",
    "input_gate_bias", "forget_gate_bias", "cell_gate_bias", "output_gate_bias",
    "projection_weights", "projection_bias",
    "output_state", "cell_state",
    "input_layer_norm_coefficients", "forget_layer_norm_coefficients",
    "cell_layer_norm_coefficients", "output_layer_norm_coefficients",
)
LSTM_INDEX = {name: i for i, name in enumerate(LSTM_OPERANDS)}
LSTM_ACTIVATIONS = ("tanh", "sigmoid")

define_op("LSTM", "unidirectional LSTM over a whole sequence (TFLite's 24 operands)",
          (F32, I8, I16), required=("time_major",),
          optional=("activation", "cell_clip", "proj_clip", "gate_clip"),
          tflite=("UNIDIRECTIONAL_SEQUENCE_LSTM",), onnx=("LSTM",))
define_op("GRU", "unidirectional GRU over a whole sequence (ONNX gate order z, r, h)", (F32,),
          required=("time_major",), optional=("linear_before_reset", "gate_clip"),
          onnx=("GRU",))
define_op("SVDF", "singular value decomposition filter with a state of past features",
          (F32, I8), required=("rank",), optional=("activation",), tflite=("SVDF",))


def sequence_dims(x: Tensor, time_major: bool) -> tuple[int, int, int]:
    """(batch, time, features) of a rank-3 sequence tensor."""
    a, b, features = x.shape
    return (b, a, features) if time_major else (a, b, features)


def _optional(inputs: Sequence[Tensor | None], index: int) -> Tensor | None:
    return inputs[index] if index < len(inputs) else None


def _expect(node: Node, t: Tensor | None, shape: tuple[int, ...], what: str) -> None:
    if t is not None and t.shape != shape:
        raise fail(node, f"{what} {t.name!r} has shape {list(t.shape)}, expected {list(shape)}")


def _expect_state(node: Node, t: Tensor | None, batch: int, units: int, what: str) -> None:
    # why by size: TFLite allows the state tensors to be [B, H] or flat
    if t is not None and t.size != batch * units:
        raise fail(node, f"{what} {t.name!r} has shape {list(t.shape)}, expected "
                         f"{batch * units} elements ([{batch}, {units}])")


def _check_operand_sets(node: Node, inputs: Sequence[Tensor | None]) -> None:
    """TFLite's rules on which optional LSTM operands go together (``lstm.cc``,
    ``CheckInputTensorDimensions``): a file breaking them is corrupt, so it is refused here at
    import rather than by a backend later."""
    def present(name: str) -> bool:
        return _optional(inputs, LSTM_INDEX[name]) is not None

    for gate in ("forget", "cell", "output"):
        for name in (f"input_to_{gate}_weights", f"recurrent_to_{gate}_weights",
                     f"{gate}_gate_bias"):
            if not present(name):
                raise fail(node, f"operand {name} is missing")
    # why these sets: without input_to_input_weights the cell couples its input and forget
    # gates (CIFG) and has no input gate at all
    cifg = not present("input_to_input_weights")
    input_gate = ["recurrent_to_input_weights", "input_gate_bias"]
    peepholes = ["cell_to_forget_weights", "cell_to_output_weights"]
    norms = [f"{g}_layer_norm_coefficients" for g in ("forget", "cell", "output")]
    for name in ("cell_to_input_weights", "input_layer_norm_coefficients"):
        if not cifg:
            (peepholes if name.startswith("cell") else norms).append(name)
        elif present(name):
            raise fail(node, f"operand {name} is given but input_to_input_weights is not "
                             "(a cell without an input gate)")
    sets = [(["input_to_input_weights", *input_gate], "the input gate"),
            (peepholes, "the peepholes"), (norms, "layer normalization")]
    for names, what in sets:
        have = [n for n in names if present(n)]
        if have and len(have) != len(names):
            missing = [n for n in names if not present(n)]
            raise fail(node, f"operands of {what}: {', '.join(have)} given but "
                             f"{', '.join(missing)} missing")
    if present("projection_bias") and not present("projection_weights"):
        raise fail(node, "projection_bias is given without projection_weights")


@register_shape("LSTM")
def _lstm(node: Node, inputs: list[Tensor | None]) -> Inferred:
    if len(inputs) != len(LSTM_OPERANDS):
        raise fail(node, f"takes {len(LSTM_OPERANDS)} operands (TFLite's order), got "
                         f"{len(inputs)}")
    x = need(node, inputs, 0)
    need_rank(node, x, 3)
    batch, _, n_input = sequence_dims(x, bool(node.attr("time_major")))
    w_forget = need(node, inputs, LSTM_INDEX["input_to_forget_weights"])
    need_rank(node, w_forget, 2)
    n_cell = w_forget.shape[0]
    _check_operand_sets(node, inputs)
    proj = _optional(inputs, LSTM_INDEX["projection_weights"])
    n_out = proj.shape[0] if proj is not None and len(proj.shape) == 2 else n_cell
    for gate in ("input", "forget", "cell", "output"):
        _expect(node, _optional(inputs, LSTM_INDEX[f"input_to_{gate}_weights"]),
                (n_cell, n_input), f"input_to_{gate}_weights")
        _expect(node, _optional(inputs, LSTM_INDEX[f"recurrent_to_{gate}_weights"]),
                (n_cell, n_out), f"recurrent_to_{gate}_weights")
        _expect(node, _optional(inputs, LSTM_INDEX[f"{gate}_gate_bias"]), (n_cell,),
                f"{gate}_gate_bias")
        _expect(node, _optional(inputs, LSTM_INDEX[f"{gate}_layer_norm_coefficients"]),
                (n_cell,), f"{gate}_layer_norm_coefficients")
    for gate in ("input", "forget", "output"):
        _expect(node, _optional(inputs, LSTM_INDEX[f"cell_to_{gate}_weights"]), (n_cell,),
                f"cell_to_{gate}_weights")
    _expect(node, proj, (n_out, n_cell), "projection_weights")
    _expect(node, _optional(inputs, LSTM_INDEX["projection_bias"]), (n_out,),
            "projection_bias")
    hidden = need(node, inputs, LSTM_INDEX["output_state"])
    cell = need(node, inputs, LSTM_INDEX["cell_state"])
    _expect_state(node, hidden, batch, n_out, "output_state")
    _expect_state(node, cell, batch, n_cell, "cell_state")
    if node.attr("activation", "tanh") not in LSTM_ACTIVATIONS:
        raise fail(node, f"cell gate activation {node.attr('activation')!r} is not one of "
                         f"{', '.join(LSTM_ACTIVATIONS)}")
    a, b, _ = x.shape
    out: Inferred = [((a, b, n_out), x.dtype)]
    if len(node.outputs) == 3:
        out += [((batch, n_out), hidden.dtype), ((batch, n_cell), cell.dtype)]
    elif len(node.outputs) != 1:
        raise fail(node, f"has 1 or 3 outputs (y, final hidden, final cell), got "
                         f"{len(node.outputs)}")
    return out


@register_shape("GRU")
def _gru(node: Node, inputs: list[Tensor | None]) -> Inferred:
    if len(inputs) != 6:
        raise fail(node, f"takes 6 operands (x, w, r, wb, rb, h0), got {len(inputs)}")
    x, w, r, h0 = need(node, inputs, 0), need(node, inputs, 1), need(node, inputs, 2), need(
        node, inputs, 5)
    need_rank(node, x, 3)
    need_rank(node, w, 2)
    batch, _, n_input = sequence_dims(x, bool(node.attr("time_major")))
    if w.shape[0] % 3:
        raise fail(node, f"weights {list(w.shape)} do not stack three gates")
    hidden = w.shape[0] // 3
    _expect(node, w, (3 * hidden, n_input), "w")
    _expect(node, r, (3 * hidden, hidden), "r")
    _expect(node, inputs[3], (3 * hidden,), "wb")
    _expect(node, inputs[4], (3 * hidden,), "rb")
    _expect_state(node, h0, batch, hidden, "h0")
    for t in (w, r, inputs[3], inputs[4], h0):
        if t is not None and t.dtype is not DType.FLOAT32:
            raise fail(node, f"operand {t.name!r} is {t.dtype.value}; GRU is float32 only")
    a, b, _ = x.shape
    out: Inferred = [((a, b, hidden), x.dtype)]
    if len(node.outputs) == 2:
        out.append(((batch, hidden), x.dtype))
    elif len(node.outputs) != 1:
        raise fail(node, f"has 1 or 2 outputs (y, final hidden), got {len(node.outputs)}")
    return out


@register_shape("SVDF")
def _svdf(node: Node, inputs: list[Tensor | None]) -> Inferred:
    if len(inputs) != 5:
        raise fail(node, f"takes 5 operands (x, weights_feature, weights_time, bias, state), "
                         f"got {len(inputs)}")
    x, wf, wt, state = (need(node, inputs, i) for i in (0, 1, 2, 4))
    need_rank(node, x, 2)
    need_rank(node, wf, 2)
    need_rank(node, wt, 2)
    batch, n_input = x.shape
    rank = node.attr("rank")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise fail(node, f"rank must be a positive integer, got {rank!r}")
    filters, memory = wt.shape
    if wf.shape != (filters, n_input) or filters % rank:
        raise fail(node, f"weights_feature {list(wf.shape)}, weights_time {list(wt.shape)}, "
                         f"input {list(x.shape)} and rank {rank} do not agree")
    units = filters // rank
    _expect(node, inputs[3], (units,), "bias")
    _expect(node, state, (batch, memory * filters), "state")
    out: Inferred = [((batch, units), x.dtype)]
    if len(node.outputs) == 2:
        out.append((state.shape, state.dtype))
    elif len(node.outputs) != 1:
        raise fail(node, f"has 1 or 2 outputs (y, new state), got {len(node.outputs)}")
    return out
