"""The kernel plug-in protocol of the Cortex-M backend and its registry.

A kernel is a Python object that knows one C implementation of one IR operator:

* ``op`` (the IR operator name), ``priority`` (the highest-priority kernel whose
  ``matches`` returns True is chosen; portable kernels use priority 0, DSP kernels more),
  ``name`` (the plug-in's: docs/operators.md, and ``inspect`` where its prepare refuses a
  node; a layer's kernel name is its call's, ``KernelCall.kernel_name``);
* ``matches(node, graph, core)``: can this kernel run this node on this core?
* ``prepare(node, graph, core) -> KernelCall``: everything the generator needs; the layer's
  constants come from its typed record (``edgenn.prepared``, the reference layer's too),
  never from a reference layer (``tests/test_lint.py``).

``KernelCall.call`` is a typed call (``edgenn.backends.cortexm.ccall``): a ``CCall`` of a
symbol and typed arguments, or a tuple of them run in order; the generator renders it:

* ``Buf("in", k)`` (``IN0``): input ``k`` in the arena, a typed pointer
  (``((int8_t *)(edgenn_arena + 1024))``; ``float *`` for float32). Inputs that are
  constants are not arena tensors: the kernel emits them as ``arrays`` itself;
* ``Buf("out", k)`` (``OUT0``): the outputs, the same way;
* ``SCRATCH``: ``((void *)(edgenn_arena + OFFSET))``, ``scratch_bytes`` bytes, 16-aligned,
  alive only during this layer (``((void *)0)`` when ``scratch_bytes`` is 0);
* ``Array(name)``: an entry of ``arrays`` by its local name; the generator gives it a
  unique C name (``l3_w``) and declares it ``static const <ctype> NAME[] aligned(4)``;
* ``Local(name)``, ``Generated(fn, kernel)``: a symbol of the layer's ``code``
  (``@P@_<name>``), the function it generated; ``Int``, ``Float``, ``NULL``, ``Cast``,
  ``AddressOf``, ``Offset``.

``kernel_name`` is derived from the call (its symbol, or the generator of a generated
function): the kernel's one name in model.c, manifest.json, ``inspect`` and ``bench``.

``code`` is C text the generator writes into model.c after the layer's arrays: functions
specialised for this layer's shape (unrolled loops with the shape's constants). Every ``@P@``
in it becomes the layer's prefix, so a function is named ``@P@_conv`` and the call is
``generated("conv", name, ...)``; arrays are ``@P@_<local name>``.

``sources`` names files under ``edgenn/backends/cortexm/c/``: each ``x.c`` is compiled and
linked and its ``x.h`` included by model.c; a ``y.h`` entry is only included (for
``static inline`` kernels specialised per call site).
Kernels are chosen by the registry, never by ``#ifdef`` chains in C: each kernel module
(``kernels/``) registers here and this module imports none of them;
``edgenn.backends.cortexm.selection`` imports them all and picks the kernel of a node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from edgenn.backends.cortexm.ccall import Calls, CCall, call_name, statements
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import DType, Graph, Node

C_TYPES = {
    "int8_t": np.int8,
    "uint8_t": np.uint8,
    "int16_t": np.int16,
    "uint16_t": np.uint16,
    "int32_t": np.int32,
    "uint32_t": np.uint32,
    "float": np.float32,
}


@dataclass(frozen=True)
class CArray:
    """A constant array: local ``name`` (placeholder in the call), C element type, values."""

    name: str
    ctype: str
    values: Any  # array-like; stored as a contiguous 1-D array of the C type

    def __post_init__(self) -> None:
        if self.ctype not in C_TYPES:
            raise ValueError(f"array {self.name!r}: unsupported C type {self.ctype!r}")
        vals = np.asarray(self.values)
        want = np.dtype(C_TYPES[self.ctype])
        if vals.dtype != want:
            # why: refuse silent wrap-around when re-packed values do not fit the C type.
            info = np.iinfo(want) if want.kind in "iu" else None  # type: ignore[type-var]
            if info is not None and vals.size and (
                vals.min() < info.min or vals.max() > info.max
            ):
                raise ValueError(f"array {self.name!r}: values do not fit {self.ctype}")
            vals = vals.astype(want)
        object.__setattr__(self, "values", np.ascontiguousarray(vals).ravel())


@dataclass(frozen=True)
class KernelCall:
    """What one layer contributes to the generated project (see the module docstring)."""

    call: Calls
    sources: tuple[str, ...] = ()
    arrays: tuple[CArray, ...] = ()
    scratch_bytes: int = 0
    # a short comment placed above the call in model.c (shapes, parameters)
    comment: str = ""
    code: str = ""  # per-layer generated C (see the module docstring), "@P@" = layer prefix
    # True when output 0 may be written over input 0: the kernel reads every input byte an
    # output byte depends on before writing it, and writes no other bytes (the planner decides
    # whether the input's lifetime allows it: codegen/memory.py in_place_pairs)
    in_place: bool = False
    # True when the layer's new-state outputs (LSTM's final hidden / cell state, SVDF's new
    # state) may be written over its state inputs: the kernel reads every state byte it
    # needs before writing the byte at the same offset. The planner then puts the new state
    # in the state variable's slot (codegen/memory.py state_aliases): no buffer, no copy.
    state_in_place: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # why at run time: a kernel module that still built C text would otherwise only
        # fail when a model reaches it
        if not all(isinstance(c, CCall) for c in statements(self.call)):
            raise TypeError("KernelCall.call must be a CCall or a tuple of them "
                            f"(edgenn.backends.cortexm.ccall), not {self.call!r:.80}")

    @property
    def kernel_name(self) -> str:
        """The kernel's one name (manifest.json, ``inspect``, ``bench``, the comment in
        model.c): its call's, the C symbol or the generator of a generated function."""
        return call_name(self.call)


