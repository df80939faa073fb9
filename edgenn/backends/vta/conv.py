"""Conv2D and FullyConnected lowered to the accelerator's int8 GEMM; requantization on the CPU.

The lowering (the ZCU102 GEMM study's, and DarkNet's):

* A = ``im2col(x)``: ``[N*OH*OW, KH*KW*Cin]`` int8 on the host, padded with the input zero
  point (a FullyConnected's A is its input ``[N, K]`` as is);
* B = the weights as ``[K, Cout]`` int8 (per group for grouped convolutions);
* the input zero point leaves the inner loop: ``sum_k (x - zp) w = sum_k x w - zp sum_k w``,
  so the accelerator multiplies plain int8 by int8 and the correction is folded into the int32
  bias that is loaded into the accumulators before the GEMM (``bias - zp * colsum(B)``);
* the int32 accumulators come back whole and are requantized on the CPU with the reference
  runtime's own constants and ``requantize`` (per-channel multiplier and shift, output zero
  point, fused activation clamp), so the result is the reference's bit for bit.

Why the CPU requantizes: TFLite's ``MultiplyByQuantizedMultiplier`` is a saturating rounding
doubling high multiply of two int32 values (a 64-bit product) followed by a rounding shift;
VTA's ALU has a 32-bit MUL by a 16-bit immediate and an arithmetic SHR, which cannot form that
product. An ALU-only requantization (shift and clip) is possible but is a different, coarser
rounding: not bit-exact with TFLite. ``benchmarks/vta_resnet18.py`` measures what the four-fold
int32 output traffic costs against an int8 store.

Depthwise convolutions stay on the CPU (reference kernel): as a GEMM each channel is a
``[OH*OW, KH*KW] x [KH*KW, 1]`` product, so at most 1/16 of the 16x16 core would do useful work
(9/16 of a K block, 1/16 of an N block).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.arith.fixed_point import requantize
from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.ref.arrays import batch_chunks
from edgenn.backends.ref.layer import Layer
from edgenn.backends.vta.im2col import ConvGeometry, im2col
from edgenn.backends.vta.offload import GemmRunLike, OffloadTarget
from edgenn.ir import DType
from edgenn.ir.conv import is_depthwise
from edgenn.prepared.conv import ConvParams, prepare_conv
from edgenn.prepared.fully_connected import FullyConnectedParams, prepare_fully_connected
from edgenn.prepared.quant import quant_of

INT32_MAX = 2**31 - 1
GEMM_OPS = ("Conv2D", "FullyConnected")


@dataclass
class LayerRun:
    """What the last ``run`` of an offloaded layer did: its GEMMs and the host-side work."""

    gemms: list[Any] = field(default_factory=list)  # GemmReport of every GEMM call
    im2col_ms: float = 0.0
    requant_ms: float = 0.0


def weight_matrices(layer: Layer) -> list[npt.NDArray[np.int8]]:
    """B of every group, ``[K, Cout/groups]`` int8, rows in im2col's (kh, kw, cin) order."""
    w = layer.const(1)
    assert w is not None
    if layer.node.op == "FullyConnected":
        return [np.ascontiguousarray(w.T)]
    groups = int(layer.node.attr("groups", 1))
    cog = w.shape[0] // groups
    return [
        np.ascontiguousarray(w[g * cog : (g + 1) * cog].reshape(cog, -1).T) for g in range(groups)
    ]


def gemm_record(layer: Layer) -> ConvParams | FullyConnectedParams:
    """The int8 record of an offloadable Conv2D / FullyConnected layer (its constants)."""
    if layer.node.op == "Conv2D":
        return prepare_conv(layer.node, layer.graph)
    return prepare_fully_connected(layer.node, layer.graph)


def cpu_reason(layer: Layer) -> str | None:
    """Why an int8 Conv2D / FullyConnected stays on the CPU, or None when it is offloaded."""
    node = layer.node
    x = layer.inputs[0]
    if node.op not in GEMM_OPS or x is None or x.dtype is not DType.INT8:
        return "not an int8 Conv2D / FullyConnected"
    w = layer.inputs[1]
    if w is None or not w.is_const:
        return "weights are not a constant"
    if node.op == "Conv2D" and is_depthwise(node, layer.graph):
        return "depthwise: at most 1/16 of the GEMM core would be useful"
    if np.any(quant_of(node, w, "weight").zero_point != 0):
        return "weights have a non-zero zero point (TFLite int8 weights are symmetric)"
    rec = gemm_record(layer)
    in_zp, bias = rec.in_zp, rec.bias
    for g, b in enumerate(weight_matrices(layer)):
        cols = slice(g * b.shape[1], (g + 1) * b.shape[1])
        folded = fold_input_zero_point(bias[cols], b.T, in_zp)  # B: [K, Cout]
        # why: the accumulators are int32 and wrap. Wrapping partial sums are harmless (modular
        # arithmetic), but the final x.w + folded bias must fit int32 for every possible input.
        worst = 128 * np.abs(b.astype(np.int64)).sum(axis=0) + np.abs(folded)
        if np.any(worst > INT32_MAX):
            return f"the int32 accumulator could overflow (depth {b.shape[0]})"
    return None


