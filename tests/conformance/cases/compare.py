"""Comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL), LOGICAL_AND /
OR / NOT, SELECT_V2 and CAST.

The types are TFLite Micro's: comparisons on float32, int8 (each operand rescaled by its own
scale: different scales and zero points here, with narrow value ranges so that ties occur),
int32 (EQUAL / NOT_EQUAL: bool too); SELECT_V2 on float32, int8, int16; CAST from int8,
int16, int32, float32, bool to int8 / int16 / int32 / float32. TFLM broadcasts comparisons up
to 4-D. Float equality is checked on a constant the inputs can hit: none is likely, so the
EQUAL float cases mostly pin the shapes; int32 and int8 cases carry the ties.
"""

from __future__ import annotations

import numpy as np

from edgenn.ir import DType, QuantParams
from tests.conformance.spec import Case, Spec, const, f32, i8, i16

I32, BOOL = DType.INT32, DType.BOOL
_OPS = ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
_OPTIONS = {"EQUAL": "EqualOptions", "NOT_EQUAL": "NotEqualOptions", "LESS": "LessOptions",
            "LESS_EQUAL": "LessEqualOptions", "GREATER": "GreaterOptions",
            "GREATER_EQUAL": "GreaterEqualOptions"}


def _out(a: Spec, b: Spec) -> Spec:
    return Spec(tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape)), BOOL)


def _cmp(op: str, name: str, a: Spec, b: Spec) -> Case:
    return Case(op, name, (a, b), (_out(a, b),), (_OPTIONS[op], {}))


def _int32(shape: tuple[int, ...], lo: int = -3, hi: int = 3) -> Spec:
    return Spec(shape, I32, values=(lo, hi))


def _i8_const(data: list, scale: float, zp: int) -> Spec:
    return const(data, DType.INT8, QuantParams.per_tensor(scale, zp))


_COMPARE: list[Case] = []
for _op in _OPS:
    _COMPARE += [
        _cmp(_op, "float_same_shape", f32((1, 4, 6)), f32((1, 4, 6))),
        # the openWakeWord classifier's shape: a [1, 1] score against a scalar threshold
        _cmp(_op, "float_scalar_const", f32((1, 1)), const(np.float32(0.5))),
        _cmp(_op, "float_broadcast_const", f32((1, 3, 5)),
             const(np.linspace(-2, 2, 5).astype(np.float32))),
        _cmp(_op, "int32_same_shape", _int32((1, 5, 4)), _int32((1, 5, 4))),
        _cmp(_op, "int32_broadcast", _int32((1, 2, 3, 4)), _int32((1, 1, 3, 1))),
        # different scales and zero points: the rescaled values tie at real-value ties
        _cmp(_op, "int8_rescaled", i8((1, 4, 8), 0.1, -3, values=(-13, 7)),
             i8((1, 4, 8), 0.05, 4, values=(-16, 24))),
        # close scales: values 1/256 of a scale apart tie in TFLM's fixed point
        _cmp(_op, "int8_close_scales", i8((1, 8, 16), 0.01, 0), i8((1, 8, 16), 0.0103, -1)),
        _cmp(_op, "int8_same_quant", i8((1, 6, 5), 0.02, 1, values=(-4, 6)),
             i8((1, 6, 5), 0.02, 1, values=(-4, 6))),
        _cmp(_op, "int8_broadcast_const", i8((1, 3, 4), 0.07, 2, values=(-20, 20)),
             _i8_const([-8, 2, 9, 16], 0.035, 2)),
    ]
for _op in ("EQUAL", "NOT_EQUAL"):
    _COMPARE.append(_cmp(_op, "bool_broadcast", Spec((1, 3, 4), BOOL), Spec((1, 1, 4), BOOL)))


def _logical(op: str, name: str, a: Spec, b: Spec) -> Case:
    return Case(op, name, (a, b), (_out(a, b),))


_LOGICAL = [
    _logical("LOGICAL_AND", "same_shape", Spec((1, 4, 5), BOOL), Spec((1, 4, 5), BOOL)),
    _logical("LOGICAL_AND", "broadcast", Spec((1, 3, 4), BOOL), Spec((1, 3, 1), BOOL)),
    _logical("LOGICAL_OR", "same_shape", Spec((1, 4, 5), BOOL), Spec((1, 4, 5), BOOL)),
    _logical("LOGICAL_OR", "broadcast_const", Spec((1, 2, 3), BOOL),
             const(np.array([True, False, False]), BOOL)),
    Case("LOGICAL_NOT", "rank3", (Spec((1, 3, 7), BOOL),), (Spec((1, 3, 7), BOOL),)),
]


def _select(name: str, cond: Spec, x: Spec, y: Spec, out: Spec) -> Case:
    return Case("SELECT_V2", name, (cond, x, y), (out,), ("SelectV2Options", {}))


_SELECT = [
    _select("float_same_shape", Spec((1, 4, 5), BOOL), f32((1, 4, 5)), f32((1, 4, 5)),
            f32((1, 4, 5))),
    _select("float_broadcast_cond", Spec((1, 1, 5), BOOL), f32((1, 3, 5)), f32((1, 3, 5)),
            f32((1, 3, 5))),
    _select("int8_broadcast_const", Spec((1, 2, 4), BOOL), i8((1, 2, 4), 0.05, 3),
            _i8_const([-100, -1, 0, 90], 0.05, 3), i8((1, 2, 4), 0.05, 3)),
    _select("int16_same_shape", Spec((1, 3, 6), BOOL), i16((1, 3, 6), 0.001),
            i16((1, 3, 6), 0.001), i16((1, 3, 6), 0.001)),
]


def _cast(name: str, x: Spec, to: DType | Spec) -> Case:
    out = to if isinstance(to, Spec) else Spec(x.shape, to)
    return Case("CAST", name, (x,), (out,))


_CAST = [
    _cast("float_to_int32", f32((1, 4, 6), values=(-300.0, 300.0)), I32),
    _cast("int32_to_float", Spec((1, 5, 3), I32, values=(-100000, 100000)), DType.FLOAT32),
    _cast("bool_to_float", Spec((1, 2, 7), BOOL), DType.FLOAT32),
    _cast("bool_to_int32", Spec((1, 9), BOOL), I32),
    # int8 / int16 tensors carry a quantization (CAST ignores it; the exporter needs it)
    _cast("int16_to_int32", i16((1, 3, 4), 0.01), I32),
    _cast("int8_to_float", i8((1, 10), 0.1, 3), DType.FLOAT32),
    _cast("int32_to_int16_wraps", Spec((1, 6), I32, values=(-70000, 70000)),
          i16((1, 6), 1.0)),
]

CASES = _COMPARE + _LOGICAL + _SELECT + _CAST