class Kernel(Protocol):
    """A C kernel plug-in for one IR operator.

    A kernel declares the element types of the first input it takes in ``types`` (default:
    int8 only); ``supported_types`` reports them per operator before anything is built
    (``edgenn inspect``, docs/operators.md). ``matches`` still decides per node.
    """

    op: str
    priority: int
    name: str

    def matches(self, node: Node, graph: Graph, core: Core) -> bool: ...

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall: ...


_KERNELS: dict[str, list[Kernel]] = {}


def register_kernel(kernel: Kernel) -> Kernel:
    """Add a kernel to the registry (returns it, so it can be used on a module-level object)."""
    _KERNELS.setdefault(kernel.op, []).append(kernel)
    # stable: equal priorities keep registration order
    _KERNELS[kernel.op].sort(key=lambda k: -k.priority)
    return kernel


def registered(op: str) -> Sequence[Kernel]:
    """The kernels registered so far for ``op``, highest priority first (every built-in one
    once ``edgenn.backends.cortexm.selection`` is imported)."""
    return tuple(_KERNELS.get(op, ()))


def registered_ops() -> list[str]:
    """The operators some kernel registered so far runs."""
    return sorted(_KERNELS)


def kernel_types(kernel: Kernel) -> tuple[DType, ...]:
    """The element types of the first input ``kernel`` declares (int8 when it says none)."""
    return tuple(getattr(kernel, "types", (DType.INT8,)))


# why: these kernels index their activations as one image ([1, H, W, C]); the graph is
# otherwise free to declare any first axis (edgenn.ir.batch), and the element-wise, dense,
# recurrent and data-movement kernels loop over it or treat it as just another axis
_BATCH_ONE_OPS = frozenset({"Conv2D", "MaxPool2D", "AvgPool2D", "TransposeConv2D",
                            "FusedConvChain", "Resize", "LRN"})


def _check_batch_one(node: Node, graph: Graph, core: Core) -> None:
    """One line instead of a silently wrong result for a declared batch above 1."""
    if node.op not in _BATCH_ONE_OPS or not node.inputs or not node.inputs[0]:
        return
    shape = graph.tensor(node.inputs[0]).shape
    if len(shape) >= 3 and shape[0] != 1:
        raise UnsupportedOperatorError(
            f"{node}: the Cortex-M kernels for {node.op} run one sample (batch 1), but the "
            f"input is declared {list(shape)} on {core.name}; export the model with batch 1 "
            "and give the samples as a batch of invocations")


def matching_kernel(node: Node, graph: Graph, core: Core) -> Kernel:
    """The highest-priority kernel registered so far that matches ``node`` on ``core``; one
    clear error if none. ``selection.select_kernel`` is this over the full table (a kernel
    that picks kernels for the parts of its node, the fused chains, calls it here because
    ``selection`` imports every kernel module, its own included)."""
    _check_batch_one(node, graph, core)
    for kernel in registered(node.op):
        if kernel.matches(node, graph, core):
            return kernel
    first = graph.tensor(node.inputs[0]) if node.inputs and node.inputs[0] else None
    dtype = first.dtype.value if first is not None else "?"
    raise UnsupportedOperatorError(
        f"{node}: no Cortex-M kernel for {node.op} with {dtype} input on {core.name}"
    )
