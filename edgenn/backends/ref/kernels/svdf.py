"""SVDF (singular value decomposition filter), float32 and int8, exactly as TFLite Micro's
``svdf_common.cc``.

One invocation: the state ``[B, F*M]`` (F filters of M past feature values each) shifts left
by one; each filter's feature ``weights_feature[F, I] @ x`` becomes its newest value; each
filter's memory is weighted by ``weights_time[F, M]``; the ``rank`` filters of each unit are
summed, the bias added and the activation applied: ``y[B, U]``, ``U = F / rank``.

int8 (``EvalIntegerSvdfReference``): the feature product requantizes to the state's type
(int16, or int8) with ``effective_scale_1 = in_scale * wf_scale / state_scale``, clamped to
the state type, then the state zero point added with C's wrap-around (the TFLM this project
checks against; later TFLM versions add it before the clamp); the time product subtracts the
state zero point, and the int32 sum plus bias requantizes to int8 with ``effective_scale_2 =
state_scale * wt_scale / out_scale`` (both: the float32 scales widened to double before the
product and the quotient, as the installed TFLM's ``PrepareSvdf``). TFLM applies no activation
on this path (only the int8 clamp): neither does edgenn. The state starts from the
state input (graph state for a TFLite variable tensor); the optional second output is the new
state, which the runtime keeps for the next invocation.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier, wrap_int32
from edgenn.backends.ref.kernels.common import Operands
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.svdf import IntArray, prepare_svdf


@register("SVDF", DType.FLOAT32, DType.INT8)
class Svdf(Layer):
    """See the module docstring (the constants: ``edgenn.prepared.svdf``)."""

    def build(self) -> None:
        p = prepare_svdf(self.node, self.graph)
        self.rank, self.filters, self.memory, self.units = p.rank, p.filters, p.memory, p.units
        self.operands = Operands(self.inputs)
        self.present = [i for i, t in enumerate(self.inputs) if t is not None]
        self.integer = p.integer is not None
        if p.integer is not None:
            self.params = p.integer
        else:
            assert p.wf_t is not None and p.wt is not None and p.bias_f is not None
            self.wf_t, self.wt, self.bias_f = p.wf_t, p.wt, p.bias_f
            self.lo, self.hi = p.act_min, p.act_max

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        ops = dict(zip(self.present, self.operands.gather(xs), strict=True))
        x = ops[0]
        state = ops[4].reshape(-1, self.filters, self.memory)
        state = state[np.arange(len(x)) % len(state)]  # sample k starts from state row k % B
        if self.integer:
            y, new = self._run_int(x.astype(np.int64), state.astype(np.int64))
        else:
            y, new = self._run_f32(x.astype(np.float32), state.astype(np.float32))
        if len(self.outputs) == 1:
            return [y]
        t = self.outputs[1]
        return [y, new.reshape((len(new), *t.shape[1:])).astype(t.dtype.numpy)]

    def _reduce(self, per_filter: np.ndarray) -> np.ndarray:
        """Sum the ``rank`` consecutive filters of each unit: [N, F] -> [N, U]."""
        return per_filter.reshape(len(per_filter), self.units, self.rank).sum(axis=2)

    def _run_f32(self, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(output, new state)"""
        state = np.concatenate([state[:, :, 1:], (x @ self.wf_t)[:, :, None]], axis=2)
        y = self._reduce(np.einsum("nfm,fm->nf", state, self.wt)) + self.bias_f
        return np.clip(y, self.lo, self.hi).astype(np.float32), state

    def _run_int(self, x: IntArray, state: IntArray) -> tuple[np.ndarray, np.ndarray]:
        """(output, new state)"""
        p = self.params
        feature = wrap_int32((x - p.input_zp) @ p.weights_feature.T)
        feature = multiply_by_quantized_multiplier(feature, *p.scale_1)
        # why clamp first and wrap: TFLM clamps to the state type, then adds the zero point
        # and narrows without saturating (an int8 state may wrap around)
        feature = _wrap(np.clip(feature, p.state_lo, p.state_hi) + p.state_zp, p.state_lo)
        state = np.concatenate([state[:, :, 1:], feature[:, :, None]], axis=2)
        per_filter = wrap_int32(np.einsum("nfm,fm->nf", state - p.state_zp, p.weights_time))
        acc = wrap_int32(self._reduce(per_filter) + p.bias)
        y = multiply_by_quantized_multiplier(acc, *p.scale_2) + p.output_zp
        return np.clip(y, -128, 127).astype(np.int8), state


def _wrap(v: IntArray, lo: int) -> IntArray:
    """Narrow to the two's-complement type whose minimum is ``lo`` (-128 or -32768)."""
    span = -2 * lo
    return (v - lo) % span + lo
