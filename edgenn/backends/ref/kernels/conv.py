"""Conv2D (grouped, depthwise, dilated, explicitly padded), float32 and int8 per-channel.

int8 follows TFLite Micro's ``reference_integer_ops::ConvPerChannel`` /
``DepthwiseConvPerChannel``: ``acc = sum((x - in_zp) * w) + bias`` in int32 (padding
contributes nothing), then ``MultiplyByQuantizedMultiplier`` with the per-channel multiplier
of ``in_scale * w_scale[c] / out_scale`` (computed in double), ``+ out_zp``, clamp to the
fused activation's quantized range. The integer matmul runs in a float type in which it is
exact (see ``exact_matmul_dtype``), so BLAS does the work without any rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import (
    activation_range_float,
    activation_range_quantized,
    quantize_multipliers,
)
from edgenn.backends.ref.kernels.common import (
    activation_of,
    batch_chunks,
    exact_matmul_dtype,
    int_bias,
    pad_hw,
    per_tensor,
    quant_of,
    requantize,
    windows,
)
from edgenn.backends.ref.layer import Layer, register
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType
from edgenn.ir.conv import is_depthwise_conv


def channel_multipliers(layer: Layer, w_index: int = 1) -> tuple[Any, Any]:
    """Per-output-channel (multiplier, shift) as TFLite's PopulateConvolutionQuantizationParams."""
    x, w, out = layer.inputs[0], layer.inputs[w_index], layer.outputs[0]
    assert w is not None
    in_s = per_tensor(layer, x, "input").s
    out_s = per_tensor(layer, out, "output").s
    wq = quant_of(layer, w, "weight")
    co = w.shape[0]
    if wq.per_channel and (wq.axis != 0 or wq.scale.size != co):
        raise UnsupportedOperatorError(
            f"{layer.node}: weight quantization must be per tensor or along axis 0 "
            f"({co} channels), got {wq!r}"
        )
    w_scales = np.broadcast_to(wq.scale.astype(np.float64), (co,))
    real = np.float64(in_s) * w_scales / np.float64(out_s)
    return quantize_multipliers(real)


