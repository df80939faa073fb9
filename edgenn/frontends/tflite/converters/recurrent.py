"""Converters of TFLite's recurrent operators: UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF.

Their state operands are TFLite variable tensors, which TFLite Micro updates in place and
keeps from one invocation to the next: each becomes graph state (``Builder.state``) whose new
value is an extra output of the node (LSTM's final hidden and cell state, SVDF's new state).
"""

from __future__ import annotations

import tflite

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import (
    converter,
    need_options,
    optional_input_name,
    output_name,
)
from edgenn.ir import DType, Node
from edgenn.ir.opdefs.recurrent import LSTM_INDEX, LSTM_OPERANDS

_TANH = tflite.ActivationFunctionType.TANH
# Files written before layer normalization existed have 20 LSTM operands.
_LSTM_OPERAND_COUNTS = (20, len(LSTM_OPERANDS))


@converter("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(b: Builder, op: RawOperator) -> None:
    need_options(b, op, "time_major", "cell_clip", "proj_clip", "activation")
    if len(op.inputs) not in _LSTM_OPERAND_COUNTS:
        raise b.fail(op, f"UNIDIRECTIONAL_SEQUENCE_LSTM takes 24 operands, got {len(op.inputs)}")
    if int(op.options["activation"]) != _TANH:
        raise b.unsupported(op, "UNIDIRECTIONAL_SEQUENCE_LSTM supports only the TANH cell "
                                f"activation, got code {int(op.options['activation'])}")
    if bool(op.options.get("diagonal_recurrent_tensors", False)):
        raise b.unsupported(op, "UNIDIRECTIONAL_SEQUENCE_LSTM with diagonal recurrent "
                                "weights is unsupported")
    cell_clip, proj_clip = float(op.options["cell_clip"]), float(op.options["proj_clip"])
    if not cell_clip >= 0.0 or not proj_clip >= 0.0:  # also rejects NaN
        raise b.fail(op, f"cell_clip {cell_clip} and proj_clip {proj_clip} must be >= 0")
    x = b.input(op, 0)
    for slot in (LSTM_INDEX["output_state"], LSTM_INDEX["cell_state"]):
        b.input(op, slot)  # required: one clear error when the file omits a state
    weights = b.input(op, LSTM_INDEX["input_to_forget_weights"])
    if x.dtype is DType.FLOAT32 and weights.dtype is not DType.FLOAT32:
        raise b.unsupported(op, "hybrid UNIDIRECTIONAL_SEQUENCE_LSTM (float input, "
                                f"{weights.dtype.value} weights) is unsupported")
    inputs = [x.name] + [optional_input_name(b, op, slot) if slot < len(op.inputs) else ""
                         for slot in range(1, len(LSTM_OPERANDS))]
    outputs = [output_name(b, op)]
    hidden = b.input(op, LSTM_INDEX["output_state"])
    cell = b.input(op, LSTM_INDEX["cell_state"])
    if hidden.name in b.variable_init or cell.name in b.variable_init:
        y = b.tensors[outputs[0]]
        # why here: the state outputs' shapes are read off these before the node is inferred
        if len(y.shape) != 3 or len(weights.shape) != 2:
            raise b.fail(op, f"UNIDIRECTIONAL_SEQUENCE_LSTM output {y.name!r} "
                             f"{list(y.shape)} must be 3-D and input_to_forget_weights "
                             f"{weights.name!r} {list(weights.shape)} 2-D")
        batch = y.shape[1] if bool(op.options["time_major"]) else y.shape[0]
        n_out, n_cell = y.shape[2], weights.shape[0]
        for state, units in ((hidden, n_out), (cell, n_cell)):
            new = b.add_intermediate(f"{b.op_name(op)}:{state.name}", state, (batch, units))
            outputs.append(new)
            if state.name in b.variable_init:
                b.variable_write[state.name] = new
    b.emit(Node(b.op_name(op), "LSTM", tuple(inputs), tuple(outputs),
                {"time_major": bool(op.options["time_major"]), "activation": "tanh",
                 "cell_clip": cell_clip, "proj_clip": proj_clip}))


@converter("SVDF")
def svdf(b: Builder, op: RawOperator) -> None:
    need_options(b, op, "rank")
    if len(op.inputs) != 5:  # TFLite's SVDF: x, weights_feature, weights_time, bias, state
        raise b.fail(op, f"SVDF takes 5 operands, got {len(op.inputs)}")
    rank = int(op.options["rank"])
    if rank < 1:
        raise b.fail(op, f"SVDF rank is {rank}")
    x = b.input(op, 0)
    state = b.input(op, 4)
    operands = (x.name, b.input(op, 1).name, b.input(op, 2).name, optional_input_name(b, op, 3),
                state.name)
    outputs = [output_name(b, op)]
    if state.name in b.variable_init:
        outputs.append(b.add_intermediate(f"{b.op_name(op)}:{state.name}", state, state.shape))
        b.variable_write[state.name] = outputs[-1]
    b.emit(Node(b.op_name(op), "SVDF", operands, tuple(outputs),
                {"rank": rank, "activation": b.activation(op)}))
