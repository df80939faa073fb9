"""Layer + config -> generated operator (C source, packed weights, plan). No compiling here.

Each algorithm is one emitter (``name, shape, tile, isa, split -> source, plan``) and one
weight packing, looked up by name: no per-algorithm branching inside the emitters.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from edgenn.backends.host.kernels.config import HostKernelConfig
from edgenn.backends.host.kernels.conv_drivers import emit_direct, emit_indirect
from edgenn.backends.host.kernels.depthwise import emit_depthwise
from edgenn.backends.host.kernels.gemm_driver import Gemm, emit_gemm, emit_im2col
from edgenn.backends.host.kernels.generated import Generated, HostPlan
from edgenn.backends.host.kernels.isa import Isa, resolve_isa
from edgenn.backends.host.kernels.layer import ConvShape, DenseShape, layer_params, layer_shape
from edgenn.backends.host.kernels.packing import concat_aligned, conv_b, pack_b, padded_bias
from edgenn.backends.host.kernels.tiles import Tile, tile_for
from edgenn.backends.host.kernels.winograd import emit_winograd
from edgenn.backends.host.kernels.winograd_math import weight_transform
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph, Node

ConvEmitter = Callable[[str, ConvShape, Tile, Isa, str], tuple[str, HostPlan]]


def _pointwise(name: str, s: ConvShape, tile: Tile, isa: Isa, split: str
               ) -> tuple[str, HostPlan]:
    return emit_gemm(name, Gemm(s.m, s.cin, s.cout, s.lo, s.hi), tile, isa, split,
                     "pointwise convolution")


def _winograd_weights(weights: np.ndarray, nr: int, m: int) -> np.ndarray:
    """``U = G g G^T`` per position, each packed into B panels, positions concatenated."""
    return concat_aligned([pack_b(u, nr) for u in weight_transform(weights, m)])


def _gemm_weights(weights: np.ndarray, nr: int) -> np.ndarray:
    return pack_b(conv_b(weights), nr)


CONV_EMITTERS: dict[str, ConvEmitter] = {
    "gemm": _pointwise,
    "im2col": emit_im2col,
    "indirect": emit_indirect,
    "direct": emit_direct,
    "winograd_2x2": partial(emit_winograd, m=2),
    "winograd_4x4": partial(emit_winograd, m=4),
}
CONV_WEIGHTS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "winograd_2x2": partial(_winograd_weights, m=2),
    "winograd_4x4": partial(_winograd_weights, m=4),
}


def applicable(shape: ConvShape | DenseShape) -> tuple[str, ...]:
    """The algorithms that can compute a layer of this shape."""
    if isinstance(shape, DenseShape):
        return ("gemm",)
    if shape.depthwise:
        return ("depthwise",)
    algos = ["direct", "im2col", "indirect"]
    if shape.pointwise:
        algos.insert(0, "gemm")
    if shape.kh == shape.kw == 3 and shape.sh == shape.sw == 1:
        algos += ["winograd_2x2", "winograd_4x4"]
    return tuple(algos)


def generate(node: Node, graph: Graph, config: HostKernelConfig) -> Generated:
    """Generate the operator for ``node`` with ``config`` (one-line error if it cannot)."""
    shape = layer_shape(node, graph)
    if config.algorithm not in applicable(shape):
        raise UnsupportedOperatorError(
            f"{node}: algorithm {config.algorithm!r} does not apply to this layer "
            f"(choose {', '.join(applicable(shape))})")
    isa = resolve_isa(config.isa)
    weights, bias = layer_params(node, graph)
    name = f"edgenn_{config.algorithm}_{config.microkernel}".replace("x", "_")
    if isinstance(shape, DenseShape):
        tile = tile_for(config.microkernel, isa)
        g = Gemm(1, shape.k, shape.n, shape.lo, shape.hi)
        source, plan = emit_gemm(name, g, tile, isa, config.split, f"dense {shape.k}->{shape.n}")
        return Generated(name, source, isa, config, pack_b(weights.T, tile.nr),
                         padded_bias(bias, shape.n, 64), plan)
    if config.algorithm == "depthwise":
        source, plan, cp = emit_depthwise(name, shape, config.microkernel, isa, config.split)
        taps = np.zeros((shape.taps, cp), np.float32)  # [tap][channel], channels padded
        taps[:, :shape.cin] = weights[..., 0].reshape(shape.cout, -1).T
        return Generated(name, source, isa, config, concat_aligned([taps.reshape(-1)]),
                         padded_bias(bias, shape.cout, 64), plan)
    tile = tile_for(config.microkernel, isa)
    source, plan = CONV_EMITTERS[config.algorithm](name, shape, tile, isa, config.split)
    packed = CONV_WEIGHTS.get(config.algorithm, _gemm_weights)(weights, tile.nr)
    return Generated(name, source, isa, config, packed, padded_bias(bias, shape.cout, 64), plan)
