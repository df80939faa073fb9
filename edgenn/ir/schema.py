"""The operator contract: one ``OpSchema`` per IR operator.

An operator is, in this order of dependency:

1. its **schema** here: name, summary, the element types its first input may have, the
   attributes it requires and accepts, and the TFLite / ONNX operators that import to it;
2. its **shape and type inference** (``@register_shape`` in ``edgenn/ir/opdefs/``);
3. its **converters**: ``edgenn/frontends/tflite/converters/`` and ``frontends/onnx/ops/``;
4. its **reference kernel** (``backends/ref/kernels/``, ``@register(op, *dtypes)``),
   bit-exact with TFLite Micro;
5. a **kernel per backend** that claims it (``backends/cortexm/kernels/`` ...), each declaring
   the element types it takes, so ``edgenn inspect --target T`` can say what will not run
   before anything is built;
6. its **conformance cases** (``tests/conformance/cases/``), run against TFLite Micro on ref
   and on every backend that claims them.

``validate_node`` checks a node against its schema (required and unknown attributes, the
first input's type) with one line naming the node; shape inference calls it first.
The definitions (``opdefs/``) register here and this module imports none of them:
``edgenn.ir.shapes`` imports them all, so the table is full once shape inference is loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from edgenn.errors import GraphValidationError, UnsupportedOperatorError
from edgenn.ir.dtypes import DType
from edgenn.ir.node import Node
from edgenn.ir.tensor import Tensor

F32, I8, I16, I32 = DType.FLOAT32, DType.INT8, DType.INT16, DType.INT32
QUANTIZED = (I8, I16)


@dataclass(frozen=True)
class OpSchema:
    name: str
    summary: str
    types: tuple[DType, ...]  # element types the first input may have
    required: tuple[str, ...] = ()  # attributes every node must carry
    # attributes a node may carry; None: any (operators whose passes add bookkeeping attrs)
    optional: tuple[str, ...] | None = ()
    tflite: tuple[str, ...] = ()  # TFLite builtin operators imported to this operator
    onnx: tuple[str, ...] = ()  # ONNX operator types imported to this operator

    @property
    def attrs(self) -> tuple[str, ...] | None:
        return None if self.optional is None else self.required + self.optional


_SCHEMAS: dict[str, OpSchema] = {}


def define_op(name: str, summary: str, types: Iterable[DType], *,
              required: Iterable[str] = (), optional: Iterable[str] | None = (),
              tflite: Iterable[str] = (), onnx: Iterable[str] = ()) -> OpSchema:
    """Register the schema of IR operator ``name`` (once)."""
    if name in _SCHEMAS:
        raise ValueError(f"operator {name!r} is defined twice")
    schema = OpSchema(name, summary, tuple(types), tuple(required),
                      None if optional is None else tuple(optional), tuple(tflite), tuple(onnx))
    _SCHEMAS[name] = schema
    return schema


def op_schema(name: str) -> OpSchema | None:
    return _SCHEMAS.get(name)


def op_schemas() -> list[OpSchema]:
    return [_SCHEMAS[k] for k in sorted(_SCHEMAS)]


def validate_node(node: Node, inputs: list[Tensor | None]) -> None:
    """Check ``node`` against its schema (nodes of operators without one pass unchecked)."""
    schema = op_schema(node.op)
    if schema is None:
        return
    missing = [a for a in schema.required if a not in node.attrs]
    if missing:
        raise GraphValidationError(f"{node}: missing attribute(s) {', '.join(missing)}")
    known = schema.attrs
    unknown = [] if known is None else sorted(set(node.attrs) - set(known))
    if unknown:
        raise GraphValidationError(f"{node}: unknown attribute(s) {', '.join(unknown)}")
    first = inputs[0] if inputs else None
    if first is not None and first.dtype not in schema.types:
        raise UnsupportedOperatorError(
            f"{node}: {node.op} is not defined for {first.dtype.value} input "
            f"(it takes {', '.join(t.value for t in schema.types)})")

