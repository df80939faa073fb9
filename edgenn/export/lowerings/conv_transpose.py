"""TransposeConv2D -> TRANSPOSE_CONV (output shape, weights [Co,KH,KW,Ci], x, bias).

TFLite Micro derives the padding from the output size the way a convolution from the output
back to the input would pad (``ComputePaddingHeightWidth``) and uses only its leading part:
output pixel ``iy * stride + ky - pad``. When SAME or VALID gives exactly the IR's leading
pads, the node is one TRANSPOSE_CONV; otherwise a VALID one writes a larger output and a
SLICE crops the IR's window out of it (a PyTorch ``ConvTranspose2d(k=3, s=2, p=1,
output_padding=1)`` is such a case). Rows and columns past the scatter hold only the bias,
which is what ``output_padding`` means. TFLite has no groups or dilation here.
"""

from __future__ import annotations

from edgenn.export.lowering import OP, Lowering, fused
from edgenn.export.lowerings.common import node_name, options
from edgenn.export.ops import bias_or_zeros, lowers
from edgenn.ir.padding import SAME, VALID, pad_1d
from edgenn.ir.tflite_enums import padding_code


def _leading(same: bool, out: tuple[int, int], kernel: tuple[int, int],
             strides: tuple[int, int]) -> tuple[int, int]:
    """TFLM's TRANSPOSE_CONV leading pads for an output of size ``out``: those of a
    convolution from the output back to the input (``ComputePaddingHeightWidth``)."""
    top = pad_1d(same, out[0], kernel[0], strides[0])[0]
    left = pad_1d(same, out[1], kernel[1], strides[1])[0]
    return top, left


def _geometry(lw: Lowering, pads: tuple[int, int], out: tuple[int, int],
              kernel: tuple[int, int], strides: tuple[int, int]
              ) -> tuple[int, tuple[int, int], tuple[int, int]]:
    """(padding enum, TFLite output size, crop offset) that reproduce the IR's pads."""
    for same in (SAME, VALID):
        if _leading(same, out, kernel, strides) == pads:
            return padding_code(same), out, (0, 0)
    big = (out[0] + pads[0], out[1] + pads[1])
    lead = _leading(VALID, big, kernel, strides)
    if lead[0] > pads[0] or lead[1] > pads[1]:
        raise lw.unsupported(f"leading pads {list(pads)} cannot be expressed with TFLite's "
                             "SAME / VALID padding")
    return padding_code(VALID), big, (pads[0] - lead[0], pads[1] - lead[1])


@lowers("TransposeConv2D")
def _transpose_conv(lw: Lowering) -> None:
    assert lw.node is not None
    node = lw.node
    w_ir, y_ir = lw.ir(1), lw.out()
    if w_ir.data is None:
        raise lw.unsupported("weights must be constant")
    groups = int(node.attr("groups", 1))
    dilations = tuple(int(d) for d in node.attr("dilations", (1, 1)))
    if groups != 1 or dilations != (1, 1):
        raise lw.unsupported(f"TFLite's TRANSPOSE_CONV has no groups or dilation (groups "
                             f"{groups}, dilations {list(dilations)})")
    co, kh, kw, _ = w_ir.shape
    sh, sw = (int(s) for s in node.attr("strides", (1, 1)))
    pt, pl, _, _ = (int(p) for p in node.attr("pads", (0, 0, 0, 0)))
    n, oh, ow, _ = y_ir.shape
    padding, (bh, bw), (dy, dx) = _geometry(lw, (pt, pl), (oh, ow), (kh, kw), (sh, sw))
    name = node_name(lw)
    shape_t = lw.int32_const(f"{name}_output_shape", [n, bh, bw, co])
    w, x = lw.input(1), lw.input(0)
    b = bias_or_zeros(lw, co)
    y = lw.output()
    cropped = (bh, bw) != (oh, ow)
    out = lw.new_tensor(f"{name}_uncropped", (n, bh, bw, co), y_ir.dtype, y_ir.quant) \
        if cropped else y
    act = fused(lw)
    version = 4 if act else 3  # a bias operand is version 3, a fused activation 4
    lw.emit(OP.TRANSPOSE_CONV, [shape_t, w, x, b], [out],
            *options("TransposeConvOptions", padding=padding, stride_w=sw, stride_h=sh,
                     fused_activation_function=act), version=version)
    if cropped:
        begin = lw.int32_const(f"{name}_crop_begin", [0, dy, dx, 0])
        size = lw.int32_const(f"{name}_crop_size", [n, oh, ow, co])
        lw.emit(OP.SLICE, [out, begin, size], [y], *options("SliceOptions"),
                dtype=y_ir.dtype)
