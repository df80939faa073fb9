"""The quantization rules, as TensorFlow's converter applies them for TFLite (Micro).

Two activation types (``ActivationType``): ``INT8`` (the default) and ``INT16``, TFLite's
16x8 scheme: int16 activations, per-tensor **symmetric** (zero point 0, ``scale = max|x| /
32767``), int8 weights as below, int64 biases, and the fixed output parameters TFLM
requires of int16 Softmax / Logistic / Tanh (scale 1/32768, zero point 0). Every other rule
below holds for both types.

- Weights of Conv2D / FullyConnected / TransposeConv2D: per-channel symmetric int8 in
  [-127, 127] along axis 0, zero point 0, ``scale[c] = max|w[c]| / 127``.
- Biases: int32 (int64 in 16x8), ``scale[c] = in_scale * w_scale[c]``, zero point 0.
- Other constant operands (an Add's constant, PRelu's alpha, a constant BatchMatMul operand)
  are quantized like activations over their own min / max; PRelu's alpha stays int8 in 16x8.
- Activations: per-tensor asymmetric int8 in [-128, 127]; the range is widened to contain 0
  (so that zero padding is exact) and the zero point is an integer (TFLite's nudging).
- Operators that move or compare values without rescaling them share one set of parameters
  between input and output (MaxPool2D, AvgPool2D, Reshape, Transpose, Pad, Slice, Split,
  Gather, SpaceToDepth, DepthToSpace, ReduceMax, ReduceMin, Resize); Concat, Maximum and
  Minimum share one range (the union) between all their inputs and their output. The
  per-operator table is ``rules.py``.
- Skippable blocks (``skippable_blocks=True``, the default): the output of a residual block
  with an identity shortcut ``Add(x, F(x))`` shares ``x``'s parameters (the union of both
  ranges), so skipping the block at run time is a pure alias (docs/skipping.md).
- Fixed output parameters where TFLM requires them: Softmax and Logistic (int8 1/256, zero
  point -128), Tanh and L2Norm (int8 1/128, zero point 0), int16 Softmax / Logistic / Tanh
  (1/32768, 0).
- ArgMax / ArgMin outputs are int32 indices (TFLM writes no int64), never quantized.
- A fused ReLU / ReLU6 / ReLU_N1_TO_1 clips the output range to what the activation can give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from edgenn.errors import EdgennError
from edgenn.ir import Activation, DType, Graph, Node, QuantParams
from edgenn.quantize import rules
from edgenn.quantize.rules import Output

QMIN, QMAX = -128, 127
QMAX16 = 32767
WEIGHT_QMAX = 127

UNIT_PARAMS_16 = rules.UNIT_PARAMS_16

_ACTIVATION_RANGE = {
    Activation.RELU: (0.0, np.inf),
    Activation.RELU6: (0.0, 6.0),
    Activation.RELU_N1_TO_1: (-1.0, 1.0),
}


def activation_params(lo: float, hi: float) -> QuantParams:
    """Asymmetric int8 parameters for the real range ``[lo, hi]``.

    The range is first widened to contain 0; the zero point is ``qmin - lo / scale`` rounded
    to an integer and kept inside [-128, 127] (TFLite's zero-point nudging). An empty range
    (a tensor that is always 0) gets a tiny scale so that every value still maps to 0.
    """
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"cannot quantize the range [{lo}, {hi}]")
    if hi - lo < 1e-12:
        return QuantParams.per_tensor(1e-8, 0)  # why: scale 0 would divide by zero later
    scale = np.float32((hi - lo) / (QMAX - QMIN))
    zp_real = QMIN - lo / float(scale)
    zp = int(np.clip(np.round(zp_real), QMIN, QMAX))
    return QuantParams.per_tensor(float(scale), zp)


def symmetric_params(lo: float, hi: float, qmax: int = QMAX16) -> QuantParams:
    """Symmetric parameters (zero point 0) for ``[lo, hi]``: ``scale = max(|lo|, |hi|) / qmax``.

    An empty range gets a tiny scale so that every value still maps to 0.
    """
    amax = max(abs(float(lo)), abs(float(hi)))
    if not np.isfinite(amax):
        raise ValueError(f"cannot quantize the range [{lo}, {hi}]")
    if amax < 1e-12:
        return QuantParams.per_tensor(1e-8, 0)  # why: scale 0 would divide by zero later
    return QuantParams.per_tensor(float(np.float32(amax / qmax)), 0)


@dataclass(frozen=True)
class ActivationType:
    """How activations are quantized: element type, range rule, operators, fixed outputs."""

    name: str
    dtype: DType
    symmetric: bool
    ops: frozenset[str]  # operators that get a kernel of this type (if the runtime has one)
    fixed: Mapping[str, tuple[float, int]]  # op -> the (scale, zero point) of its output
    bias_dtype: DType

    @property
    def qrange(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype.numpy)
        return int(info.min), int(info.max)

    def params(self, lo: float, hi: float) -> QuantParams:
        """The parameters of an activation whose real range is ``[lo, hi]``."""
        if self.symmetric:
            return symmetric_params(lo, hi, self.qrange[1])
        return activation_params(lo, hi)

    def fixed_params(self, op: str) -> QuantParams | None:
        fixed = self.fixed.get(op)
        return None if fixed is None else QuantParams.per_tensor(*fixed)


INT8 = ActivationType("int8", DType.INT8, False, rules.ops_for(DType.INT8),
                      rules.fixed_for(DType.INT8), DType.INT32)
INT16 = ActivationType("int16", DType.INT16, True, rules.ops_for(DType.INT16),
                       rules.fixed_for(DType.INT16), DType.INT64)
ACTIVATION_TYPES = {t.name: t for t in (INT8, INT16)}


def activation_type(name: str) -> ActivationType:
    """``INT8`` or ``INT16`` by name; one clear error for anything else."""
    found = ACTIVATION_TYPES.get(name)
    if found is None:
        raise EdgennError(f"unknown activation type {name!r} "
                          f"(available: {', '.join(ACTIVATION_TYPES)})")
    return found


def weight_params(w: np.ndarray) -> QuantParams:
    """Per-channel symmetric parameters along axis 0: ``scale[c] = max|w[c]| / 127``."""
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1).astype(np.float64)
    # why: an all-zero channel would get scale 0; any positive scale quantizes it to zeros.
    scale = np.where(amax > 0, amax / WEIGHT_QMAX, 1.0).astype(np.float32)
    return QuantParams(scale, np.zeros(scale.shape, np.int64), axis=0)


def bias_params(in_params: QuantParams, w_params: QuantParams) -> QuantParams:
    """Bias parameters (int32, int64 in 16x8): ``scale[c] = in_scale * w_scale[c]``, zp 0."""
    scale = (np.float64(in_params.s) * w_params.scale.astype(np.float64)).astype(np.float32)
    return QuantParams(scale, np.zeros(scale.shape, np.int64), axis=0)


def quantize_weights(w: np.ndarray, params: QuantParams) -> np.ndarray:
    """Round-half-away-from-zero ``w / scale[c]``, clamped to [-127, 127]."""
    scale = params.scale.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
    return np.clip(round_half_away(w.astype(np.float64) / scale), -WEIGHT_QMAX, WEIGHT_QMAX).astype(
        np.int8
    )


def quantize_bias(b: np.ndarray, params: QuantParams, dtype: DType = DType.INT32) -> np.ndarray:
    """``round(b / scale[c])`` (half away from zero) as int32, or int64 for 16x8 layers."""
    q = round_half_away(b.astype(np.float64) / params.scale.astype(np.float64))
    info = np.iinfo(dtype.numpy)
    # why the 2^62 cap: float64 cannot hold int64's limits, and casting 2^63 overflows
    lo, hi = max(float(info.min), -(2.0**62)), min(float(info.max), 2.0**62)
    return np.clip(q, lo, hi).astype(dtype.numpy)


def quantize_per_tensor(x: np.ndarray, params: QuantParams,
                        dtype: DType = DType.INT8) -> np.ndarray:
    """``round(x / scale) + zp`` clamped to int8 (or int16), with the division done in float32
    as TFLM's QUANTIZE does, and rounding half away from zero (``std::round``)."""
    scaled = np.asarray(x, np.float32) / np.float32(params.s)
    q = round_half_away(scaled.astype(np.float64)) + params.zp
    info = np.iinfo(dtype.numpy)
    return np.clip(q, info.min, info.max).astype(dtype.numpy)


def round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def clip_to_activation(lo: float, hi: float, activation: Activation | None) -> tuple[float, float]:
    """Narrow ``[lo, hi]`` to what a fused activation can output."""
    if activation is None or activation == Activation.NONE:
        return lo, hi
    a_lo, a_hi = _ACTIVATION_RANGE[activation]
    lo, hi = max(lo, a_lo), min(hi, a_hi)
    return lo, max(lo, hi)


class _Groups:
    """Union-find over tensor names: members of one group share quantization parameters."""

    def __init__(self, names: Iterable[str]) -> None:
        self.parent = {n: n for n in names}

    def find(self, name: str) -> str:
        root = name
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[name] != root:  # path compression
            self.parent[name], name = root, self.parent[name]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def shared_groups(graph: Graph, int8_nodes: Iterable[Node],
                  skippable_blocks: bool = False, dtype: DType = DType.INT8) -> _Groups:
    """Union-find of the tensors that must share parameters (``rules.Output``, and with
    ``skippable_blocks`` each identity residual block's input and output)."""
    groups = _Groups(graph.tensors)
    int8_names: set[str] = set()
    for node in int8_nodes:
        int8_names.add(node.name)
        r = rules.rule(node.op)
        if r is None:
            continue
        output = r.output_for(dtype)
        if output is Output.INPUT:
            for out in node.outputs:  # every piece of a Split
                groups.union(node.inputs[0], out)
        elif output is Output.SHARED:
            for name in node.inputs:
                # why: only float operands are quantized; integer ones (indices) keep their type
                if name and graph.tensor(name).dtype is DType.FLOAT32:
                    groups.union(name, node.outputs[0])
    if skippable_blocks:
        from edgenn.passes.skip.blocks import find_blocks  # local: passes import backends

        for block in find_blocks(graph):
            if block.add in int8_names:
                groups.union(block.input, block.output)
    return groups


def activation_ranges(
    graph: Graph,
    ranges: Mapping[str, tuple[float, float]],
    int8_nodes: Iterable[Node],
    skippable_blocks: bool = False,
    act: ActivationType = INT8,
) -> dict[str, QuantParams]:
    """Quantization parameters for every non-constant tensor in ``ranges``.

    ``ranges`` holds the calibrated real range of each activation; this applies the fused
    activation clip, the fixed output parameters (Softmax, Logistic, Tanh, L2Norm), the
    shared-parameter groups (with ``skippable_blocks``, also each identity residual block's
    input and output) and ``act``'s range rule.
    """
    nodes = list(int8_nodes)
    clipped = dict(ranges)
    fixed: dict[str, QuantParams] = {}
    for node in nodes:
        out = node.outputs[0]
        fixed_out = act.fixed_params(node.op)
        if fixed_out is not None:
            fixed[out] = fixed_out
        elif out in clipped:
            fused = node.attr("activation")
            if node.op == "Relu":
                fused = Activation.RELU
            elif node.op == "Relu6":
                fused = Activation.RELU6
            clipped[out] = clip_to_activation(*clipped[out], fused)
    groups = shared_groups(graph, nodes, skippable_blocks, act.dtype)
    union: dict[str, tuple[float, float]] = {}
    for name, (lo, hi) in clipped.items():
        root = groups.find(name)
        if root in union:
            glo, ghi = union[root]
            union[root] = (min(glo, lo), max(ghi, hi))
        else:
            union[root] = (lo, hi)
    # why: a fixed-parameter tensor (Softmax output) imposes its parameters on its group.
    fixed_roots = {groups.find(name): p for name, p in fixed.items()}
    params: dict[str, QuantParams] = {}
    for name in clipped:
        root = groups.find(name)
        params[name] = fixed_roots.get(root) or act.params(*union[root])
    for name, p in fixed.items():
        params[name] = p
    return params
