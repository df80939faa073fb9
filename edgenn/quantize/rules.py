"""Per-operator quantization rules: what TFLite's converter does and TFLite Micro's kernels need.

Each IR operator the quantizer can give an integer kernel has one :class:`OpRule`:

- ``types``: the activation types TFLite Micro has a kernel for (int8 and / or int16 in the
  16x8 scheme). An operator without the type runs in float32 between Dequantize and Quantize.
- ``output``: where the output's parameters come from (:class:`Output`): its own calibrated
  range for kernels that requantize (Conv2D, Add, LeakyRelu, ReduceSum...), the first input's
  for kernels that move or compare stored integers (MaxPool2D, Slice, Gather, ReduceMax,
  Resize: TFLM copies the bytes or checks the parameters are equal), one set shared by every
  input and the output (Concat, Maximum, Minimum), or none at all for integer indices (ArgMax).
  ``output16`` overrides it for the int16 kernel (int16 Relu6 keeps its input's parameters).
- ``fixed``: output parameters TFLM insists on, per type (Softmax, Logistic / Tanh,
  L2Norm's 1/128).
- ``weighted``: input 1 holds constant weights (per-channel symmetric int8 along axis 0) and
  input 2 an optional bias (int32, or int64 in 16x8): Conv2D, FullyConnected, TransposeConv2D.
- ``int8_operands``: operands TFLM reads as int8 even in the 16x8 scheme (PRelu's alpha).
- ``index_operands``: integer operands that pass unchanged (Gather's indices).
- ``check``: a predicate naming why TFLM cannot run one particular node quantized (a bilinear
  int16 Resize, a grouped TransposeConv2D), or None when it can.

``KEPT_FLOAT`` lists the operators with a TFLM integer kernel that the quantizer leaves in
float32, each with its reason (Div: the kernel is not worth using; LSTM / SVDF: no recipe).

Every fact here was checked against TFLite Micro's Prepare functions and, in the tests,
against the interpreter itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from edgenn.ir import DType, Graph, Node

I8, I16 = DType.INT8, DType.INT16
BOTH = frozenset({I8, I16})
INT8_ONLY = frozenset({I8})

# int8 Softmax output: scale 1/256, zero point -128 (TFLM requires it)
SOFTMAX_PARAMS_8 = (1.0 / 256.0, -128)
# int16 outputs in [0, 1] (Softmax, Logistic) or [-1, 1] (Tanh): TFLM requires scale 2^-15
UNIT_PARAMS_16 = (1.0 / 32768.0, 0)
# int8 L2_NORMALIZATION output: scale 1/128, zero point 0 (TFLM requires it)
L2NORM_PARAMS_8 = (1.0 / 128.0, 0)
# int8 LOGISTIC output in [0, 1): scale 1/256, zero point -128 (TFLite's quantization spec;
# TFLM's kernel writes its fixed-point result in these parameters whatever the tensor says)
LOGISTIC_PARAMS_8 = (1.0 / 256.0, -128)
# int8 TANH output in [-1, 1): scale 1/128, zero point 0 (TFLite's quantization spec)
TANH_PARAMS_8 = (1.0 / 128.0, 0)

Check = Callable[[Graph, Node, DType], str | None]


class Output(Enum):
    """Where an operator's output quantization parameters come from."""

    CALIBRATED = "calibrated"  # its own calibrated range: the kernel requantizes
    INPUT = "input"  # the first input's: the kernel moves or compares stored integers
    SHARED = "shared"  # one set for every quantized input and the output
    INDEX = "index"  # none: the output holds integer indices (int32)


@dataclass(frozen=True)
class OpRule:
    """How one IR operator is quantized (see the module docstring)."""

    types: frozenset[DType]
    output: Output = Output.CALIBRATED
    fixed: Mapping[DType, tuple[float, int]] = field(default_factory=dict)
    weighted: bool = False
    int8_operands: frozenset[int] = frozenset()
    index_operands: frozenset[int] = frozenset()
    check: Check | None = None
    # the IR operator the quantized node becomes (MatMul -> BatchMatMul), None to keep it
    becomes: str | None = None
    # the int16 kernel's output rule where it differs from ``output`` (Relu6)
    output16: Output | None = None

    def output_for(self, dtype: DType) -> Output:
        """The output rule of the ``dtype`` kernel."""
        return self.output16 if dtype is I16 and self.output16 is not None else self.output


