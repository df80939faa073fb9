"""TFLite converter of TRANSPOSE_CONV to the IR's TransposeConv2D.

TRANSPOSE_CONV's operands are (output_shape, weights [Co,KH,KW,Ci], x, bias?). TFLite
Micro derives the padding from the *output* size, as a convolution from the output back to
the input would pad it (``ComputePaddingHeightWidth`` with the output as input), and uses
only its leading part: output pixel ``iy * stride + ky - pad``. The IR's ``pads`` /
``output_padding`` express the same crop of the full scatter.
"""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import (
    converter,
    need_options,
    optional_input_name,
    output_name,
    same_padding,
)
from edgenn.ir import DType, Node
from edgenn.ir.padding import pad_1d


def _crop(full: int, before: int, out: int) -> tuple[int, int]:
    """(pad after, output padding) so that the crop of ``full`` from ``before`` is ``out``."""
    after = full - before - out
    return (after, 0) if after >= 0 else (0, -after)


@converter("TRANSPOSE_CONV")
def transpose_conv(b: Builder, op: RawOperator) -> None:
    need_options(b, op, "padding", "stride_h", "stride_w")
    w, x = b.input(op, 1), b.input(op, 2)
    out = output_name(b, op)
    declared = b.tensors[out]
    shape = b.const_or_none(op, 0)
    if not w.is_const or len(w.shape) != 4 or len(x.shape) != 4:
        raise b.unsupported(op, "TRANSPOSE_CONV needs constant [Co,KH,KW,Ci] weights and "
                                "an NHWC input")
    if shape is not None and tuple(int(d) for d in shape.reshape(-1)) != declared.shape:
        raise b.fail(op, f"output shape operand {shape.reshape(-1).tolist()} differs from the "
                         f"output tensor's {list(declared.shape)}")
    # why a computed (non-constant) output shape is accepted: TFLite Micro never reads the
    # operand; it sizes the output from the declared output tensor, as done here
    same = same_padding(b, op)
    strides = (int(op.options["stride_h"]), int(op.options["stride_w"]))
    if min(strides) < 1:
        raise b.fail(op, f"stride is {min(strides)}")
    bias = optional_input_name(b, op, 3)
    if x.dtype is DType.INT16 and bias and b.tensors[bias].dtype is DType.INT32:
        # why: TFLite Micro reads a 16x8 TRANSPOSE_CONV's bias as int64 (or int16)
        raise b.unsupported(op, "16x8 TRANSPOSE_CONV with an int32 bias is unsupported "
                                "(TFLite Micro takes int64 or int16)")
    _, kh, kw, _ = w.shape
    _, oh, ow, _ = declared.shape
    top = pad_1d(same, oh, kh, strides[0])[0]
    left = pad_1d(same, ow, kw, strides[1])[0]
    full_h, full_w = (x.shape[1] - 1) * strides[0] + kh, (x.shape[2] - 1) * strides[1] + kw
    if full_h > oh + kh or full_w > ow + kw:
        # why: SAME and VALID both crop at most a kernel's size from the full scatter; more
        # means a corrupt stride or shape (and a scatter buffer of absurd size)
        raise b.fail(op, f"strides {list(strides)} scatter input {list(x.shape)} to "
                         f"{full_h}x{full_w}, far past the declared output {list(declared.shape)}")
    bottom, extra_h = _crop(full_h, top, oh)
    right, extra_w = _crop(full_w, left, ow)
    attrs = {"strides": strides, "dilations": (1, 1), "pads": (top, left, bottom, right),
             "output_padding": (extra_h, extra_w), "groups": 1,
             "activation": b.activation(op)}
    b.emit(Node(b.op_name(op), "TransposeConv2D", (x.name, w.name, bias), (out,), attrs))

