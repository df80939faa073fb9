"""Lowering context: IR tensors and nodes -> TFLite tensors and operators."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import tflite

from edgenn.errors import UnsupportedOperatorError
from edgenn.export.flatbuffer import OptionsFn, TflModel, TflOperator, TflTensor
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.tflite_enums import FUSED_ACTIVATIONS, OP, TENSOR_TYPES

BO = tflite.BuiltinOptions

# Operator versions as TFLite's op_version.cc assigns them for int8 / int16 kernels (float32
# kernels are version 1); TFLM resolves kernels by builtin code and accepts these. Features
# that raise a version further (a rank-5 broadcast, half-pixel centers, batch_dims, a fused
# activation) are passed explicitly by the lowering.
_INT8_VERSION: dict[int, int] = {
    OP.CONV_2D: 3,
    OP.DEPTHWISE_CONV_2D: 3,
    OP.FULLY_CONNECTED: 4,
    OP.ADD: 2,
    OP.MUL: 2,
    OP.MAX_POOL_2D: 2,
    OP.AVERAGE_POOL_2D: 2,
    OP.MEAN: 2,
    OP.TRANSPOSE: 2,
    OP.CONCATENATION: 2,
    OP.PAD: 2,
    OP.PADV2: 2,
    OP.SOFTMAX: 2,
    OP.DEQUANTIZE: 2,
    OP.RELU: 2,
    OP.RELU6: 2,
    OP.LOGISTIC: 2,
    OP.TANH: 2,
    OP.SUB: 2,
    OP.MAXIMUM: 2,
    OP.MINIMUM: 2,
    OP.SQUARED_DIFFERENCE: 2,
    OP.ABS: 2,
    OP.RSQRT: 2,
    OP.STRIDED_SLICE: 2,
    OP.SLICE: 2,
    OP.SPLIT: 2,
    OP.SPLIT_V: 2,
    OP.GATHER: 2,
    OP.SPACE_TO_DEPTH: 2,
    OP.DEPTH_TO_SPACE: 2,
    OP.REDUCE_MAX: 2,
    OP.REDUCE_MIN: 2,
    OP.SUM: 2,
    OP.ARG_MAX: 2,
    OP.ARG_MIN: 2,
    OP.L2_NORMALIZATION: 2,
    OP.RESIZE_BILINEAR: 2,
    OP.RESIZE_NEAREST_NEIGHBOR: 2,
    OP.BATCH_MATMUL: 2,
    OP.TRANSPOSE_CONV: 2,
}
_INT16_VERSION: dict[int, int] = {
    OP.ADD: 3,
    OP.SUB: 5,
    OP.MUL: 4,
    OP.MAX_POOL_2D: 3,
    OP.AVERAGE_POOL_2D: 3,
    OP.TRANSPOSE: 5,
    OP.CONCATENATION: 3,
    OP.PAD: 3,
    OP.PADV2: 3,
    OP.SOFTMAX: 3,
    OP.MEAN: 3,
    OP.RELU: 3,
    OP.RELU6: 3,
    OP.LOGISTIC: 3,
    OP.TANH: 3,
    OP.DEQUANTIZE: 3,
    OP.QUANTIZE: 2,
    OP.ABS: 3,
    OP.RSQRT: 3,
    OP.LEAKY_RELU: 2,
    OP.MAXIMUM: 4,
    OP.MINIMUM: 4,
    OP.SLICE: 4,
    OP.SPLIT: 4,
    OP.RESIZE_NEAREST_NEIGHBOR: 4,
    OP.BATCH_MATMUL: 3,
}


def op_version(builtin: int, dtype: DType, dilated: bool = False) -> int:
    """The operator version for a kernel on ``dtype`` data."""
    if dtype == DType.INT8:
        return _INT8_VERSION.get(builtin, 1)
    if dtype == DType.INT16 and builtin in _INT16_VERSION:
        return _INT16_VERSION[builtin]
    if dilated and builtin in (OP.CONV_2D, OP.DEPTHWISE_CONV_2D):
        return 2
    return 1


class Lowering:
    """Accumulates the TFLite model while the exporter walks the IR nodes in order."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.model = TflModel(description=f"edgenn export of {graph.name}")
        self.ir_to_tfl: dict[str, int] = {}
        self.node: Node | None = None

    # -- errors -----------------------------------------------------------------------------
    def unsupported(self, why: str) -> UnsupportedOperatorError:
        where = f"{self.node}" if self.node is not None else f"graph {self.graph.name!r}"
        return UnsupportedOperatorError(f"TFLite export: {where}: {why}")

    # -- tensors ----------------------------------------------------------------------------
    def ir(self, index: int) -> Tensor:
        """The IR tensor of the current node's input ``index``."""
        assert self.node is not None
        name = self.node.inputs[index] if index < len(self.node.inputs) else ""
        if not name:
            raise self.unsupported(f"input {index} is missing")
        return self.graph.tensor(name)

    def has_input(self, index: int) -> bool:
        assert self.node is not None
        return index < len(self.node.inputs) and bool(self.node.inputs[index])

    def out(self, index: int = 0) -> Tensor:
        assert self.node is not None
        return self.graph.tensor(self.node.outputs[index])

    def tensor(self, t: Tensor) -> int:
        """The TFLite index of IR tensor ``t``, adding it (as is) on first use."""
        if t.name in self.ir_to_tfl:
            return self.ir_to_tfl[t.name]
        if t.dtype not in TENSOR_TYPES:
            raise self.unsupported(f"tensor {t.name!r} has element type {t.dtype.value}")
        if t.dtype in (DType.INT8, DType.INT16) and t.quant is None:
            raise self.unsupported(
                f"{t.dtype.value} tensor {t.name!r} has no quantization parameters")
        axis = t.quant.axis if t.quant is not None and t.quant.axis is not None else 0
        idx = self.model.add_tensor(
            TflTensor(self.model.unique_name(t.name), t.shape, t.dtype, t.quant, t.data, axis)
        )
        self.ir_to_tfl[t.name] = idx
        return idx

    def input(self, index: int) -> int:
        return self.tensor(self.ir(index))

    def optional_input(self, index: int) -> int:
        """-1 (TFLite's "omitted") when the optional input is absent."""
        return self.input(index) if self.has_input(index) else -1

    def output(self, index: int = 0) -> int:
        return self.tensor(self.out(index))

    def new_tensor(
        self,
        base: str,
        shape: tuple[int, ...],
        dtype: DType,
        quant: QuantParams | None = None,
        data: np.ndarray | None = None,
        quant_axis: int = 0,
    ) -> int:
        """A tensor that exists only in the TFLite file (a layout copy, a shape operand...)."""
        name = self.model.unique_name(base)
        return self.model.add_tensor(TflTensor(name, shape, dtype, quant, data, quant_axis))

    def int32_const(self, base: str, values: object) -> int:
        arr = np.asarray(values, np.int32)
        return self.new_tensor(base, tuple(arr.shape), DType.INT32, data=arr)

    # -- operators --------------------------------------------------------------------------
    def emit(
        self,
        builtin: int,
        inputs: list[int],
        outputs: list[int],
        options_type: int = BO.NONE,
        options: OptionsFn | None = None,
        dtype: DType | None = None,
        version: int | None = None,
    ) -> None:
        if version is None:
            if dtype is None:
                dtype = self.model.tensors[inputs[0]].dtype
            version = op_version(builtin, dtype)
        self.model.operators.append(
            TflOperator(builtin, version, list(inputs), list(outputs), options_type, options)
        )

    def output_as_input(self) -> tuple[int, Callable[[], None]]:
        """Output tensor for an op TFLM runs only with output params == input params.

        TFLM's int8 / int16 pooling, RESHAPE, TRANSPOSE, PAD and CONCATENATION move bytes
        without rescaling. When the IR output has other parameters, the op writes a temporary
        with the input's parameters and a QUANTIZE (int8 -> int8, int16 -> int16) rescales
        it; call the returned function right after emitting the op.
        """
        x_ir, y_ir = self.ir(0), self.out()
        y = self.output()
        if y_ir.dtype not in (DType.INT8, DType.INT16) or x_ir.quant == y_ir.quant:
            return y, lambda: None
        tmp = self.new_tensor(f"{y_ir.name}_unscaled", y_ir.shape, y_ir.dtype, x_ir.quant)

        def finish() -> None:
            options = _empty(tflite.QuantizeOptionsStart, tflite.QuantizeOptionsEnd)
            self.emit(OP.QUANTIZE, [tmp], [y], BO.QuantizeOptions, options, version=2)

        return tmp, finish

    def transpose(self, x: int, y: int, perm: Sequence[int], perm_name: str) -> None:
        """Emit TRANSPOSE of tensor ``x`` into ``y`` by ``perm`` (an int32 constant named
        after ``perm_name``)."""
        perm_t = self.int32_const(perm_name, [int(p) for p in perm])
        options = _empty(tflite.TransposeOptionsStart, tflite.TransposeOptionsEnd)
        self.emit(OP.TRANSPOSE, [x, perm_t], [y], BO.TransposeOptions, options)

    def pad(self, x: int, pads: list[tuple[int, int]], value: float | int | None = None) -> int:
        """Insert PAD (value None: zero / the zero point) or PADV2 in front; the new tensor."""
        src = self.model.tensors[x]
        shape = tuple(d + a + b for d, (a, b) in zip(src.shape, pads, strict=True))
        y = self.new_tensor(f"{src.name}_padded", shape, src.dtype, src.quant)
        paddings = self.int32_const(f"{src.name}_paddings", [list(p) for p in pads])
        if value is None:
            options = _empty(tflite.PadOptionsStart, tflite.PadOptionsEnd)
            self.emit(OP.PAD, [x, paddings], [y], BO.PadOptions, options)
        else:
            c = self.new_tensor(
                f"{src.name}_pad_value",
                (1,),
                src.dtype,
                src.quant,
                np.array([value], src.dtype.numpy),
            )
            options = _empty(tflite.PadV2OptionsStart, tflite.PadV2OptionsEnd)
            self.emit(OP.PADV2, [x, paddings, c], [y], BO.PadV2Options, options)
        return y


def _empty(start: Callable[..., None], end: Callable[..., int]) -> OptionsFn:
    def build(b: object) -> int:
        start(b)
        return int(end(b))

    return build


def empty_options(start: Callable[..., None], end: Callable[..., int]) -> OptionsFn:
    """Options for operators whose options table has no fields (TRANSPOSE, PAD, ...)."""
    return _empty(start, end)


def fused(lw: Lowering) -> int:
    assert lw.node is not None
    act = lw.node.attr("activation", Activation.NONE) or Activation.NONE
    if isinstance(act, str):
        act = Activation(act)
    return FUSED_ACTIVATIONS[act]