def _rank_2_to_5(graph: Graph, node: Node, act: DType) -> str | None:
    ranks = [len(graph.tensor(n).shape) for n in node.inputs[:2]]
    if min(ranks) < 2 or max(ranks) > 5:
        return f"TFLite's BATCH_MATMUL takes operands of rank 2 to 5, got ranks {ranks}"
    return None


def _nearest_if_int16(graph: Graph, node: Node, act: DType) -> str | None:
    if act is I16 and node.attr("mode") != "nearest":
        return "TFLite Micro's int16 resize is nearest-neighbour only"
    return None


def _constant_alpha_if_int16(graph: Graph, node: Node, act: DType) -> str | None:
    alpha = graph.tensor(node.inputs[1])
    if act is I16 and not alpha.is_const:
        return "TFLite Micro's 16x8 PRELU reads an int8 alpha, so alpha must be constant"
    return None


def _plain_transpose_conv(graph: Graph, node: Node, act: DType) -> str | None:
    groups = int(node.attr("groups", 1))
    dilations = tuple(int(d) for d in node.attr("dilations", (1, 1)))
    if groups != 1 or dilations != (1, 1):
        return (f"TFLite's TRANSPOSE_CONV has no groups or dilation (groups {groups}, "
                f"dilations {list(dilations)})")
    return None


def _no_last_index(graph: Graph, node: Node, act: DType) -> str | None:
    if node.attr("select_last_index", False):
        return "TFLite's ARG_MAX / ARG_MIN return the first of equal values"
    return None


_UNIT_16 = {I16: UNIT_PARAMS_16}

RULES: Mapping[str, OpRule] = MappingProxyType({
    # -- the operators of the original int8 scheme --------------------------------------------
    "Conv2D": OpRule(BOTH, weighted=True),
    "FullyConnected": OpRule(BOTH, weighted=True),
    "Add": OpRule(BOTH),
    "Mul": OpRule(BOTH),
    "Mean": OpRule(BOTH),
    "Relu": OpRule(BOTH),
    # why: the int16 RELU6 clamps stored values in its input's parameters and copies them
    # (TFLM reads no output parameters); the int8 one rescales to its own clipped range
    "Relu6": OpRule(BOTH, output16=Output.INPUT),
    # why INPUT: a Clip with other bounds than Relu / Relu6 is TFLite's MAXIMUM and MINIMUM
    # with constant bounds, which compare stored integers in one set of parameters
    "Clip": OpRule(BOTH, Output.INPUT),
    "MaxPool2D": OpRule(BOTH, Output.INPUT),
    # why: TFLite's int8 AVERAGE_POOL_2D does not requantize
    "AvgPool2D": OpRule(BOTH, Output.INPUT),
    "Reshape": OpRule(BOTH, Output.INPUT),
    "Transpose": OpRule(BOTH, Output.INPUT),
    "Pad": OpRule(BOTH, Output.INPUT),
    "BorderPad": OpRule(BOTH, Output.INPUT),  # copies values, as Pad
    "Concat": OpRule(BOTH, Output.SHARED),
    "Softmax": OpRule(BOTH, fixed={I8: SOFTMAX_PARAMS_8, I16: UNIT_PARAMS_16}),
    # why fixed: TFLM's LOGISTIC / TANH compute in fixed point and write the result in
    # TFLite's fixed output parameters (int8 lookup over the input's 256 values)
    "Sigmoid": OpRule(BOTH, fixed={I8: LOGISTIC_PARAMS_8, I16: UNIT_PARAMS_16}),
    "Tanh": OpRule(BOTH, fixed={I8: TANH_PARAMS_8, I16: UNIT_PARAMS_16}),
    # -- element-wise unary -------------------------------------------------------------------
    "LeakyRelu": OpRule(BOTH),
    "HardSwish": OpRule(INT8_ONLY),
    "Abs": OpRule(BOTH),
    "Rsqrt": OpRule(BOTH),
    # -- element-wise binary ------------------------------------------------------------------
    "Sub": OpRule(BOTH),
    "SquaredDifference": OpRule(BOTH),
    # why: TFLM's MAXIMUM / MINIMUM compare stored integers and never rescale
    "Maximum": OpRule(BOTH, Output.SHARED),
    "Minimum": OpRule(BOTH, Output.SHARED),
    "PRelu": OpRule(BOTH, int8_operands=frozenset({1}), check=_constant_alpha_if_int16),
    # -- data movement: TFLM copies bytes ----------------------------------------------------
    "Slice": OpRule(BOTH, Output.INPUT),
    "Split": OpRule(BOTH, Output.INPUT),
    "Gather": OpRule(INT8_ONLY, Output.INPUT, index_operands=frozenset({1})),
    "SpaceToDepth": OpRule(INT8_ONLY, Output.INPUT),
    "DepthToSpace": OpRule(INT8_ONLY, Output.INPUT),
    # -- reductions, scans, normalization, resizing, products --------------------------------
    # why: TFLM's int8 REDUCE_MAX / REDUCE_MIN check that input and output parameters agree
    "ReduceMax": OpRule(INT8_ONLY, Output.INPUT),
    "ReduceMin": OpRule(INT8_ONLY, Output.INPUT),
    "ReduceSum": OpRule(BOTH),
    "ArgMax": OpRule(INT8_ONLY, Output.INDEX, check=_no_last_index),
    "ArgMin": OpRule(INT8_ONLY, Output.INDEX, check=_no_last_index),
    "CumSum": OpRule(INT8_ONLY),
    "L2Norm": OpRule(INT8_ONLY, fixed={I8: L2NORM_PARAMS_8}),
    # why: both resize kernels interpolate stored integers in the input's parameters
    "Resize": OpRule(BOTH, Output.INPUT, check=_nearest_if_int16),
    "BatchMatMul": OpRule(BOTH, check=_rank_2_to_5),
    # an ONNX MatMul of two computed operands is TFLite's BATCH_MATMUL
    "MatMul": OpRule(BOTH, check=_rank_2_to_5, becomes="BatchMatMul"),
    "TransposeConv2D": OpRule(BOTH, weighted=True, check=_plain_transpose_conv),
})


