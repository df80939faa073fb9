"""Decisions to JSON and back: kernel configs and thread schedules as tuning records store them.

A record stores the decision, not the code (design.md), and the decision classes belong to the
host backend (``HostKernelConfig``, ``ThreadSchedule``), so this codec works on any frozen
dataclass made of scalars, enums, tuples and nested dataclasses, guided by the type hints.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from typing import Any, TypeVar

T = TypeVar("T")

JSON = dict[str, Any] | list[Any] | str | int | float | bool | None


def to_json(value: Any) -> Any:
    """Plain JSON data for a dataclass instance (recursively)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild an instance of dataclass ``cls`` from :func:`to_json` output.

    Fields missing from ``data`` take their defaults (records written by an older edgenn);
    unknown keys raise ``ValueError`` (a record from a newer edgenn: not applicable here).
    """
    return typing.cast(T, _decode(cls, data))


def _decode(tp: Any, data: Any) -> Any:
    if tp is Any or data is None:
        return data
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        errors = []
        for arm in typing.get_args(tp):
            if arm is type(None):
                continue
            try:
                return _decode(arm, data)
            except (TypeError, ValueError) as err:
                errors.append(str(err))
        raise ValueError(f"{data!r} fits none of {tp}: {'; '.join(errors)}")
    if origin is typing.Literal:
        return data
    if origin in (tuple, list):
        args = typing.get_args(tp)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in data)
        if origin is tuple and args:
            return tuple(_decode(a, v) for a, v in zip(args, data, strict=True))
        item = args[0] if args else Any
        return origin(_decode(item, v) for v in data)
    if origin is dict:
        kt, vt = typing.get_args(tp) or (Any, Any)
        return {_decode(kt, k): _decode(vt, v) for k, v in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ValueError(f"{tp.__name__}: expected an object, got {data!r}")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{tp.__name__} has no field(s) {', '.join(sorted(unknown))}")
        return tp(**{k: _decode(hints.get(k, Any), v) for k, v in data.items()})
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(data)
    if tp is float and isinstance(data, int | float):
        return float(data)
    if isinstance(tp, type) and not isinstance(data, tp):
        raise TypeError(f"expected {tp.__name__}, got {data!r}")
    return data
