"""The rule-based default: Arm Compute Library's fixed choices, the baseline of Cha, Kwon
and Lee (2023).

Convolution method (``NEConvolutionLayer::get_convolution_method``, ACL 19.x-20.x, fp32):

1. depthwise convolution -> the depthwise kernel (we use the ``dw4x16`` block);
2. fewer than 16 input channels -> GEMM (ACL: "input channels < 16 -> GEMM");
3. a 3x3 stride-1 convolution -> Winograd, F(4x4, 3x3) unless the output plane is at most
   4 pixels wide or high, then F(2x2, 3x3) (ACL picks the 4x4 output tile for 3x3 kernels
   when the image is large enough);
4. otherwise GEMM: a 1x1 stride-1 unpadded convolution skips im2col (plain ``gemm``),
   every other one is ``im2col`` + GEMM. ACL never picks direct or indirect here.

GEMM micro-kernel (``arm_gemm``'s ``gemm_fp32.cpp`` method list, first match wins):

* one output row (``M == 1``, FullyConnected at batch 1) -> a GEMV: the hybrid ``6x16``
  tile, which our generator specialises to a single row;
* ``K <= 256 and N <= 256`` -> hybrid ``6x16`` (``a64_hybrid_fp32_mla_6x16``);
* batched GEMMs (Winograd's per-position multiplies) with fewer than 8 rows -> hybrid;
* otherwise interleaved ``8x12`` (``a64_sgemm_8x12``).
"""

from __future__ import annotations

from edgenn.backends.host.kernels.config import HostKernelConfig
from edgenn.backends.host.kernels.layer import ConvShape, DenseShape, layer_shape
from edgenn.ir import Graph, Node


def gemm_kernel(m: int, k: int, n: int, batched: bool = False) -> str:
    """ACL's fixed GEMM kernel choice for an ``m x k`` by ``k x n`` multiply."""
    if m == 1 or (k <= 256 and n <= 256) or (batched and m < 8):
        return "6x16"
    return "8x12"


def default_method(shape: ConvShape | DenseShape) -> str:
    if isinstance(shape, DenseShape):
        return "gemm"
    if shape.depthwise:
        return "depthwise"
    if shape.cin >= 16 and shape.kh == shape.kw == 3 and shape.sh == shape.sw == 1:
        return "winograd_2x2" if min(shape.oh, shape.ow) <= 4 else "winograd_4x4"
    return "gemm" if shape.pointwise else "im2col"


def default_config(node: Node, graph: Graph, isa: str = "auto") -> HostKernelConfig:
    """The ACL-like configuration for ``node`` (see the module docstring)."""
    shape = layer_shape(node, graph)
    method = default_method(shape)
    if method == "depthwise":
        return HostKernelConfig(method, "dw4x16", isa)
    if isinstance(shape, DenseShape):
        return HostKernelConfig(method, gemm_kernel(1, shape.k, shape.n), isa)
    if method.startswith("winograd"):
        m = int(method[-1])
        tiles = -(-shape.oh // m) * -(-shape.ow // m)
        kernel = gemm_kernel(tiles, shape.cin, shape.cout, batched=True)
        return HostKernelConfig(method, kernel, isa)
    return HostKernelConfig(method, gemm_kernel(shape.m, shape.k, shape.cout), isa)