# Operators with a TFLite Micro integer kernel the quantizer deliberately leaves in float32.
KEPT_FLOAT: Mapping[str, str] = MappingProxyType({
    # why: TFLM's int8 DIV right-shifts by more than 31 bits (undefined in C++) whenever the
    # quotient is below about one output step; its x86 build then writes -128 / 127 and an
    # Arm build something else, so a near-zero quotient comes out saturated. The float32
    # DIV between Dequantize and Quantize is exact and portable.
    "Div": "TFLite Micro's int8 DIV saturates quotients below one output step (an undefined "
           "shift), so Div runs in float32",
    # why: TFLM's integer LSTM / SVDF need more than per-tensor activation ranges (an int16
    # cell state in a power-of-two scale, calibrated gate intermediates, the effective
    # scales TensorFlow's converter computes); edgenn imports and runs such models but its
    # post-training quantizer does not make them
    "LSTM": "edgenn's quantizer has no recipe for TFLite's integer LSTM (int16 cell state, "
            "calibrated gate intermediates); quantize it with TensorFlow's converter",
    "SVDF": "edgenn's quantizer has no recipe for TFLite's integer SVDF (int16 state); "
            "quantize it with TensorFlow's converter",
    # why: a comparison gives bool, whatever its operand type; TFLM's int8 comparison rescales
    # both operands to 1/256 of their steps, so on quantized operands a threshold moves by up
    # to half a step, while float32 operands decide exactly as the float model does
    **{op: f"{op} keeps its float32 operands (its bool result is exact there; int8 operands "
           "would move its threshold by up to half a quantization step)"
       for op in ("Equal", "NotEqual", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")},
    # why: CAST converts stored values; on int8 codes it would convert the codes, not the
    # real values the float model casts
    "Cast": "Cast converts stored values (on int8 it would cast quantization codes), so it "
            "stays in float32",
})


def rule(op: str) -> OpRule | None:
    """The rule of ``op``; None for an operator that always runs in float32."""
    return RULES.get(op)


def ops_for(dtype: DType) -> frozenset[str]:
    """The operators with a TFLite Micro kernel for ``dtype`` activations."""
    return frozenset(op for op, r in RULES.items() if dtype in r.types)


def fixed_for(dtype: DType) -> dict[str, tuple[float, int]]:
    """Operator -> the output (scale, zero point) TFLM requires for ``dtype``."""
    return {op: r.fixed[dtype] for op, r in RULES.items() if dtype in r.fixed}


def why_not(graph: Graph, node: Node, dtype: DType) -> str | None:
    """Why ``node`` cannot get a ``dtype`` kernel (None: it can)."""
    r = RULES.get(node.op)
    if node.op in KEPT_FLOAT:
        return KEPT_FLOAT[node.op]
    if r is None:
        return f"{node.op} has no quantized TFLite Micro kernel"
    if dtype not in r.types:
        return f"TFLite Micro has no {dtype.value} {node.op} kernel"
    return r.check(graph, node, dtype) if r.check is not None else None