@register("Conv2D", DType.FLOAT32, DType.INT8)
class Conv2D(Layer):
    """2-D convolution over NHWC input with [Cout, KH, KW, Cin/groups] weights."""

    inside: np.ndarray | None = None  # ``_inside_taps`` where float weights are not finite

    def build(self) -> None:
        x, w = self.inputs[0], self.inputs[1]
        assert x is not None and w is not None
        node = self.node
        weights = self.const(1)
        assert weights is not None
        bias = self.const(2)
        self._geometry()
        self.int8 = x.dtype is DType.INT8
        act = activation_of(self)
        if self.int8:
            if weights.dtype != np.int8:
                raise UnsupportedOperatorError(f"{node}: int8 convolution needs int8 weights")
            self.mult, self.shift = channel_multipliers(self)
            self.in_zp = per_tensor(self, x, "input").zp
            self.out_zp = per_tensor(self, self.outputs[0], "output").zp
            self.lo, self.hi = activation_range_quantized(act, self.outputs[0].quant)  # type: ignore[arg-type]
            wq = quant_of(self, w, "weight")
            w_int = weights.astype(np.int64) - wq.zero_point.reshape(-1, 1, 1, 1)
            self.bias_int = int_bias(self, bias, self.co)
            max_x = max(127 - self.in_zp, self.in_zp + 128)
            depth = self.kh * self.kw * self.cig
            self.dtype: Any = exact_matmul_dtype(depth, max_x, int(np.abs(w_int).max(initial=0)))
            w_mat = w_int.astype(self.dtype)
        else:
            self.flo, self.fhi = activation_range_float(act, self.finite_float_clamp)
            self.dtype = np.float32
            w_mat = weights.astype(np.float32)
            self.bias_f = None if bias is None else bias.astype(np.float32)
        # why: a padded tap is a zero in ``_accumulate``'s patches, and 0 * inf or 0 * NaN is
        # NaN where TFLite Micro skips the tap; weights that are not all finite take the
        # tap-by-tap sum that leaves the padded taps out (a float model's rare case)
        if not self.int8 and any(self.pads) and not np.isfinite(w_mat).all():
            self.inside = self._inside_taps()
            self.w_taps = w_mat
        self._layout(w_mat)

    def _inside_taps(self) -> np.ndarray:
        """``[OH, OW, KH, KW]``: whether each window tap reads the image (not padding)."""
        x = self.inputs[0]
        assert x is not None
        ones = np.ones((1, x.shape[1], x.shape[2], 1), np.float32)
        win = windows(pad_hw(ones, self.pads, 0), (self.kh, self.kw), self.strides,  # type: ignore[arg-type]
                      self.dilations, (self.oh, self.ow))  # type: ignore[arg-type]
        return np.asarray(win[0, ..., 0] > 0)

    def _geometry(self) -> None:
        """Shapes and attributes (shared with the 16x8 layer in ``conv_s16.py``)."""
        x, w, node = self.inputs[0], self.inputs[1], self.node
        assert x is not None and w is not None
        self.co, self.kh, self.kw, self.cig = w.shape
        self.groups = int(node.attr("groups", 1))
        self.strides = tuple(int(s) for s in node.attr("strides", (1, 1)))
        self.dilations = tuple(int(d) for d in node.attr("dilations", (1, 1)))
        self.pads = tuple(int(p) for p in node.attr("pads", (0, 0, 0, 0)))
        _, self.oh, self.ow, _ = self.outputs[0].shape
        self.ci = x.shape[3]
        self.depthwise = is_depthwise_conv(self.groups, self.ci, w.shape)

    def _layout(self, w_mat: np.ndarray) -> None:
        """The weights as ``_accumulate`` reads them (``w_mat`` already in ``self.dtype``)."""
        if self.depthwise:
            # [KH, KW, Cout] taps and, per output channel, its input channel (depth multiplier).
            self.taps = np.ascontiguousarray(w_mat[..., 0].transpose(1, 2, 0))
            self.chan = np.arange(self.co) // (self.co // self.groups)
        else:
            cog = self.co // self.groups
            self.w_groups = [
                np.ascontiguousarray(w_mat[g * cog : (g + 1) * cog].reshape(cog, -1).T)
                for g in range(self.groups)
            ]

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        n = x.shape[0]
        xs_ = x.astype(self.dtype)
        if self.int8:
            xs_ -= self.dtype(self.in_zp)
        out = np.empty((n, self.oh, self.ow, self.co), np.int8 if self.int8 else np.float32)
        per_item = self.oh * self.ow * max(self.kh * self.kw * self.ci, self.co)
        for part in batch_chunks(n, per_item):
            acc = self._accumulate(pad_hw(xs_[part], self.pads, 0))
            out[part] = self._finish(acc)
        return [out]

    def _accumulate(self, xp: np.ndarray) -> np.ndarray:
        win = windows(xp, (self.kh, self.kw), self.strides, self.dilations, (self.oh, self.ow))  # type: ignore[arg-type]
        n = xp.shape[0]
        if self.inside is not None:
            return self._accumulate_inside(win)
        if self.depthwise:
            acc = np.zeros((n, self.oh, self.ow, self.co), self.dtype)
            same = self.co == self.ci
            for i in range(self.kh):
                for j in range(self.kw):
                    tap = win[:, :, :, i, j, :]
                    acc += (tap if same else tap[..., self.chan]) * self.taps[i, j]
            return acc
        rows = n * self.oh * self.ow
        if self.groups == 1:
            patches = win.reshape(rows, -1)
            return (patches @ self.w_groups[0]).reshape(n, self.oh, self.ow, self.co)
        parts = []
        for g, w_mat in enumerate(self.w_groups):
            patches = win[..., g * self.cig : (g + 1) * self.cig].reshape(rows, -1)
            parts.append(patches @ w_mat)
        return np.concatenate(parts, axis=1).reshape(n, self.oh, self.ow, self.co)

    def _accumulate_inside(self, win: np.ndarray) -> np.ndarray:
        """The float sum over the taps inside the image only, one tap at a time."""
        assert self.inside is not None
        acc = np.zeros((win.shape[0], self.oh, self.ow, self.co), np.float32)
        cog = self.co // self.groups
        for i in range(self.kh):
            for j in range(self.kw):
                tap = win[:, :, :, i, j, :]
                if self.depthwise:
                    part = (tap if self.co == self.ci else tap[..., self.chan]) \
                        * self.taps[i, j]
                else:
                    part = np.concatenate(
                        [tap[..., g * self.cig:(g + 1) * self.cig]
                         @ self.w_taps[g * cog:(g + 1) * cog, i, j, :].T
                         for g in range(self.groups)], axis=-1)
                acc += np.where(self.inside[:, :, i, j, None], part, np.float32(0))
        return acc

    def _finish(self, acc: np.ndarray) -> np.ndarray:
        if self.int8:
            acc_int = acc.astype(np.int64)
            acc_int += self.bias_int
            return requantize(acc_int, self.mult, self.shift, self.out_zp, self.lo, self.hi)
        res = acc.astype(np.float32, copy=False)
        if self.bias_f is not None:
            res = res + self.bias_f
        return np.clip(res, self.flo, self.fhi)
