"""GRU over a whole sequence, float32, as ONNX defines it (forward direction).

Gate order z (update), r (reset), h (hidden), with the input biases ``wb`` and recurrent
biases ``rb`` kept apart, because ``linear_before_reset`` applies the reset gate after the
recurrent bias:

``z = sigmoid(x W_z + h R_z + wb_z + rb_z)``, ``r = sigmoid(x W_r + h R_r + wb_r + rb_r)``,
``n = tanh(x W_h + (r * h) R_h + rb_h + wb_h)`` (``linear_before_reset = 0``) or
``n = tanh(x W_h + r * (h R_h + rb_h) + wb_h)`` (otherwise), ``h = (1 - z) * n + z * h``.

``gate_clip`` (ONNX's ``clip``) clamps each gate's pre-activation. The batch layout is the
LSTM's (``sequence_rows``).
"""

from __future__ import annotations

import numpy as np

from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.kernels.lstm import (
    initial_rows,
    sequence_layout,
    sequence_rows,
    sigmoid_f32,
)
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.gru import prepare_gru


@register("GRU", DType.FLOAT32)
class Gru(Layer):
    """See the module docstring."""

    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.x_shape = x.shape
        self.p = p = prepare_gru(self.node, self.graph)
        self.time_major, self.linear_before_reset, self.clip = (
            p.time_major, p.linear_before_reset, p.clip)
        self.operands = Operands(self.inputs)
        self.present = [i for i, t in enumerate(self.inputs) if t is not None]
        self.hidden, self.w_t, self.r_t, self.wb, self.rb = p.hidden, p.w_t, p.r_t, p.wb, p.rb
        self.extra_output = p.extra_output

    def _clip(self, z: np.ndarray) -> np.ndarray:
        return np.clip(z, -self.clip, self.clip) if self.clip > 0 else z

    def _step(self, x_t: np.ndarray, h: np.ndarray) -> np.ndarray:
        z = sigmoid_f32(self._clip(x_t @ self.w_t[0] + h @ self.r_t[0] + self.wb[0] + self.rb[0]))
        r = sigmoid_f32(self._clip(x_t @ self.w_t[1] + h @ self.r_t[1] + self.wb[1] + self.rb[1]))
        if self.linear_before_reset:
            pre = x_t @ self.w_t[2] + r * (h @ self.r_t[2] + self.rb[2]) + self.wb[2]
        else:
            pre = x_t @ self.w_t[2] + (r * h) @ self.r_t[2] + self.rb[2] + self.wb[2]
        n = np.tanh(self._clip(pre))
        return ((1.0 - z) * n + z * h).astype(np.float32)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        ops = dict(zip(self.present, self.operands.gather(xs), strict=True))
        x = ops[0]
        rows, steps = sequence_rows(x, self.x_shape, self.time_major)
        h = initial_rows(ops[5], len(rows), self.hidden, self.node).astype(np.float32)
        y = np.empty((len(rows), steps, self.hidden), np.float32)
        for t in range(steps):
            h = self._step(rows[:, t].astype(np.float32), h)
            y[:, t] = h
        outs = [sequence_layout(y, x.shape, self.x_shape, self.time_major)]
        if self.extra_output:
            outs.append(h)
        return outs
