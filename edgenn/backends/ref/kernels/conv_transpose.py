"""TransposeConv2D: float32, int8 (per-channel) and int16 (TFLite's 16x8 scheme).

As TFLite Micro's ``TransposeConv`` kernels, which scatter every input pixel times each
filter tap into an accumulator the size of the output:

* float32: the products summed in float32, plus the bias, clamped to the fused activation;
* int8: ``sum((x - in_zp) * w)`` in a wrapping int32, plus the int32 bias,
  ``MultiplyByQuantizedMultiplier`` per channel (``in_scale * w_scale[c] / out_scale`` in
  double), ``+ out_zp``, clamped to the fused activation's range;
* int16: ``sum(x * w)`` in int64 plus the int64 (or int16) bias, the 64-bit
  ``MultiplyByQuantizedMultiplier``, clamped (``fixed_point_s16``). TFLite Micro reads any
  int16 layer's bias as int64, so an int32 bias is refused.

Here the scatter runs one filter tap at a time: a matmul of the whole input with the tap's
[Ci, Co] weights, added to a strided view of the uncropped output. Integer sums are exact
in the float type ``exact_matmul_dtype`` picks, so their order does not matter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range_float,
    activation_range_quantized,
    wrap_int32,
)
from edgenn.backends.ref.kernels.common import (
    activation_of,
    batch_chunks,
    exact_matmul_dtype,
    int_bias,
    per_tensor,
    quant_of,
    requantize,
)
from edgenn.backends.ref.kernels.conv import channel_multipliers
from edgenn.backends.ref.kernels.conv_s16 import MAX_X, int8_weights_s16
from edgenn.backends.ref.kernels.fixed_point_s16 import S16Requant, symmetric
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType


@register("TransposeConv2D", DType.FLOAT32, DType.INT8, DType.INT16)
class TransposeConv2D(Layer):
    """Transposed convolution over NHWC input with [Cout, KH, KW, Cin/groups] weights.

    Attributes the Cortex-M kernels read: ``kind`` ("float32" / "int8" / "int16"),
    ``w_int`` (int64 weights, quantized kinds), ``bias_int``, ``mult``, ``shift``,
    ``in_zp``, ``out_zp``, ``lo``, ``hi`` (int8) or ``requant`` (int16), and the geometry.
    """

    def build(self) -> None:
        x, w, node = self.inputs[0], self.inputs[1], self.node
        assert x is not None and w is not None
        self.kind = x.dtype.value
        self.co, self.kh, self.kw, self.cig = w.shape
        _, self.h, self.w_in, self.ci = x.shape
        _, self.oh, self.ow, _ = self.outputs[0].shape
        self.groups = int(node.attr("groups", 1))
        self.strides = tuple(int(s) for s in node.attr("strides", (1, 1)))
        self.dilations = tuple(int(d) for d in node.attr("dilations", (1, 1)))
        self.pads = tuple(int(p) for p in node.attr("pads", (0, 0, 0, 0)))
        bias = self.const(2)
        depth = self.kh * self.kw * self.cig
        if self.kind == "int16":
            symmetric(self, x, "input")
            self.w_int = int8_weights_s16(self)
            self.mult, self.shift = channel_multipliers(self)
            self.requant = S16Requant.build(self, bias, self.co, self.mult, self.shift,
                                            self.outputs[0], allow_narrow=False)
            self.dtype: Any = exact_matmul_dtype(depth, MAX_X, 128)
            w_mat = self.w_int
        elif self.kind == "int8":
            self._build_int8(bias, depth)
            w_mat = self.w_int
        else:
            weights = self.const(1)
            assert weights is not None
            self.flo, self.fhi = activation_range_float(activation_of(self),
                                                    self.finite_float_clamp)
            self.bias_f = None if bias is None else bias.astype(np.float32)
            self.dtype = np.float32
            w_mat = weights
        # per group, per tap: [Cin/g, Cout/g] matrices
        cog = self.co // self.groups
        self.taps = [
            np.ascontiguousarray(
                w_mat[g * cog:(g + 1) * cog].transpose(1, 2, 3, 0).astype(self.dtype))
            for g in range(self.groups)
        ]

    def _build_int8(self, bias: np.ndarray | None, depth: int) -> None:
        x, w = self.inputs[0], self.inputs[1]
        weights = self.const(1)
        assert weights is not None
        if weights.dtype != np.int8:
            raise UnsupportedOperatorError(
                f"{self.node}: int8 TransposeConv2D needs int8 weights, got {weights.dtype}")
        if bias is not None and bias.dtype != np.int32:
            raise UnsupportedOperatorError(
                f"{self.node}: int8 TransposeConv2D needs an int32 bias, got {bias.dtype}")
        wq = quant_of(self, w, "weight")
        self.w_int = weights.astype(np.int64) - wq.zero_point.reshape(-1, 1, 1, 1)
        self.mult, self.shift = channel_multipliers(self)
        self.in_zp = per_tensor(self, x, "input").zp
        oq = per_tensor(self, self.outputs[0], "output")
        self.out_zp = oq.zp
        self.lo, self.hi = activation_range_quantized(activation_of(self), oq)
        self.bias_int = int_bias(self, bias, self.co)
        max_x = max(127 - self.in_zp, self.in_zp + 128)
        self.dtype = exact_matmul_dtype(depth, max_x, int(np.abs(self.w_int).max(initial=0)))

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        n = x.shape[0]
        out_dtype = {"float32": np.float32, "int8": np.int8, "int16": np.int16}[self.kind]
        out = np.empty((n, self.oh, self.ow, self.co), out_dtype)
        per_item = self.h * self.w_in * (self.ci + self.co) + self.oh * self.ow * self.co
        for part in batch_chunks(n, per_item):
            xf = x[part].astype(self.dtype)
            if self.kind == "int8":
                xf -= self.dtype(self.in_zp)
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
            res = acc if self.bias_f is None else acc + self.bias_f
            return np.clip(res, self.flo, self.fhi)
        acc_int = acc.astype(np.int64)
        if self.kind == "int16":
            return self.requant(acc_int)
        acc_int += self.bias_int
        # why wrap: TFLite Micro's int8 scratch accumulator is int32
        return requantize(wrap_int32(acc_int), self.mult, self.shift, self.out_zp,
                          self.lo, self.hi)
