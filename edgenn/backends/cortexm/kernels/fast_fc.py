"""Fast int8 FullyConnected for DSP cores (Cortex-M4/M7): 4 rows x SMLAD, input expanded once.

The C side is ``c/edgenn_fc_s8_dsp.c``. Generation-time work, so the inner loop is loads and SMLADs:

* the input is expanded at run time once per inference into int16 pairs in SXTB16 order (a
  word of bytes b0 b1 b2 b3 gives the pairs (b0, b2), (b1, b3)); the weights are permuted
  the same way here and stored as int16 pairs, 4 output rows interleaved per pair
  (:func:`pack_fc_weights`), so each expanded input pair is loaded once per 4 rows;
* the pair count is padded to a multiple of 3 (the kernel's unit of work: 3 pairs x 4 rows
  in two back-to-back load chains) and the rows to a multiple of 4, with zero weights;
* the bias is folded with the input offset, ``bias - in_zp * sum(w)`` (int32 wrap, as
  TFLite Micro accumulates), so raw int8 inputs are multiplied;
* requantization is TFLite's exact double rounding, per tensor or per channel.
"""

from __future__ import annotations

import numpy as np

from edgenn.arith.zero_point import fold_input_zero_point
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import args, i32, int8_weights, is_int8, ref_layer
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import Graph, Node

ROWS = 4  # output rows per pass
PERIOD = 3  # input pairs per unit of the inner loop


def fc_pairs(depth: int) -> int:
    """Padded pair count: K rounded up to 4 elements, halved, rounded up to a multiple of 3."""
    k4 = -(-depth // 4) * 4
    return -(-(k4 // 2) // PERIOD) * PERIOD


def sxtb16_order(n: int) -> np.ndarray:
    """Position of element j in the expanded int16 stream (inside each run of 4: 0, 2, 1, 3)."""
    j = np.arange(n)
    return (j & ~3) | ((j & 1) << 1) | ((j >> 1) & 1)


def pack_fc_weights(w: np.ndarray) -> np.ndarray:
    """int8 [Cout, K] -> uint32 words [row group][pair][4 rows], int16 pairs (lo, hi)."""
    cout, depth = w.shape
    pairs = fc_pairs(depth)
    cpad = -(-cout // ROWS) * ROWS
    mat = np.zeros((cpad, 2 * pairs), np.int64)
    mat[:cout, sxtb16_order(depth)] = w.astype(np.int64)
    words = ((mat[:, 0::2] & 0xFFFF) | ((mat[:, 1::2] & 0xFFFF) << 16)).astype(np.uint32)
    return np.ascontiguousarray(
        words.reshape(cpad // ROWS, ROWS, pairs).transpose(0, 2, 1)
    ).ravel()


def _padded(values: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, np.int64)
    out[: values.size] = values
    return out


def fc_plan(node: Node, graph: Graph) -> tuple[tuple[CArray, ...], list[int]]:
    """The constant arrays (w, bias, mult, shift) and the integer arguments after them."""
    layer = ref_layer(node, graph)
    w = int8_weights(node, graph.tensor(node.inputs[1]))
    cout, depth = w.shape
    batch = graph.tensor(node.inputs[0]).shape[0]
    cpad = -(-cout // ROWS) * ROWS
    bias = np.asarray(layer.bias_int, np.int64)
    folded = i32(_padded(fold_input_zero_point(bias, w, layer.in_zp), cpad))
    mult = _padded(np.broadcast_to(np.asarray(layer.mult, np.int64), (cout,)), cpad)
    shift = _padded(np.broadcast_to(np.asarray(layer.shift, np.int64), (cout,)), cpad)
    arrays = (CArray("w", "uint32_t", pack_fc_weights(w)), CArray("bias", "int32_t", folded),
              CArray("mult", "int32_t", mult), CArray("shift", "int32_t", shift))
    return arrays, [batch, depth, fc_pairs(depth), cout, layer.out_zp, layer.lo, layer.hi]


class FastFullyConnected:
    """FullyConnected with a hand-scheduled 4-row SMLAD loop (cores with the DSP extension)."""

    op = "FullyConnected"
    priority = 10
    name = "edgenn_fc_s8_dsp"
    widened_weights = True  # int16 weights: only where the flash policy grants them

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int8(node, graph):
            return False
        if len(node.inputs) < 2 or not graph.tensor(node.inputs[1]).is_const:
            return False
        return len(graph.tensor(node.inputs[1]).shape) == 2

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        arrays, call_args = fc_plan(node, graph)
        depth, cout = call_args[1], call_args[3]
        call = ("edgenn_fc_s8_dsp({in0}, {out0}, {scratch}, {w}, {bias}, {mult}, {shift}, "
                + args(*call_args) + ");")
        return KernelCall(
            call=call,
            sources=("edgenn_fc_s8_dsp.c",),
            arrays=arrays,
            scratch_bytes=4 * fc_pairs(depth),
            kernel_name=self.name,
            comment=f"{depth} -> {cout}, DSP 4-row SMLAD over int16 pairs",
        )


register_kernel(FastFullyConnected())