class VtaGemmLayer(Layer):
    """An offloaded layer: the constants of its record (``edgenn.prepared``, the reference
    layer's too), B matrices and folded biases, so the requantization uses exactly the
    reference's multipliers and shifts."""

    def __init__(self, ref: Layer, target: OffloadTarget) -> None:
        # why no super().__init__: the reference layer has already been built from the node.
        self.ref = ref
        self.node, self.inputs, self.outputs = ref.node, ref.inputs, ref.outputs
        self.graph = ref.graph
        self.target = target
        self.last = LayerRun()
        self.rec = gemm_record(ref)
        self.in_zp = self.rec.in_zp
        self.b = weight_matrices(ref)
        bias = self.rec.bias
        width = self.b[0].shape[1]
        self.bias = [  # each B is [K, Cout / groups]: its channels are columns
            fold_input_zero_point(bias[g * width : (g + 1) * width], b.T, self.in_zp)
            .astype(np.int32) for g, b in enumerate(self.b)
        ]
        self.build()

    @property
    def groups(self) -> int:
        return len(self.b)

    @property
    def shape_mkn(self) -> tuple[int, int, int]:
        """(M, K, N) of one group's GEMM for a batch of one."""
        return self.rows_per_item(), self.b[0].shape[0], self.b[0].shape[1]

    def rows_per_item(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def _gemm(self, a: npt.NDArray[np.int8], group: int) -> npt.NDArray[np.int32]:
        run: GemmRunLike = self.target.int32_gemm(a, self.b[group], self.bias[group])
        self.last.gemms.append(run.report)
        return run.result

    def _requantize(self, acc: np.ndarray) -> npt.NDArray[np.int8]:
        start = time.perf_counter()
        r = self.rec
        out = requantize(acc.astype(np.int64), r.mult, r.shift, r.out_zp, r.act_min, r.act_max)
        self.last.requant_ms += 1e3 * (time.perf_counter() - start)
        return out


class VtaConv2D(VtaGemmLayer):
    """Conv2D (groups of any size except depthwise) as im2col + GEMM per group."""

    op = "Conv2D"

    def build(self) -> None:
        g = self.rec
        assert isinstance(g, ConvParams)
        self.geo = ConvGeometry(
            kernel=(g.k_h, g.k_w), strides=g.strides, dilations=g.dilations, pads=g.pads,
            out_hw=(g.out_h, g.out_w), groups=self.groups,
        )

    def rows_per_item(self) -> int:
        return self.geo.rows(1)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        self.last = LayerRun()
        n, (oh, ow) = x.shape[0], self.geo.out_hw
        out = np.empty((n, oh, ow, self.outputs[0].shape[3]), np.int8)
        # why chunks of whole images: a big batch would make one huge A matrix (and simulated
        # DRAM image); the reference runtime bounds its im2col the same way.
        for part in batch_chunks(n, self.rows_per_item() * self.b[0].shape[0]):
            accs = []
            for g in range(self.groups):
                start = time.perf_counter()
                a = im2col(x[part], self.geo, self.in_zp, g)
                self.last.im2col_ms += 1e3 * (time.perf_counter() - start)
                accs.append(self._gemm(a, g))
            acc = accs[0] if len(accs) == 1 else np.concatenate(accs, axis=1)
            out[part] = self._requantize(acc).reshape(-1, oh, ow, out.shape[3])
        return [out]


class VtaFullyConnected(VtaGemmLayer):
    """FullyConnected: the input rows are A as they are (a 1x1 convolution's im2col)."""

    op = "FullyConnected"

    def rows_per_item(self) -> int:
        return 1

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        t = self.inputs[0]
        x = t.data if t is not None and t.data is not None else xs[0]  # a constant input
        self.last = LayerRun()
        rows = []
        for part in batch_chunks(x.shape[0], self.b[0].shape[0]):
            a = np.ascontiguousarray(x[part], dtype=np.int8)
            rows.append(self._requantize(self._gemm(a, 0)))
        out = np.concatenate(rows) if rows else np.empty((0, self.b[0].shape[1]), np.int8)
        return [out]


def offload(layer: Layer, target: OffloadTarget) -> VtaGemmLayer:
    """The accelerator version of a built reference Conv2D / FullyConnected layer."""
    cls = VtaConv2D if layer.node.op == "Conv2D" else VtaFullyConnected
    return cls(layer, target)
