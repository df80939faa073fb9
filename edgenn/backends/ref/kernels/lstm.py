"""LSTM over a whole sequence, float32 and integer, exactly as TFLite Micro's
UNIDIRECTIONAL_SEQUENCE_LSTM (``lstm_eval.h`` / ``lstm_eval_common.cc``).

Per time step, for the gates forget, input, cell, output (in that order, as TFLM):
``gate = act(FC(x_t, W_g) + b_g + FC(h, R_g))``; then ``c = f * c + i * g`` (clipped to
``cell_clip``) and ``h = tanh(c) * o``; ``y_t = h``.

The integer kernel (int8 activations with int16 weights' products: 8x8->16, or int16
activations: 16x8->16) keeps the gates in Q3.12 before and Q0.15 after their activation and
the cell state in int16 at a power-of-two scale. Its constants (the record of
``edgenn.prepared.lstm``, which the Cortex-M kernel takes too) come from TFLM's
``PrepareGateParametersInteger``: each FC requantizes to the Q3.12 scale 2^-12 with the
multiplier of ``in_scale * w_scale / 2^-12`` (the product of the two float32 scales taken in
double, as TFLM's ``GetQuantizedConvolutionMultipler``; clamped to int16), the element-wise
products use the multipliers of ``CreateInterGateMulParams`` and the activations are TFLM's
int16 LUT sigmoid / tanh (``reference_integer_ops::Logistic`` / ``Tanh`` with the LSTM's own input
scaling). The zero points of the int8 input and hidden state are folded into the biases
(exact in int32 arithmetic), so the Cortex-M kernel takes the same numbers.

Batch layout: the runtime stacks samples on axis 0. Batch-major sequences ``[N, T, I]`` are
``N`` independent rows; time-major ``[N*T, B, I]`` holds ``N`` samples of ``T`` steps. Row
``r`` of a sample starts from row ``r % B`` of the initial states.

Float32 also takes what TFLM refuses but ONNX has: peepholes and ``gate_clip``. CIFG,
projection and layer normalization are refused with one error naming the node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point_s16 import INT16_MAX, INT16_MIN
from edgenn.arith.int16_curves import int16_sigmoid, int16_tanh
from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import ShapeError
from edgenn.ir import DType
from edgenn.ir.opdefs.recurrent import LSTM_INDEX
from edgenn.prepared.lstm import (
    GATE_TANH_SCALING,
    GATES,
    IntArray,
    IntegerGate,
    prepare_lstm,
)


# -- the layer ---------------------------------------------------------------------------------
@register("LSTM", DType.FLOAT32, DType.INT8, DType.INT16)
class Lstm(Layer):
    """See the module docstring."""

    def build(self) -> None:
        p = prepare_lstm(self.node, self.graph)
        self.time_major, self.activation = p.time_major, p.activation
        self.cell_clip, self.gate_clip = p.cell_clip, p.gate_clip
        self.operands = Operands(self.inputs)
        self.present = [i for i, t in enumerate(self.inputs) if t is not None]
        x = self.inputs[0]
        assert x is not None
        self.x_shape = x.shape
        self.n_cell, self.extra_outputs = p.n_cell, p.extra_outputs
        self.integer = p.integer is not None
        if p.integer is not None:
            self.params = p.integer
        else:
            self.w_f, self.r_f, self.b_f = p.w_f, p.r_f, p.b_f
            self.peephole = p.peephole or {}

    def _gate_f32(self, k: int, x_t: np.ndarray, h: np.ndarray, c: np.ndarray | None,
                  activation: str) -> np.ndarray:
        z = (x_t @ self.w_f[k] + self.b_f[k]) + h @ self.r_f[k]
        peep = self.peephole.get(GATES[k])
        if peep is not None and c is not None:
            z = z + peep * c
        if self.gate_clip > 0:
            z = np.clip(z, -self.gate_clip, self.gate_clip)
        return sigmoid_f32(z) if activation == "sigmoid" else np.tanh(z)

    def _step_f32(self, x_t: np.ndarray, h: np.ndarray,
                  c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = self._gate_f32(0, x_t, h, c, "sigmoid")
        i = self._gate_f32(1, x_t, h, c, "sigmoid")
        g = self._gate_f32(2, x_t, h, None, self.activation)
        c = f * c + i * g
        if self.cell_clip > 0:
            c = np.clip(c, -self.cell_clip, self.cell_clip)
        o = self._gate_f32(3, x_t, h, c, "sigmoid")  # the output peephole sees the new cell
        return (np.tanh(c) * o).astype(np.float32), c.astype(np.float32)

    # -- integer -------------------------------------------------------------------------------
    def _gate_int(self, gate: IntegerGate, x_t: IntArray, h: IntArray) -> IntArray:
        p = self.params
        acc_w = x_t @ gate.w.T + gate.bias_w
        acc_r = h @ gate.r.T + gate.bias_r
        z = np.clip(gate.fc_w(acc_w, p.wide) + gate.fc_r(acc_r, p.wide), INT16_MIN, INT16_MAX)
        if gate.activation == "sigmoid":
            return int16_sigmoid(z)
        return int16_tanh(z, GATE_TANH_SCALING)

    def _step_int(self, x_t: IntArray, h: IntArray, c: IntArray) -> tuple[IntArray, IntArray]:
        p = self.params
        f = self._gate_int(p.gates[0], x_t, h)
        i = self._gate_int(p.gates[1], x_t, h)
        g = self._gate_int(p.gates[2], x_t, h)
        c = np.clip(p.forget_mul(f * c) + p.input_mul(i * g), INT16_MIN, INT16_MAX)
        if p.cell_clip > 0:
            c = np.clip(c, -p.cell_clip, p.cell_clip)
        o = self._gate_int(p.gates[3], x_t, h)
        return p.output_mul(int16_tanh(c, p.cell_tanh) * o), c

    # -- the sequence --------------------------------------------------------------------------
    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        ops = dict(zip(self.present, self.operands.gather(xs), strict=True))
        x = ops[0]
        rows, steps = sequence_rows(x, self.x_shape, self.time_major)
        h = initial_rows(ops[LSTM_INDEX["output_state"]], len(rows), self.n_cell, self.node)
        c = initial_rows(ops[LSTM_INDEX["cell_state"]], len(rows), self.n_cell, self.node)
        out_t = self.outputs[0].dtype.numpy
        y = np.empty((len(rows), steps, h.shape[1]), out_t)
        if self.integer:
            h, c = h.astype(np.int64), c.astype(np.int64)
            for t in range(steps):
                h, c = self._step_int(rows[:, t].astype(np.int64), h, c)
                y[:, t] = h
        else:
            h, c = h.astype(np.float32), c.astype(np.float32)
            for t in range(steps):
                h, c = self._step_f32(rows[:, t].astype(np.float32), h, c)
                y[:, t] = h
        outs = [sequence_layout(y, x.shape, self.x_shape, self.time_major)]
        if self.extra_outputs:
            outs += [h.astype(self.outputs[1].dtype.numpy),
                     c.astype(self.outputs[2].dtype.numpy)]
        return outs


def sigmoid_f32(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)) in float32 without overflow warnings."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)


# -- batch layout shared with GRU ------------------------------------------------------------------
def sequence_rows(x: np.ndarray, graph_shape: tuple[int, ...],
                  time_major: bool) -> tuple[np.ndarray, int]:
    """(``[rows, T, I]``, T) from the runtime's array (see the module docstring)."""
    if not time_major:
        return x, x.shape[1]
    steps = graph_shape[0]
    if x.shape[0] % steps:
        raise ShapeError(f"time-major sequence of {x.shape[0]} steps is not a whole number of "
                         f"{steps}-step samples")
    n = x.shape[0] // steps
    stacked = x.reshape(n, steps, x.shape[1], x.shape[2]).transpose(0, 2, 1, 3)
    return stacked.reshape(n * x.shape[1], steps, x.shape[2]), steps


def sequence_layout(y: np.ndarray, x_shape: tuple[int, ...], graph_shape: tuple[int, ...],
                    time_major: bool) -> np.ndarray:
    """``[rows, T, H]`` back to the runtime layout of the input (inverse of sequence_rows)."""
    if not time_major:
        return y
    steps, batch = graph_shape[0], x_shape[1]
    n = y.shape[0] // batch
    out = y.reshape(n, batch, steps, y.shape[2]).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(out.reshape(n * steps, batch, y.shape[2]))


def initial_rows(state: np.ndarray, rows: int, units: int, node: Any) -> np.ndarray:
    """The initial state of each of ``rows`` sequences: row ``r`` takes state row ``r % B``."""
    flat = state.reshape(-1, units)
    if rows % flat.shape[0]:
        raise ShapeError(f"{node}: {flat.shape[0]} initial state rows do not divide "
                         f"{rows} sequences")
    return flat[np.arange(rows) % flat.shape[0]]
