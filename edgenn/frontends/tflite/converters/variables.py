"""Converters of TFLite's resource-variable operators: CALL_ONCE, VAR_HANDLE, READ_VARIABLE,
ASSIGN_VARIABLE. They emit no nodes: they record the graph's state
(``edgenn.frontends.tflite.resources``)."""

from __future__ import annotations

from edgenn.frontends.tflite.builder import Builder
from edgenn.frontends.tflite.reader import RawOperator
from edgenn.frontends.tflite.registry import converter


@converter("CALL_ONCE")
def call_once(b: Builder, op: RawOperator) -> None:
    b.resources.call_once(b, op)


@converter("VAR_HANDLE")
def var_handle(b: Builder, op: RawOperator) -> None:
    b.resources.var_handle(b, op)


@converter("READ_VARIABLE")
def read_variable(b: Builder, op: RawOperator) -> None:
    b.resources.read_variable(b, op)


@converter("ASSIGN_VARIABLE")
def assign_variable(b: Builder, op: RawOperator) -> None:
    b.resources.assign_variable(b, op)
