"""Helpers shared by the Cortex-M kernel plug-ins: int8 checks, constants, C literals."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from edgenn.arith.fixed_point import int32_array as i32  # noqa: F401  (kernels import it here)
from edgenn.backends.c_literals import C_TYPE, c_double, c_float  # noqa: F401  (kernels import them here)
from edgenn.backends.cortexm.ccall import Arg, Array, Buf
from edgenn.backends.cortexm.kernel import CArray
from edgenn.errors import EdgennError, UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.conv import ConvGeometry


def is_int8(node: Node, graph: Graph) -> bool:
    """True when the node's first input and first output are int8."""
    if not node.inputs or not node.inputs[0]:
        return False
    return (
        graph.tensor(node.inputs[0]).dtype is DType.INT8
        and graph.tensor(node.outputs[0]).dtype is DType.INT8
    )


def is_int16(node: Node, graph: Graph) -> bool:
    """True when the node's first input and first output are int16."""
    if not node.inputs or not node.inputs[0]:
        return False
    return (graph.tensor(node.inputs[0]).dtype is DType.INT16
            and graph.tensor(node.outputs[0]).dtype is DType.INT16)


def args(*values: Any) -> str:
    """Comma-separated C literals (ints as decimal)."""
    return ", ".join(str(int(v)) if not isinstance(v, str) else v for v in values)


def const_operand(node: Node, graph: Graph, index: int, arrays: list[CArray]) -> Arg:
    """The call argument of input ``index``: the tensor in the arena, or an emitted constant
    (appended to ``arrays`` as ``k<index>``)."""
    t = graph.tensor(node.inputs[index])
    if not t.is_const:
        return Buf("in", index)
    assert t.data is not None
    ctype = C_TYPE.get(t.dtype)
    if ctype is None:
        raise UnsupportedOperatorError(f"{node}: constant input of type {t.dtype.value}")
    arrays.append(CArray(f"k{index}", ctype, t.data))
    return Array(f"k{index}")


def conv_shape(g: ConvGeometry) -> tuple[int, ...]:
    """in_h .. pad_l of a convolution's geometry (``edgenn.prepared.conv.ConvGeometry``):
    the common part of the windowed kernels' arguments."""
    return (g.in_h, g.in_w, g.in_c, g.out_h, g.out_w, g.out_c, g.k_h, g.k_w, g.stride_h,
            g.stride_w, g.dil_h, g.dil_w, g.pad_t, g.pad_l)


def padded(dims: Iterable[int], rank: int, fill: int = 1) -> list[int]:
    """``dims`` left-padded with ``fill`` to ``rank`` entries."""
    d = [int(x) for x in dims]
    if len(d) > rank:
        raise ValueError(f"rank {len(d)} > {rank}")
    return [fill] * (rank - len(d)) + d


class PortableKernel:
    """A priority-0 kernel from two functions (the portable kernels are written this way)."""

    priority = 0

    def __init__(self, op: str, name: str, matches: Any, prepare: Any,
                 types: tuple[DType, ...] = (DType.INT8,)) -> None:
        self.op, self.name, self.types = op, name, types
        self._matches, self._prepare = matches, prepare

    def matches(self, node: Node, graph: Graph, core: Any) -> bool:
        return bool(self._matches(node, graph))

    def prepare(self, node: Node, graph: Graph, core: Any) -> Any:
        return self._prepare(node, graph)


def dense_strides(shape: Iterable[int]) -> list[int]:
    """Element strides of a C-order array."""
    dims = [int(d) for d in shape]
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides


def record_matcher(types: tuple[DType, ...] | None, build: Callable[[Node, Graph], object]
                   ) -> Callable[[Node, Graph], bool]:
    """A kernel's ``matches`` from its record: the first input has one of ``types`` (any when
    None) and ``build`` (the record the kernel takes its constants from) accepts the node."""

    def matches(node: Node, graph: Graph) -> bool:
        if types is not None and graph.tensor(node.inputs[0]).dtype not in types:
            return False
        try:
            build(node, graph)
        except EdgennError:
            return False
        return True

    return matches
