"""The record of SVDF (singular value decomposition filter), as TFLite Micro's
``svdf_common.cc`` prepares it (``OpDataSvdf``): int8 with ``effective_scale_1 = in_scale *
wf_scale / state_scale`` and ``effective_scale_2 = state_scale * wt_scale / out_scale`` (the
float32 scales widened to double before the product and the quotient, as the installed TFLM's
``PrepareSvdf``), the zero points and the state type's range; float32 with its weights and
the fused activation's clamp. The reference layer and the Cortex-M kernel take the same
record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import activation_range_float, quantize_multiplier, scale_ratio
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.quant import activation_of, const_data, per_tensor

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


def _integer_params(node: Node, graph: Graph, units: int) -> IntegerSvdf:
    x, wf, wt, bias, state = (graph.tensor(n) if n else None for n in node.inputs)
    assert x is not None and wf is not None and wt is not None and state is not None
    out = graph.tensor(node.outputs[0])
    if wf.dtype is not DType.INT8 or wt.dtype not in (DType.INT8, DType.INT16):
        raise UnsupportedOperatorError(
            f"{node}: int8 SVDF needs int8 feature weights and int8 or int16 time "
            f"weights, got {wf.dtype.value} and {wt.dtype.value}")
    if state.dtype is not wt.dtype or out.dtype is not DType.INT8:
        raise UnsupportedOperatorError(
            f"{node}: int8 SVDF needs a state of the time weights' type "
            f"({wt.dtype.value}) and an int8 output, got {state.dtype.value} and "
            f"{out.dtype.value}")
    if bias is not None and bias.dtype is not DType.INT32:
        raise UnsupportedOperatorError(f"{node}: int8 SVDF needs an int32 bias")
    xq, wfq, wtq = (per_tensor(node, t, what) for t, what in
                    ((x, "input"), (wf, "weights_feature"), (wt, "weights_time")))
    sq, oq = per_tensor(node, state, "state"), per_tensor(node, out, "output")
    # why double: the installed TFLM's PrepareSvdf widens the float scales before it
    # multiplies and divides (its source writes float arithmetic)
    scale_1 = scale_ratio((xq.s, wfq.s), sq.s)
    scale_2 = scale_ratio((sq.s, wtq.s), oq.s)
    wf_data, wt_data, b = const_data(node, wf), const_data(node, wt), const_data(node, bias)
    assert wf_data is not None and wt_data is not None
    info = np.iinfo(state.dtype.numpy)
    return IntegerSvdf(
        wf_data.astype(np.int64), wt_data.astype(np.int64),
        np.zeros(units, np.int64) if b is None else b.astype(np.int64),
        quantize_multiplier(scale_1), quantize_multiplier(scale_2),
        xq.zp, sq.zp, oq.zp, int(info.min), int(info.max))


@dataclass(frozen=True)
class SvdfParams:
    """``rank``, ``filters`` (F), ``memory`` (M), ``units`` (F / rank) and either the
    ``integer`` constants or the float32 ones: ``wf_t`` ([I, F]), ``wt`` ([F, M]),
    ``bias_f`` ([U]) and the clamp ``act_min`` / ``act_max``."""

    rank: int
    filters: int
    memory: int
    units: int
    integer: IntegerSvdf | None
    wf_t: np.ndarray | None = None
    wt: np.ndarray | None = None
    bias_f: np.ndarray | None = None
    act_min: float = 0.0
    act_max: float = 0.0


def prepare_svdf(node: Node, graph: Graph) -> SvdfParams:
    """The record of an SVDF node."""
    x, wf, wt, bias, state = (graph.tensor(n) if n else None for n in node.inputs)
    assert x is not None and wf is not None and wt is not None and state is not None
    rank = int(node.attr("rank"))
    filters, memory = wt.shape
    units = filters // rank
    if x.dtype is DType.INT8:
        return SvdfParams(rank, filters, memory, units, _integer_params(node, graph, units))
    for t in (wf, wt, bias, state):
        if t is not None and t.dtype is not DType.FLOAT32:
            raise UnsupportedOperatorError(
                f"{node}: float32 SVDF needs float32 operands, got {t.dtype.value} {t.name!r}")
    wf_data, wt_data, b = const_data(node, wf), const_data(node, wt), const_data(node, bias)
    assert wf_data is not None and wt_data is not None
    lo, hi = activation_range_float(activation_of(node))
    return SvdfParams(rank, filters, memory, units, None, np.ascontiguousarray(wf_data.T),
                      wt_data, np.zeros(units, np.float32) if b is None else b, lo, hi)
