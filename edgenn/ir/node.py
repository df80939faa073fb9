"""IR nodes: an operator applied to named input tensors, producing named output tensors."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, NoReturn


class Activation(Enum):
    """A fused activation applied by the producing layer (TFLite's fused_activation_function)."""

    NONE = "none"
    RELU = "relu"
    RELU6 = "relu6"
    RELU_N1_TO_1 = "relu_n1_to_1"


def _frozen_value(value: Any) -> Any:
    """``value`` with its lists made tuples, recursively (the IR never mutates an attribute)."""
    if isinstance(value, (list, tuple)):
        frozen = tuple(_frozen_value(v) for v in value)
        # why keep a tuple subclass (e.g. a NamedTuple) as it is: its type carries meaning
        return frozen if type(value) in (list, tuple) else value
    if isinstance(value, dict) and not isinstance(value, FrozenAttrs):
        return FrozenAttrs({k: _frozen_value(v) for k, v in value.items()})
    return value


class FrozenAttrs(dict[str, Any]):
    """A read-only ``dict`` of node attributes.

    Why a ``dict`` subclass rather than ``types.MappingProxyType``: attributes are serialised
    (JSON manifests, tuning records), pickled (worker processes) and deep-copied, which a
    mapping proxy refuses. Every mutating method raises ``TypeError``; change a node's
    attributes by building a new node (``Node.with_attrs``).
    """

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("node attributes are read-only: build a new Node (Node.with_attrs)")

    __setitem__ = _read_only
    __delitem__ = _read_only
    __ior__ = _read_only
    clear = _read_only
    pop = _read_only
    popitem = _read_only
    setdefault = _read_only
    update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        # why: the default dict-subclass pickling refills the dict through __setitem__
        return (FrozenAttrs, (dict(self),))

    def __copy__(self) -> FrozenAttrs:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenAttrs:
        return FrozenAttrs({k: copy.deepcopy(v, memo) for k, v in self.items()})

    def __repr__(self) -> str:
        return f"FrozenAttrs({dict.__repr__(self)})"


@dataclass(frozen=True)
class Node:
    """One operator instance.

    ``op`` is the edgenn operator name: its schema is in ``edgenn.ir.schema`` and its
    definition (attributes, shape inference) in ``edgenn/ir/opdefs/``. ``attrs`` are its
    attributes, read-only (a ``FrozenAttrs``; list values are stored as tuples).
    An empty string in ``inputs`` marks an omitted optional input (e.g. no bias).
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if not isinstance(self.attrs, FrozenAttrs):
            object.__setattr__(self, "attrs", _frozen_value(dict(self.attrs)))

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def with_(self, **changes: Any) -> Node:
        return replace(self, **changes)

    def with_attrs(self, **attrs: Any) -> Node:
        return replace(self, attrs={**self.attrs, **attrs})

    def __str__(self) -> str:
        return f"{self.op} node {self.name!r}"
