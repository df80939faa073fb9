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

from edgenn.arith.fixed_point import requantize
from edgenn.backends.ref.arrays import batch_chunks, pad_hw, windows
from edgenn.backends.ref.kernels.common import int8_matmul_dtype
from edgenn.backends.ref.layer import Layer, register
from edgenn.ir import DType
from edgenn.prepared.conv import ConvGeometry, prepare_conv, prepare_float_conv


@register("Conv2D", DType.FLOAT32, DType.INT8)
class Conv2D(Layer):
    """2-D convolution over NHWC input with [Cout, KH, KW, Cin/groups] weights."""

    inside: np.ndarray | None = None  # ``_inside_taps`` where float weights are not finite

    def build(self) -> None:
        x = self.inputs[0]
        assert x is not None
        self.int8 = x.dtype is DType.INT8
        if self.int8:
            p = prepare_conv(self.node, self.graph)
            self._geometry(p)
            self.p = p
            self.dtype: Any = int8_matmul_dtype(p, self.kh * self.kw * self.cig)
            w_mat = p.w.astype(self.dtype)
        else:
            f = prepare_float_conv(self.node, self.graph)
            self._geometry(f)
            self.fp = f
            self.dtype = np.float32
            w_mat = f.w
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
        win = windows(pad_hw(ones, self.pads, 0), (self.kh, self.kw), self.strides,
                      self.dilations, (self.oh, self.ow))
        return np.asarray(win[0, ..., 0] > 0)

    def _geometry(self, g: ConvGeometry) -> None:
        """Shapes and attributes of the record (shared with the 16x8 layer, ``conv_s16.py``)."""
        self.co, self.kh, self.kw, self.groups = g.out_c, g.k_h, g.k_w, g.groups
        self.cig = g.in_c // g.groups
        self.strides, self.dilations, self.pads = g.strides, g.dilations, g.pads
        self.oh, self.ow, self.ci = g.out_h, g.out_w, g.in_c
        self.depthwise = g.depthwise

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
            xs_ -= self.dtype(self.p.in_zp)
        out = np.empty((n, self.oh, self.ow, self.co), np.int8 if self.int8 else np.float32)
        per_item = self.oh * self.ow * max(self.kh * self.kw * self.ci, self.co)
        for part in batch_chunks(n, per_item):
            acc = self._accumulate(pad_hw(xs_[part], self.pads, 0))
            out[part] = self._finish(acc)
        return [out]

    def _accumulate(self, xp: np.ndarray) -> np.ndarray:
        win = windows(xp, (self.kh, self.kw), self.strides, self.dilations, (self.oh, self.ow))
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
            acc_int += self.p.bias
            return requantize(acc_int, self.p.mult, self.p.shift, self.p.out_zp, self.p.act_min,
                              self.p.act_max)
        res = acc.astype(np.float32, copy=False)
        if self.fp.bias is not None:
            res = res + self.fp.bias
        return np.clip(res, self.fp.act_min, self.fp.act_max)
