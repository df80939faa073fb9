"""The table of TFLite operator converters, keyed by builtin operator code, and the helpers
converters share.

A converter reads the raw operator (inputs, outputs, decoded options) and appends IR nodes
to the ``Builder``; the builder checks every node's inferred output against the shape and
type the file declares. Converters live in ``converters/``, one module per group; they
import this table, never the other way round (the loader imports them all).
"""

from __future__ import annotations

from collections.abc import Callable

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.ir.tflite_enums import OP, PADDINGS

Converter = Callable[[Builder, RawOperator], None]
CONVERTERS: dict[int, Converter] = {}


def converter(*codes: int | str) -> Callable[[Converter], Converter]:
    """Register ``fn(builder, op)`` for builtin codes (``OP.CONV_2D``, the ``tflite`` package's
    enum, or a name such as ``"LEAKY_RELU"``)."""

    def deco(fn: Converter) -> Converter:
        for code in codes:
            key = getattr(OP, code) if isinstance(code, str) else code
            CONVERTERS[int(key)] = fn
        return fn

    return deco


def output_name(b: Builder, op: RawOperator, slot: int = 0) -> str:
    """The IR name of output ``slot`` (one error when the file omits it)."""
    raw = b.raw_tensor(op, slot, "output")
    if raw is None:
        raise b.fail(op, f"output {slot} is missing")
    return b.tensor(raw.index).name


def optional_input_name(b: Builder, op: RawOperator, slot: int) -> str:
    """The IR name of input ``slot``, or "" when the file omits it (-1 or an empty tensor)."""
    raw = b.raw_tensor(op, slot)
    return "" if raw is None else b.tensor(raw.index).name


def need_options(b: Builder, op: RawOperator, *keys: str) -> None:
    if any(k not in op.options for k in keys):
        raise b.fail(op, "operator options are missing")


def same_padding(b: Builder, op: RawOperator) -> bool:
    """The ``padding`` option as ``edgenn.ir.padding``'s ``same`` flag (SAME: True, VALID:
    False); one error for a code ``tflite.Padding`` does not have."""
    code = int(op.options["padding"])
    if code not in PADDINGS:
        raise b.fail(op, f"unknown padding type {code}")
    return PADDINGS[code]
