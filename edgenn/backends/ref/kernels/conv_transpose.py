"""TransposeConv2D: float32, int8 (per-channel) and int16 (TFLite's 16x8 scheme).

As TFLite Micro's ``TransposeConv`` kernels, which scatter every input pixel times each
filter tap into an accumulator the size of the output:

* float32: the products summed in float32, plus the bias, clamped to the fused activation;
* int8: ``sum((x - in_zp) * w)`` in a wrapping int32, plus the int32 bias,
  ``MultiplyByQuantizedMultiplier`` per channel (``in_scale * w_scale[c] / out_scale`` in
  double), ``+ out_zp``, clamped to the fused activation's range;
* int16: ``sum(x * w)`` in int64 plus the int64 (or int16) bias, the 64-bit
  ``MultiplyByQuantizedMultiplier``, clamped (``edgenn.prepared.s16``). TFLite Micro reads any
  int16 layer's bias as int64, so an int32 bias is refused.

Here the scatter runs one filter tap at a time: a matmul of the whole input with the tap's
[Ci, Co] weights, added to a strided view of the uncropped output. Integer sums are exact
in the float type ``exact_matmul_dtype`` picks, so their order does not matter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import requantize, wrap_int32
from edgenn.backends.ref.arrays import batch_chunks
from edgenn.backends.ref.kernels.common import exact_matmul_dtype, int8_matmul_dtype
from edgenn.backends.ref.kernels.conv_s16 import MAX_X
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.conv import (
    ConvGeometry,
    prepare_conv_s16,
    prepare_float_conv,
    prepare_transpose_conv,
)


@register("TransposeConv2D", DType.FLOAT32, DType.INT8, DType.INT16)
class TransposeConv2D(Layer):
    """Transposed convolution over NHWC input with [Cout, KH, KW, Cin/groups] weights; the
    constants are the records of ``edgenn.prepared.conv``."""

    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.kind = x.dtype.value
        _, self.h, self.w_in, _ = x.shape
        if self.kind == "int16":
            s16 = prepare_conv_s16(self.node, self.graph, allow_narrow=False)
            self._geometry(s16)
            self.requant = s16.requant
            self.dtype: Any = exact_matmul_dtype(self.depth, MAX_X, 128)
            w_mat = s16.w
        elif self.kind == "int8":
            p = prepare_transpose_conv(self.node, self.graph)
            self._geometry(p)
            self.p = p
            self.dtype = int8_matmul_dtype(p, self.depth)
            w_mat = p.w
        else:
            f = prepare_float_conv(self.node, self.graph)
            self._geometry(f)
            self.fp = f
            self.dtype = np.float32
            w_mat = f.w
        # per group, per tap: [Cin/g, Cout/g] matrices
        cog = self.co // self.groups
        self.taps = [
            np.ascontiguousarray(
                w_mat[g * cog:(g + 1) * cog].transpose(1, 2, 3, 0).astype(self.dtype))
            for g in range(self.groups)
        ]

    def _geometry(self, g: ConvGeometry) -> None:
        self.co, self.kh, self.kw, self.groups = g.out_c, g.k_h, g.k_w, g.groups
        self.cig, self.ci, self.oh, self.ow = g.in_c // g.groups, g.in_c, g.out_h, g.out_w
        self.strides, self.dilations, self.pads = g.strides, g.dilations, g.pads
        self.depth = self.kh * self.kw * self.cig

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        n = x.shape[0]
        out_dtype = {"float32": np.float32, "int8": np.int8, "int16": np.int16}[self.kind]
        out = np.empty((n, self.oh, self.ow, self.co), out_dtype)
        per_item = self.h * self.w_in * (self.ci + self.co) + self.oh * self.ow * self.co
        for part in batch_chunks(n, per_item):
            xf = x[part].astype(self.dtype)
            if self.kind == "int8":
                xf -= self.dtype(self.p.in_zp)
            out[part] = self._finish(self._scatter(xf))
        return [out]

    def _scatter(self, xf: np.ndarray) -> np.ndarray:
        """The cropped, extended sums ``[N, OH, OW, Cout]`` (before bias)."""
        n = xf.shape[0]
        (sh, sw), (dh, dw) = self.strides, self.dilations
        pt, pl = self.pads[0], self.pads[1]
        span_h, span_w = (self.h - 1) * sh + 1, (self.w_in - 1) * sw + 1
        # the uncropped output, tall enough for the crop and the output padding
        rows = max((self.kh - 1) * dh + span_h, pt + self.oh)
        cols = max((self.kw - 1) * dw + span_w, pl + self.ow)
        buf = np.zeros((n, rows, cols, self.co), self.dtype)
        cog = self.co // self.groups
        for g, taps in enumerate(self.taps):
            xg = xf[..., g * self.cig:(g + 1) * self.cig]
            dst = buf[..., g * cog:(g + 1) * cog]
            for ky in range(self.kh):
                for kx in range(self.kw):
                    y0, x0 = ky * dh, kx * dw
                    dst[:, y0:y0 + span_h:sh, x0:x0 + span_w:sw, :] += xg @ taps[ky, kx]
        return buf[:, pt:pt + self.oh, pl:pl + self.ow, :]

    def _finish(self, acc: np.ndarray) -> np.ndarray:
        if self.kind == "float32":
            res = acc if self.fp.bias is None else acc + self.fp.bias
            return np.clip(res, self.fp.act_min, self.fp.act_max)
        acc_int = acc.astype(np.int64)
        if self.kind == "int16":
            return self.requant(acc_int)
        acc_int += self.p.bias
        # why wrap: TFLite Micro's int8 scratch accumulator is int32
        return requantize(wrap_int32(acc_int), self.p.mult, self.p.shift, self.p.out_zp,
                          self.p.act_min, self.p.act_max)
