"""Fixed-point helpers vs plain Python-int references written independently here."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edgenn.arith import fixed_point as fp

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
int32s = st.integers(I32_MIN, I32_MAX)
EXTREMES = [I32_MIN, I32_MIN + 1, -1, 0, 1, I32_MAX - 1, I32_MAX, 1 << 30, -(1 << 30)]


# -- independent references ---------------------------------------------------------------------
def round_half_away(q: Fraction) -> int:
    n = math.floor(abs(q) + Fraction(1, 2))
    return n if q >= 0 else -n


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def srdhm_ref(a: int, b: int) -> int:
    if a == b == I32_MIN:
        return I32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def rdbpot_ref(x: int, e: int) -> int:
    return round_half_away(Fraction(x, 1 << e))


def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def mbqm_ref(x: int, m: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    return rdbpot_ref(srdhm_ref(wrap32(x * (1 << left)), m), right)


def quantize_multiplier_ref(real: float) -> tuple[int, int]:
    if real == 0:
        return 0, 0
    q, shift = Fraction(real), 0
    while abs(q) >= 1:
        q, shift = q / 2, shift + 1
    while abs(q) < Fraction(1, 2):
        q, shift = q * 2, shift - 1
    fixed = round_half_away(q * 2**31)
    if fixed == 2**31:
        fixed, shift = fixed // 2, shift + 1
    if shift < -31:
        return 0, 0
    return fixed, shift


# -- properties ----------------------------------------------------------------------------------
@given(int32s, int32s)
def test_srdhm_scalar(a: int, b: int) -> None:
    assert int(fp.saturating_rounding_doubling_high_mul(a, b)) == srdhm_ref(a, b)


def test_srdhm_extremes_vectorised() -> None:
    pairs = [(a, b) for a in EXTREMES for b in EXTREMES]
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    got = fp.saturating_rounding_doubling_high_mul(a, b)
    assert got.tolist() == [srdhm_ref(x, y) for x, y in pairs]
    assert int(fp.saturating_rounding_doubling_high_mul(I32_MIN, I32_MIN)) == I32_MAX


@given(st.lists(st.tuples(int32s, st.integers(0, 31)), min_size=1, max_size=50))
def test_rounding_divide_by_pot(cases: list[tuple[int, int]]) -> None:
    x = np.array([c[0] for c in cases], np.int64)
    e = np.array([c[1] for c in cases], np.int64)
    assert fp.rounding_divide_by_pot(x, e).tolist() == [rdbpot_ref(a, b) for a, b in cases]


def test_rounding_divide_by_pot_negative_ties() -> None:
    # -5 / 2 = -2.5 -> -3 (away from zero); -6 / 4 = -1.5 -> -2; 5 / 2 -> 3.
    assert int(fp.rounding_divide_by_pot(-5, 1)) == -3
    assert int(fp.rounding_divide_by_pot(-6, 2)) == -2
    assert int(fp.rounding_divide_by_pot(5, 1)) == 3
    assert int(fp.rounding_divide_by_pot(-7, 2)) == -2


@given(
    st.lists(
        st.tuples(int32s, st.integers(1 << 30, I32_MAX), st.integers(-31, 10)),
        min_size=1,
        max_size=50,
    )
)
def test_multiply_by_quantized_multiplier(cases: list[tuple[int, int, int]]) -> None:
    x = np.array([c[0] for c in cases], np.int64)
    m = np.array([c[1] for c in cases], np.int64)
    s = np.array([c[2] for c in cases], np.int64)
    got = fp.multiply_by_quantized_multiplier(x, m, s)
    assert got.tolist() == [mbqm_ref(*c) for c in cases]
    a, b, c = cases[0]
    assert int(fp.multiply_by_quantized_multiplier(a, b, c)) == mbqm_ref(a, b, c)


@given(st.floats(min_value=1e-12, max_value=1e6, allow_nan=False, allow_infinity=False))
def test_quantize_multiplier(real: float) -> None:
    m, s = fp.quantize_multiplier(real)
    assert (m, s) == quantize_multiplier_ref(real)
    if m:
        assert (1 << 30) <= m < (1 << 31)
        assert abs(Fraction(m) * Fraction(2) ** (s - 31) - Fraction(real)) <= Fraction(2) ** (
            s - 32
        )


def test_quantize_multiplier_edges() -> None:
    assert fp.quantize_multiplier(0.0) == (0, 0)
    assert fp.quantize_multiplier(1.0) == (1 << 30, 1)
    assert fp.quantize_multiplier(0.5) == (1 << 30, 0)
    # A mantissa that rounds up to 2^31 is halved and the shift bumped.
    just_below_one = 1.0 - 2.0**-40
    assert fp.quantize_multiplier(just_below_one) == (1 << 30, 1)
    assert fp.quantize_multiplier(2.0**-40) == (0, 0)  # shift < -31 flushes to zero
    mults, shifts = fp.quantize_multipliers(np.array([0.5, 0.25]))
    assert mults.tolist() == [1 << 30, 1 << 30] and shifts.tolist() == [0, -1]


@given(st.integers(-(1 << 31), 0))
@settings(max_examples=300)
def test_exp_on_negative_values(raw: int) -> None:
    got = int(fp.exp_on_negative_values(raw, 5))
    want = math.exp(raw / 2**26)
    assert abs(got / 2**31 - want) < 2e-9 + 1e-6 * want


def test_exp_on_negative_values_vectorised_matches_scalar() -> None:
    raws = np.array([0, -1, -(1 << 24), -(1 << 26), -(1 << 30), I32_MIN, -12345678], np.int64)
    vec = fp.exp_on_negative_values(raws, 5).tolist()
    assert vec == [int(fp.exp_on_negative_values(int(r), 5)) for r in raws]
    assert vec[0] == I32_MAX  # exp(0) saturates to the largest Q0.31


@given(st.integers(0, I32_MAX))
def test_one_over_one_plus_x(raw: int) -> None:
    got = int(fp.one_over_one_plus_x_for_x_in_0_1(raw)) / 2**31
    assert abs(got - 1 / (1 + raw / 2**31)) < 1e-8


@given(st.integers(1, I32_MAX))
def test_get_reciprocal(x: int) -> None:
    scale, bits = fp.get_reciprocal(x, 12)
    assert int(fp.count_leading_zeros32(x)) == 32 - x.bit_length()
    real = int(scale) / 2**31 / 2 ** int(bits)
    assert abs(real * (x / 2**19) - 1) < 1e-8


@given(st.integers(-(1 << 31), I32_MAX), st.integers(-31, 31))
def test_saturating_rounding_multiply_by_pot(x: int, e: int) -> None:
    got = int(fp.saturating_rounding_multiply_by_pot(x, e))
    if e <= 0:
        assert got == rdbpot_ref(x, -e)
    else:
        assert got == max(I32_MIN, min(I32_MAX, x * 2**e))


@given(int32s, int32s)
def test_rounding_half_sum(a: int, b: int) -> None:
    assert int(fp.rounding_half_sum(a, b)) == round_half_away(Fraction(a + b, 2))


@given(st.floats(-1e3, 1e3), st.floats(1e-4, 10.0), st.integers(-128, 127))
def test_quantize_scalar_is_float32_round_half_away(v: float, s: float, zp: int) -> None:
    q = Fraction(float(np.float32(v) / np.float32(s)))
    assert fp.quantize_scalar(v, s, zp) == zp + round_half_away(q)


@given(
    st.lists(
        st.tuples(int32s, st.integers(0, I32_MAX), st.integers(-31, 8)), min_size=1, max_size=40
    )
)
def test_inplace_requantization_matches(cases: list[tuple[int, int, int]]) -> None:
    x = np.array([c[0] for c in cases], np.int64)
    m = np.array([c[1] for c in cases], np.int64)
    s = np.array([c[2] for c in cases], np.int64)
    want = [mbqm_ref(*c) for c in cases]
    assert fp.multiply_by_quantized_multiplier_inplace(x.copy(), m, s).tolist() == want
    # per-channel broadcasting over a trailing axis, as the kernels use it
    grid = np.tile(x[:, None], (1, 3))
    ms, ss = np.array([m[0], 1 << 30, I32_MAX]), np.array([s[0], 0, -5])
    got = fp.multiply_by_quantized_multiplier_inplace(grid.copy(), ms, ss)
    pairs = list(zip(ms.tolist(), ss.tolist(), strict=True))
    assert got.tolist() == [[mbqm_ref(int(v), a, b) for a, b in pairs] for v in x]
