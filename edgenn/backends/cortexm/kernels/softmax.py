"""Portable int8 Softmax: gemmlowp exp tabulated at generation time, reciprocal in C."""

from __future__ import annotations

from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import PortableKernel, args, is_int8, ref_layer
from edgenn.backends.ref.kernels.softmax import softmax_input_scaling
from edgenn.ir import Graph, Node


def gemmlowp_softmax_call(node: Node, graph: Graph, function: str, source: str) -> KernelCall:
    """The call of an int8-input Softmax kernel (``edgenn_softmax_s8`` or its int16-output
    twin): rows of ``depth`` values, the exp and accumulator tables of the reference layer."""
    layer = ref_layer(node, graph)
    x = graph.tensor(node.inputs[0])
    depth = x.shape[-1] if x.shape else 1
    assert x.quant is not None
    _, _, diff_min = softmax_input_scaling(layer.beta, x.quant.s)
    call = (f"{function}({{in0}}, {{out0}}, {args(x.size // depth, depth)}, "
            f"{{exp_lut}}, {{acc_lut}}, {diff_min});")
    return KernelCall(call, (source,),
                      (CArray("exp_lut", "int32_t", layer.exp_lut),
                       CArray("acc_lut", "int32_t", layer.acc_lut)),
                      kernel_name=function)


def _prepare(node: Node, graph: Graph) -> KernelCall:
    return gemmlowp_softmax_call(node, graph, "edgenn_softmax_s8", "edgenn_softmax_s8.c")


register_kernel(PortableKernel("Softmax", "edgenn_softmax_s8", is_int8, _prepare))
