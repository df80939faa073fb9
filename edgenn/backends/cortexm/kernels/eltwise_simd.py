"""Fast int8 Add / Mul for DSP cores: per-input lookup tables, exactness proven exhaustively.

The C side is ``c/edgenn_eltwise_s8_dsp.c`` / ``.h``. TFLite's int8 ADD rescales each input alone,
``MultiplyByQuantizedMultiplierSmallerThanOneExp((x - zp) << 20, m, shift)``, before the sum,
so for an int8 input the rescaled value is one of 256 numbers: they are computed here with the
reference runtime's own fixed-point functions and stored as 256-entry int32 tables (1 KiB per
input, in flash), indexed by the input byte as uint8. Per element only the requantization of
``tab_a[a] + tab_b[b]`` remains, and the output depends only on the input pair, so each
candidate fast form is checked against the reference runtime on all 65,536 pairs before it is
chosen (:func:`add_plan`), from the cheapest:

* mode 2: tables pre-scaled by the output multiplier (``K`` fractional bits, the output zero
  point and TFLite's rounding offsets folded into ``tab_a``), ``out = SSAT((ta + tb) ASR K)``:
  one ADD and one SSAT per element, in a function generated per layer (``K`` is an immediate).
  When the closed-form tables miss, :func:`separable_tables` solves for any tables that work.
  8 elements per iteration of hand-scheduled assembly (about 8.3 cycles per element);
* mode 1 (output shift a right shift): tables doubled, one SMMULR, the rounding shift with
  ties away from zero, SSAT;
* mode 0: TFLite's full MultiplyByQuantizedMultiplier of the sum (always exact).

When one input is a single value (a scalar or a size-1 constant), the output is a function of
the other byte alone: a 256-byte output table built by running the reference layer on all 256
values (Add and Mul). Mul of two tensors (:func:`mul_plan`, also checked on all pairs): mode 2
tables hold ``(a - a_zp) << (left + 1)`` and ``b - b_zp``, so one MUL gives the exact shifted
product and one SMMLAR with TFLite's multiplier, a sign correction and SSAT give the output
(TFLite's two roundings fused, see ``ews_mul_one``; about 11 cycles per element); mode 1 is
the SMMULR form in C, mode 0 TFLite's arithmetic per element.
Broadcasting handled: both inputs full, one input a single value, or one input repeating over
the leading axes (its shape is a suffix of the output's, e.g. per-channel ``[C]``); ``matches``
refuses anything else (the portable kernel takes it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgenn.arith.fixed_point import multiply_by_quantized_multiplier
from edgenn.backends.cortexm.ccall import OUT0, Arg, Array, Buf, c_call, generated
from edgenn.backends.cortexm.kernel import CArray, KernelCall, register_kernel
from edgenn.backends.cortexm.kernels.common import i32, is_int8, padded
from edgenn.backends.cortexm.targets import Core
from edgenn.ir import DType, Graph, Node
from edgenn.prepared.binary import ADD_LEFT_SHIFT, BinaryParams, prepare_binary
from edgenn.prepared.binary_eval import binary_int

INT32_LIMIT = 2**31
# the 256 int8 values in table order: index u holds the value whose byte reads u as uint8
BYTES = np.arange(256, dtype=np.int64)
VALUES = np.where(BYTES < 128, BYTES, BYTES - 256)


# -- broadcasting layout ---------------------------------------------------------------------
def _layout(node: Node, graph: Graph) -> tuple[str, int] | None:
    """How the two inputs line up with the output, or None when not handled here.

    ("full", n): same size; ("scalar_a"/"scalar_b", n): that input is a single value;
    ("period_a"/"period_b", p): that input repeats every p elements (a suffix of the output
    shape, broadcast over the leading axes).
    """
    out = graph.tensor(node.outputs[0]).shape
    n = int(np.prod(out)) if out else 1
    kinds = []
    for name in node.inputs[:2]:
        t = graph.tensor(name)
        shape = padded(t.shape, len(out)) if len(t.shape) <= len(out) else None
        if shape is None or t.dtype is not DType.INT8:
            return None
        size = int(np.prod(shape)) if shape else 1
        if size == n:
            if list(shape) != list(out):
                return None
            kinds.append(("full", n))
        elif size == 1:
            kinds.append(("scalar", 1))
        else:
            # a dense suffix: leading dims 1, the rest equal to the output's
            k = next(i for i, d in enumerate(shape) if d != 1)
            if any(d != 1 for d in shape[:k]) or list(shape[k:]) != list(out[k:]):
                return None
            kinds.append(("period", size))
    (ka, pa), (kb, pb) = kinds
    if ka == "full" and kb == "full":
        return "full", n
    if kb == "scalar":
        return ("scalar_b", n) if ka != "scalar" or n == 1 else None
    if ka == "scalar":
        return ("scalar_a", n) if kb == "full" else None
    if ka == "full" and kb == "period":
        return "period_b", pb
    if kb == "full" and ka == "period":
        return "period_a", pa
    return None


def _scalar_value(node: Node, graph: Graph, index: int) -> int | None:
    """The int8 value of a constant single-value input, or None if it is computed."""
    t = graph.tensor(node.inputs[index])
    if not t.is_const or t.data is None:
        return None
    return int(np.asarray(t.data).ravel()[0])


# -- exhaustive reference and the Add plans ------------------------------------------------------
def _reference_grid(layer: BinaryParams) -> np.ndarray:
    """int64 [256, 256]: the reference output for a = VALUES[i], b = VALUES[j]."""
    return binary_int(layer, VALUES[:, None], VALUES[None, :])


def _rescaled(values: np.ndarray, zp: int, mult: int, shift: int) -> np.ndarray:
    """TFLite's per-input step of int8 ADD: mbqm((x - zp) << 20, mult, shift)."""
    return np.asarray(multiply_by_quantized_multiplier(
        (values - zp) << ADD_LEFT_SHIFT, mult, shift), np.int64)


