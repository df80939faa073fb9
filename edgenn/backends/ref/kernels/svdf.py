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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import (
    activation_range_float,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    scale_ratio,
    wrap_int32,
)
from edgenn.backends.ref.kernels.common import Operands, activation_of, per_tensor
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class IntegerSvdf:
    """TFLM's OpDataSvdf plus the weights (shared with the Cortex-M kernel)."""

    weights_feature: IntArray  # [F, I]
    weights_time: IntArray  # [F, M]
    bias: IntArray  # [U] (zeros when omitted)
    scale_1: tuple[int, int]  # (multiplier, shift): feature product -> state
    scale_2: tuple[int, int]  # (multiplier, shift): time product -> output
    input_zp: int
    state_zp: int
    output_zp: int
    state_lo: int
    state_hi: int


@register("SVDF", DType.FLOAT32, DType.INT8)
class Svdf(Layer):
    """See the module docstring."""

    def build(self) -> None:
        x, wf, wt, bias, state = self.inputs
        assert x is not None and wf is not None and wt is not None and state is not None
        self.rank = int(self.node.attr("rank"))
        self.filters, self.memory = wt.shape
        self.units = self.filters // self.rank
        self.operands = Operands(self.inputs)
        self.present = [i for i, t in enumerate(self.inputs) if t is not None]
        self.integer = x.dtype is DType.INT8
        if self.integer:
            self.params = self._integer_params()
            return
        for t in (wf, wt, bias, state):
            if t is not None and t.dtype is not DType.FLOAT32:
                raise UnsupportedOperatorError(
                    f"{self.node}: float32 SVDF needs float32 operands, got {t.dtype.value} "
                    f"{t.name!r}")
        wf_data, wt_data = self.const(1), self.const(2)
        assert wf_data is not None and wt_data is not None
        self.wf_t = np.ascontiguousarray(wf_data.T)
        self.wt = wt_data
        b = self.const(3)
        self.bias_f = np.zeros(self.units, np.float32) if b is None else b
        self.lo, self.hi = activation_range_float(activation_of(self))

    def _integer_params(self) -> IntegerSvdf:
        x, wf, wt, bias, state = self.inputs
        assert x is not None and wf is not None and wt is not None and state is not None
        out = self.outputs[0]
        if wf.dtype is not DType.INT8 or wt.dtype not in (DType.INT8, DType.INT16):
            raise UnsupportedOperatorError(
                f"{self.node}: int8 SVDF needs int8 feature weights and int8 or int16 time "
                f"weights, got {wf.dtype.value} and {wt.dtype.value}")
        if state.dtype is not wt.dtype or out.dtype is not DType.INT8:
            raise UnsupportedOperatorError(
                f"{self.node}: int8 SVDF needs a state of the time weights' type "
                f"({wt.dtype.value}) and an int8 output, got {state.dtype.value} and "
                f"{out.dtype.value}")
        if bias is not None and bias.dtype is not DType.INT32:
            raise UnsupportedOperatorError(f"{self.node}: int8 SVDF needs an int32 bias")
        xq, wfq, wtq = (per_tensor(self, t, what) for t, what in
                        ((x, "input"), (wf, "weights_feature"), (wt, "weights_time")))
        sq, oq = per_tensor(self, state, "state"), per_tensor(self, out, "output")
        # why double: the installed TFLM's PrepareSvdf widens the float scales before it
        # multiplies and divides (its source writes float arithmetic)
        scale_1 = scale_ratio((xq.s, wfq.s), sq.s)
        scale_2 = scale_ratio((sq.s, wtq.s), oq.s)
        wf_data, wt_data, b = self.const(1), self.const(2), self.const(3)
        assert wf_data is not None and wt_data is not None
        info = np.iinfo(state.dtype.numpy)
        return IntegerSvdf(
            wf_data.astype(np.int64), wt_data.astype(np.int64),
            np.zeros(self.units, np.int64) if b is None else b.astype(np.int64),
            quantize_multiplier(scale_1), quantize_multiplier(scale_2),
            xq.zp, sq.zp, oq.zp, int(info.min), int(info.max))

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