def _fits(ta: np.ndarray, tb: np.ndarray) -> bool:
    return bool(np.abs(ta).max() + np.abs(tb).max() < INT32_LIMIT)


def _act(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.clip(v, -128, 127), lo, hi)


def separable_tables(want: np.ndarray, k: int, lo: int, hi: int
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """int32 tables with act(SSAT((ta[i] + tb[j]) >> k)) == want[i, j] for all pairs, or None.

    why: when the closed-form tables of mode 2 miss (TFLite's tie rule differs for negative
    and positive intermediate values, and the table floors add up), such tables may still
    exist. The conditions ``L[i,j] <= ta[i] + tb[j] <= U[i,j]`` are difference constraints
    (between ta[i] and -tb[j]); Bellman-Ford relaxation from 0 finds a solution if and only if
    one exists (no negative cycle), in at most 512 rounds. Outputs clamped to lo / hi only
    bound one side; every sum is kept inside int32.
    """
    big = 1 << 40
    w = want.astype(np.int64)
    low = np.maximum(np.where(w <= lo, -big, w << k), -INT32_LIMIT)
    high = np.minimum(np.where(w >= hi, big, ((w + 1) << k) - 1), INT32_LIMIT - 1)
    x = np.zeros(256, np.int64)  # ta
    y = np.zeros(256, np.int64)  # -tb
    for _ in range(2 * 256 + 1):
        nx = np.minimum(x, (y[None, :] + high).min(axis=1))
        ny = np.minimum(y, (nx[:, None] - low).min(axis=0))
        if np.array_equal(nx, x) and np.array_equal(ny, y):
            ta, tb = x, -y
            shift = -((int(ta.max()) + int(ta.min())) // 2)  # centre ta; sums unchanged
            ta, tb = ta + shift, tb - shift
            if max(np.abs(ta).max(), np.abs(tb).max()) >= INT32_LIMIT:
                return None
            if not np.array_equal(_act((ta[:, None] + tb[None, :]) >> k, lo, hi), want):
                return None
            return ta, tb
        x, y = nx, ny
    return None  # a negative cycle: no such tables


_PLANS: dict[tuple[int, ...], tuple[int, dict[str, Any]]] = {}


def _add_plan(layer: BinaryParams, params: tuple[int, ...],
              max_mode: int) -> tuple[int, dict[str, Any]]:
    zp_a, m_a, sh_a, zp_b, m_b, sh_b, m_out, sh_out, zp_out, lo, hi = params
    # the ground truth: the reference layer's own arithmetic on all 65,536 input pairs
    want = _reference_grid(layer)
    sa = _rescaled(VALUES, zp_a, m_a, sh_a)
    sb = _rescaled(VALUES, zp_b, m_b, sh_b)
    r = -sh_out
    # mode 2: out = floor((s * m + c) / 2^(31 + r)) with c = 2^30 + 2^(30 + r) + zp << (31 + r)
    # (TFLite's two roundings collapse into one floor for h >= 0; delta = 1 is the h < 0 form),
    # computed in K fractional bits; the tables' floor errors and the sign-dependent tie are
    # why every pair is checked.
    # (31 + r + 9 < 63: the numerator stays inside int64)
    if 1 <= r <= 22 and max_mode >= 2:
        for k in range(30, 0, -1):
            d = 31 + r - k
            if d < 0:
                continue
            for delta in (0, 1):
                c = (1 << 30) + (1 << (30 + r)) + (zp_out << (31 + r)) - delta * (1 << 31)
                ta = (sa * m_out + c) >> d
                tb = (sb * m_out) >> d
                if not _fits(ta, tb):
                    continue
                got = _act((ta[:, None] + tb[None, :]) >> k, lo, hi)
                if np.array_equal(got, want):
                    return 2, {"ta": ta, "tb": tb, "k": k}
    if max_mode >= 2:
        for k in (23, 20, 16):
            found = separable_tables(want, k, lo, hi)
            if found is not None:
                return 2, {"ta": found[0], "tb": found[1], "k": k}
    # mode 1: SaturatingRoundingDoublingHighMul(s, m) = SMMULR(2 s, m) (doubled tables), then
    # the rounding shift r >= 1
    if r >= 1 and max_mode >= 1:
        ta, tb = 2 * sa, 2 * sb
        rs = r
        if _fits(ta, tb):
            half = (1 << (rs - 1)) + (zp_out << rs)
            t = ta[:, None] + tb[None, :]
            high = (t * m_out + (1 << 31)) >> 32
            if abs(half) < 2**30 and np.array_equal(
                    _act((high + half + (high >> 31)) >> rs, lo, hi), want):
                return 1, {"ta": ta, "tb": tb, "mult": m_out, "rshift": rs, "half": half}
    # mode 0: exact requantization of the table sum (checked too: int32 range of the sum)
    if _fits(sa, sb):
        s = sa[:, None] + sb[None, :]
        got = _act(np.asarray(multiply_by_quantized_multiplier(s, m_out, sh_out)) + zp_out,
                   lo, hi)
        if np.array_equal(got, want):
            return 0, {"ta": sa, "tb": sb}
    return -1, {}


def _add_params(layer: BinaryParams) -> tuple[int, ...]:
    return tuple(int(v) for v in (layer.a_zp, layer.a_mult, layer.a_shift, layer.b_zp, layer.b_mult,
                                  layer.b_shift, layer.out_mult, layer.out_shift, layer.out_zp,
                                  layer.act_min, layer.act_max))


def add_plan(layer: BinaryParams, max_mode: int = 2) -> tuple[int, dict[str, Any]]:
    """(mode, tables and constants) for an Add layer; mode -1 when nothing was proven.

    ``max_mode`` limits the forms tried (tests use it to exercise the slower forms).
    """
    params = _add_params(layer)
    key = (*params, max_mode)
    if key not in _PLANS:  # matches and prepare both ask; the check costs a few ms
        _PLANS[key] = _add_plan(layer, params, max_mode)
    return _PLANS[key]


def _mul_plan(layer: BinaryParams, max_mode: int) -> tuple[int, dict[str, Any]]:
    want = _reference_grid(layer)
    m, sh, zp_out, lo, hi = (int(layer.mult), int(layer.shift), int(layer.out_zp),
                             int(layer.act_min), int(layer.act_max))
    left, r = max(sh, 0), max(-sh, 0)
    da = VALUES - layer.a_zp
    db = VALUES - layer.b_zp
    # mode 2 (see ews_mul_one in edgenn_eltwise_s8_dsp.h): SMMLAR(p << (left + 1), m, c) - (p < 0),
    # then >> r; the mirror below is checked against the reference on every input pair
    if max_mode >= 2 and m > 0 and r >= 1 and 65280 << (left + 1) < INT32_LIMIT:
        cc = (1 << (r - 1)) + (zp_out << r)
        pp = (da[:, None] * db[None, :]) << (left + 1)
        h = (pp * m + (cc << 32) + (1 << 31)) >> 32
        if abs(cc) < 2**30 and np.array_equal(
                _act((h + np.where(pp < 0, -1, 0)) >> r, lo, hi), want):
            return 2, {"ta": da << (left + 1), "tb": db, "m": m, "c": cc, "k": r}
    # mode 1: SRDHM(p << left, m) = SMMULR(p << (left + 1), m) while |p| << (left + 1) < 2^31
    if max_mode >= 1 and r >= 1 and 65280 << (left + 1) < INT32_LIMIT:
        p = (VALUES[:, None] - layer.a_zp) * (VALUES[None, :] - layer.b_zp)
        high = ((p << (left + 1)) * m + (1 << 31)) >> 32
        half = (1 << (r - 1)) + (zp_out << r)
        if abs(half) < 2**30 and np.array_equal(
                _act((high + half + (high >> 31)) >> r, lo, hi), want):
            return 1, {"left1": left + 1, "mult": m, "rshift": r, "half": half}
    return 0, {}


def mul_plan(layer: BinaryParams, max_mode: int = 2) -> tuple[int, dict[str, Any]]:
    """(mode, tables and constants) for a Mul layer (mode 0: the exact generic loop)."""
    key = ("Mul", int(layer.a_zp), int(layer.b_zp), int(layer.mult), int(layer.shift),
           int(layer.out_zp), int(layer.act_min), int(layer.act_max), max_mode)
    if key not in _MUL_PLANS:
        _MUL_PLANS[key] = _mul_plan(layer, max_mode)
    return _MUL_PLANS[key]


_MUL_PLANS: dict[tuple[object, ...], tuple[int, dict[str, Any]]] = {}


def _mode2_call(mul: int, layer: BinaryParams, arrays: list[CArray], ta: np.ndarray, tb: np.ndarray,
                mc: tuple[int, int], k: int, pa: Arg, pb: Arg, n: int, period: int, name: str,
                comment: str) -> KernelCall:
    """The per-layer function of mode 2 (Add: mul = 0, Mul: mul = 1) and its call."""
    act = int(layer.act_min > -128 or layer.act_max < 127)
    if act:  # lo and hi in every byte, after the a-table (see edgenn_eltwise_s8_dsp.h)
        ta = np.concatenate([ta, [0x01010101 * (int(layer.act_min) & 0xFF),
                                  0x01010101 * (int(layer.act_max) & 0xFF)]])
    arrays = [*arrays, CArray("ta", "int32_t", i32(ta)), CArray("tb", "int32_t", i32(tb))]
    code = (
        "static void @P@_bin(const int8_t *a, const int8_t *b, int8_t *o)\n{\n"
        f"    for (int32_t i = 0; i < {n}; i += {period}) {{\n"
        f"        EWS_BIN2_BODY({mul}, a + i, b, o + i, {period}, @P@_ta, @P@_tb, {mc[0]}, "
        f"{mc[1]}, {k}, "
        f"{act}, {layer.act_min}, {layer.act_max});\n"
        "    }\n}\n")
    return KernelCall(generated("bin", name, pa, pb, OUT0), ("edgenn_eltwise_s8_dsp.h",),
                      tuple(arrays), comment=comment, code=code)


def scalar_lut(layer: BinaryParams, scalar_index: int, value: int) -> np.ndarray:
    """int8 [256]: the reference output for each byte of the other input (as uint8 index)."""
    fixed = np.full(256, value, np.int64)
    a, b = (fixed, VALUES) if scalar_index == 0 else (VALUES, fixed)
    return binary_int(layer, a, b).astype(np.int8)


# -- the kernel ---------------------------------------------------------------------------------
def _operand(node: Node, graph: Graph, index: int, arrays: list[CArray]) -> Arg:
    t = graph.tensor(node.inputs[index])
    if not t.is_const:
        return Buf("in", index)
    assert t.data is not None
    arrays.append(CArray(f"k{index}", "int8_t", np.asarray(t.data).ravel()))
    return Array(f"k{index}")


_TABLES = (Array("ta"), Array("tb"))  # the Add's per-operand tables


class EltwiseSimd:
    """int8 Add / Mul with lookup tables (cores with the DSP extension)."""

    priority = 30

    def __init__(self, op: str) -> None:
        self.op = op
        self.name = f"edgenn_{op.lower()}_s8_dsp"

    def matches(self, node: Node, graph: Graph, core: Core) -> bool:
        if not core.has_dsp or not is_int8(node, graph) or len(node.inputs) != 2:
            return False
        lay = _layout(node, graph)
        if lay is None:
            return False
        kind = lay[0]
        if kind.startswith("scalar"):
            # a computed single value would need the table built at run time
            return _scalar_value(node, graph, 0 if kind == "scalar_a" else 1) is not None
        if self.op == "Add":
            return add_plan(prepare_binary(node, graph))[0] >= 0
        return True  # Mul: mode 0 is TFLite's arithmetic itself

    def prepare(self, node: Node, graph: Graph, core: Core) -> KernelCall:
        layer = prepare_binary(node, graph)
        kind, size = _layout(node, graph)  # type: ignore[misc]
        n = graph.tensor(node.outputs[0]).size
        arrays: list[CArray] = []
        if kind.startswith("scalar"):
            si = 0 if kind == "scalar_a" else 1
            value = _scalar_value(node, graph, si)
            assert value is not None
            lut = scalar_lut(layer, si, value)
            x = _operand(node, graph, 1 - si, arrays)
            arrays.append(CArray("lut", "int8_t", lut))
            return KernelCall(c_call("edgenn_lut_s8_dsp", x, OUT0, n, Array("lut")),
                              ("edgenn_eltwise_s8_dsp.c",),
                              tuple(arrays),
                              comment=f"{self.op} with a constant {value}: 256-byte table")
        # the input that repeats goes second (both ops are commutative in TFLite's arithmetic,
        # the tables / zero points are swapped with it)
        swap = kind == "period_a"
        ia, ib = (1, 0) if swap else (0, 1)
        pa = _operand(node, graph, ia, arrays)
        pb = _operand(node, graph, ib, arrays)
        period = size if kind.startswith("period") else n
        if self.op == "Mul":
            return self._mul(layer, arrays, pa, pb, n, period, swap)
        mode, plan = add_plan(layer)
        ta, tb = (plan["tb"], plan["ta"]) if swap else (plan["ta"], plan["tb"])
        comment = f"Add of {n} elements (period {period}), mode {mode}"
        if mode == 2:
            return _mode2_call(0, layer, arrays, ta, tb, (0, 0), plan["k"], pa, pb, n, period,
                               "edgenn_add_s8_gen_dsp", comment)
        arrays += [CArray("ta", "int32_t", ta), CArray("tb", "int32_t", tb)]
        if mode == 1:
            call = c_call("edgenn_add_s8_dsp_smmulr", pa, pb, OUT0, n, period, *_TABLES,
                          plan["mult"], plan["rshift"], plan["half"], layer.act_min,
                          layer.act_max)
            return KernelCall(call, ("edgenn_eltwise_s8_dsp.c",), tuple(arrays),
                              comment=comment)
        call = c_call("edgenn_add_s8_dsp", pa, pb, OUT0, n, period, *_TABLES, layer.out_mult,
                      layer.out_shift, layer.out_zp, layer.act_min, layer.act_max)
        return KernelCall(call, ("edgenn_eltwise_s8_dsp.c",), tuple(arrays),
                          comment=comment)

    def _mul(self, layer: BinaryParams, arrays: list[CArray], pa: Arg, pb: Arg, n: int, period: int,
             swap: bool) -> KernelCall:
        za, zb = (layer.b_zp, layer.a_zp) if swap else (layer.a_zp, layer.b_zp)
        mode, plan = mul_plan(layer)
        comment = f"Mul of {n} elements (period {period}), mode {mode}"
        if mode == 2:
            # the tables follow their operands (the product is symmetric)
            ta, tb = (plan["tb"], plan["ta"]) if swap else (plan["ta"], plan["tb"])
            return _mode2_call(1, layer, arrays, ta, tb, (plan["m"], plan["c"]), plan["k"], pa,
                               pb, n, period, "edgenn_mul_s8_gen_dsp", comment)
        if mode == 1:
            call = c_call("edgenn_mul_s8_dsp_smmulr", pa, pb, OUT0, n, period, za, zb,
                          plan["left1"], plan["mult"], plan["rshift"], plan["half"],
                          layer.act_min, layer.act_max)
            return KernelCall(call, ("edgenn_eltwise_s8_dsp.c",), tuple(arrays),
                              comment=comment)
        call = c_call("edgenn_mul_s8_dsp", pa, pb, OUT0, n, period, za, zb, layer.mult,
                      layer.shift, layer.out_zp, layer.act_min, layer.act_max)
        return KernelCall(call, ("edgenn_eltwise_s8_dsp.c",), tuple(arrays),
                          comment=comment)


register_kernel(EltwiseSimd("Add"))
register_kernel(EltwiseSimd("Mul"))
