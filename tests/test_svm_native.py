"""The device's C SMO compiled for the host (edgenn.svm.native) against the numpy solver.

The float64 build follows the same algorithm as ``edgenn.svm.smo`` operation for
operation, so on the same problem it makes the same choices: alphas, w and b agree to
rounding (1e-6 relative is the acceptance bar; in practice ~1e-15). The float32 build is the
firmware's arithmetic; it stops at a point within the same tolerance of the optimum, so its w
is compared at a tight tol. The one-vs-one layer (buffer, carry policies, vote) is compared
with the Python layer of the reference runtime (edgenn.svm.buffer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_digits

from edgenn.svm import SMOClassifier, SvmDataError, SvmParameterError, solve_binary
from edgenn.svm.buffer import TrainingBuffer
from edgenn.svm.errors import BufferFullError
from edgenn.svm.native import (
    NativeSvmLayer,
    available,
    predict_native,
    solve_binary_native,
    train_ovo_native,
)
from edgenn.svm.ovo import ovr_decision, vote_predict

pytestmark = pytest.mark.skipif(not available(), reason="no host C compiler")

CLASSES = list(range(10))


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    d = load_digits()
    idx = np.random.default_rng(2).permutation(len(d.data))
    return (d.data[idx] / 16.0).astype(np.float32), d.target[idx]


def binary(digits: tuple[np.ndarray, np.ndarray], a: int, c: int, n: int
           ) -> tuple[np.ndarray, np.ndarray]:
    x, y = digits
    keep = (y == a) | (y == c)
    return x[keep][:n].astype(np.float64), np.where(y[keep][:n] == a, 1, -1)


def assert_same_solution(ref: object, got: object, rel: float = 1e-6) -> None:
    for name in ("alpha", "w"):
        r, g = getattr(ref, name), getattr(got, name)
        scale = max(1.0, float(np.abs(r).max()))
        np.testing.assert_allclose(g, r, rtol=0, atol=rel * scale, err_msg=name)
    assert got.b == pytest.approx(ref.b, rel=rel, abs=rel)  # type: ignore[attr-defined]
    assert got.objective == pytest.approx(ref.objective, rel=rel)  # type: ignore[attr-defined]
    assert got.iterations == ref.iterations  # type: ignore[attr-defined]
    assert got.converged == ref.converged  # type: ignore[attr-defined]


# ------------------------------------------------------------------------ binary problems
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
@pytest.mark.parametrize("pair", [(3, 8), (1, 7), (4, 9)])
def test_float64_build_matches_numpy_solver(digits: tuple[np.ndarray, np.ndarray],
                                            C: float, pair: tuple[int, int]) -> None:
    x, y = binary(digits, *pair, 160)
    assert_same_solution(solve_binary(x, y, C), solve_binary_native(x, y, C))


def test_kernel_paths_agree(digits: tuple[np.ndarray, np.ndarray]) -> None:
    """BLAS Gram (zero copy), a float32 Gram, and C dot products with a 3-row LRU cache."""
    x, y = binary(digits, 5, 6, 120)
    ref = solve_binary(x, y, 1.0)
    assert_same_solution(ref, solve_binary_native(x, y, 1.0, gram=x @ x.T))
    assert_same_solution(ref, solve_binary_native(x, y, 1.0, max_gram_bytes=0,
                                                  cache_bytes=3 * 8 * len(y)))
    g32 = (x @ x.T).astype(np.float32)
    assert_same_solution(solve_binary(x, y, 1.0, gram=g32.astype(np.float64)),
                         solve_binary_native(x, y, 1.0, gram=g32))


def test_warm_start_matches_numpy(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = binary(digits, 2, 3, 150)
    first = solve_binary(x[:100], y[:100], 0.5)
    alpha0 = np.zeros(len(y))
    alpha0[:100] = first.alpha  # feasible: y.alpha0 = 0
    ref = solve_binary(x, y, 0.5, alpha0=alpha0)
    got = solve_binary_native(x, y, 0.5, alpha0=alpha0)
    assert_same_solution(ref, got)
    assert got.iterations < solve_binary_native(x, y, 0.5).iterations


def test_max_iter_reports_not_converged(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = binary(digits, 3, 5, 100)
    ref, got = solve_binary(x, y, 10.0, max_iter=7), solve_binary_native(x, y, 10.0, max_iter=7)
    assert not got.converged and got.iterations == 7
    assert_same_solution(ref, got)


def test_float32_build_is_close(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = binary(digits, 3, 8, 200)
    ref = solve_binary(x, y, 1.0, tol=1e-5)
    got = solve_binary_native(x, y, 1.0, tol=1e-5, precision="float32")
    assert np.abs(got.w - ref.w).max() < 1e-4
    assert got.b == pytest.approx(ref.b, abs=1e-4)
    assert got.objective == pytest.approx(ref.objective, rel=1e-5)


def test_errors_name_the_problem(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = binary(digits, 0, 1, 40)
    bad = x.copy()
    bad[3, 7] = np.nan
    with pytest.raises(SvmDataError, match=r"X\[3, 7\] is nan"):
        solve_binary_native(bad, y, 1.0)
    with pytest.raises(SvmDataError, match="both labels"):
        solve_binary_native(x, np.ones(len(y)), 1.0)
    with pytest.raises(SvmParameterError, match="C must be a positive"):
        solve_binary_native(x, y, 0.0)
    with pytest.raises(SvmDataError, match="gram has shape"):
        solve_binary_native(x, y, 1.0, gram=np.eye(3))
    with pytest.raises(SvmParameterError, match="alpha0"):
        solve_binary_native(x, y, 1.0, alpha0=np.full(len(y), 2.0))


# ------------------------------------------------------------------------ one-vs-one
def test_ovo_matches_smoclassifier(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = digits[0][:600].astype(np.float64), digits[1][:600]
    clf = SMOClassifier(C=0.5, solver="numpy").fit(x, y)
    sol = train_ovo_native(x, y, CLASSES, 0.5)
    scale = np.abs(clf.coef_).max()
    np.testing.assert_allclose(sol.w, clf.coef_, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(sol.b, clf.intercept_, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(sol.iterations, clf.n_iter_)
    # the lazily computed kernel (no Gram) and the float32 build
    lazy = train_ovo_native(x, y, CLASSES, 0.5, max_gram_bytes=0)
    np.testing.assert_allclose(lazy.w, clf.coef_, rtol=0, atol=1e-6 * scale)
    f32 = train_ovo_native(x, y, CLASSES, 0.5, precision="float32")
    assert np.abs(f32.w - clf.coef_).max() < 2e-3  # same tol, another stopping point


def test_vote_and_scores_match_python(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = digits
    sol = train_ovo_native(x[:500], y[:500], CLASSES, 1.0)
    labels, scores, decision = predict_native(x[500:900], sol.w, sol.b, CLASSES,
                                              precision="float64")
    dec = x[500:900].astype(np.float64) @ sol.w.T + sol.b
    np.testing.assert_allclose(decision, dec, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(labels.astype(int), vote_predict(dec, 10))
    np.testing.assert_allclose(scores, ovr_decision(dec, 10), rtol=1e-12, atol=1e-12)
    # ties: all-zero decisions vote for the second class of every pair -> class 9 wins ...
    zero = predict_native(np.zeros((1, 64)), np.zeros_like(sol.w), np.zeros(45), CLASSES)[0]
    assert zero[0] == 9
    # ... and pairs that never trained abstain: no votes at all -> the lowest class
    idle = predict_native(x[:1], sol.w, sol.b, CLASSES, active=np.zeros(45, np.uint8))[0]
    assert idle[0] == 0


# ------------------------------------------------------------------------ the layer
@pytest.mark.parametrize("carry", ["support_vectors", "none"])
def test_layer_matches_python_layer_across_batches(digits: tuple[np.ndarray, np.ndarray],
                                                   carry: str) -> None:
    """Three batches of continued training: the same samples carried, the same w and b and
    iterations as the Python layer (float64 build; the float32 build is checked bit for bit
    against the firmware in test_svm_device.py)."""
    layer, ref, runs = _run_layers(digits, carry, tol=1e-3)
    for report, ref_report, w, b in runs:
        np.testing.assert_allclose(report.w, w, rtol=0, atol=1e-9)
        np.testing.assert_allclose(report.b, b, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(report.iterations, ref_report.iterations)
        assert report.carried == ref_report.carried_out
    n = layer.count
    np.testing.assert_array_equal(layer.labels[:n], ref.labels[:n])
    np.testing.assert_array_equal(layer.x[:n], ref.x[:n])


def test_warm_start_layer_matches_python_layer(digits: tuple[np.ndarray, np.ndarray]) -> None:
    """Warm starts begin at a previous optimum, where the free support vectors' y G tie up to
    rounding: the first-index rule then splits the C and numpy paths on 1e-16 differences
    (BLAS matvec vs C loops). Both stop within tol of the same optimum, so they agree to
    O(tol)."""
    _, _, runs = _run_layers(digits, "warm_start", tol=1e-6)
    for report, ref_report, w, b in runs:
        np.testing.assert_allclose(report.w, w, rtol=0, atol=1e-5)
        np.testing.assert_allclose(report.b, b, rtol=0, atol=1e-5)
        np.testing.assert_allclose(report.objective, ref_report.objective, rtol=1e-9)
    assert runs[-1][0].iterations.sum() < runs[0][0].iterations.sum()


@dataclass
class _Step:
    w: np.ndarray
    b: np.ndarray
    iterations: np.ndarray
    objective: np.ndarray
    carried: int


def _run_layers(digits: tuple[np.ndarray, np.ndarray], carry: str, tol: float
                ) -> tuple[NativeSvmLayer, TrainingBuffer, list[tuple[Any, Any, Any, Any]]]:
    x, y = digits
    layer = NativeSvmLayer(64, CLASSES, 120, C=1.0, tol=tol, carry=carry, precision="float64")
    ref = TrainingBuffer(64, 10, 120, C=1.0, tol=tol, carry=carry)
    w = np.zeros((45, 64), np.float64)
    b = np.zeros(45, np.float64)
    runs = []
    pos = 0
    for _ in range(3):
        room = ref.room
        assert layer.capacity - layer.count == room
        layer.append(x[pos:pos + room], y[pos:pos + room])
        ref.append(x[pos:pos + room], y[pos:pos + room].astype(np.int64))
        pos += room
        report = layer.train()
        ref_report = ref.train(w, b)
        step = _Step(layer.w.copy(), layer.b.copy(), report.iterations, report.objective,
                     report.carried)
        runs.append((step, ref_report, w.copy(), b.copy()))
    return layer, ref, runs


def test_carry_limit_and_unused_classes_match_python_layer(
        digits: tuple[np.ndarray, np.ndarray]) -> None:
    """More carry candidates than carry_limit (the classes take turns), and a batch of one
    class (nothing trains; its samples are carried as unused): the same buffer as Python."""
    x, y = digits
    order = np.argsort(y, kind="stable")
    by_class = {k: order[y[order] == k] for k in range(5)}
    batches = [by_class[4][:18],  # one class: no pair trains, 12 of 18 carried (unused)
               np.concatenate([by_class[0][:6], by_class[1][:6], by_class[2][:6]]),
               by_class[3][:18], by_class[1][6:24]]
    layer = NativeSvmLayer(64, range(5), 30, C=10.0, carry_limit=12, precision="float64")
    ref = TrainingBuffer(64, 5, 30, C=10.0, carry_limit=12)
    w, b = np.zeros((10, 64)), np.zeros(10)
    carried = []
    for idx in batches:
        layer.append(x[idx], y[idx])
        ref.append(x[idx], y[idx].astype(np.int64))
        report = layer.train()
        ref_report = ref.train(w, b)
        carried.append(report.carried)
        np.testing.assert_array_equal(report.status == 2, ~ref_report.trained)
        assert layer.count == ref.count
        np.testing.assert_array_equal(layer.labels[:ref.count], ref.labels[:ref.count])
        np.testing.assert_array_equal(layer.x[:ref.count], ref.x[:ref.count])
        np.testing.assert_allclose(layer.w, w, rtol=0, atol=1e-9)
    assert carried[0] == 12 and max(carried) == 12  # the limit was hit every time
    assert len(set(layer.labels[:layer.count].tolist())) >= 4  # the classes took turns


def test_int8_storage_matches_dequantized_float(digits: tuple[np.ndarray, np.ndarray]) -> None:
    """int8 buffer (exact int32 kernel) vs the same values stored as float32: the kernels
    differ by rounding, so compare at a tight tol."""
    x, y = digits
    scale, zp = 1 / 127, -64
    q = np.clip(np.round(x[:100] / np.float32(scale)) + zp, -128, 127).astype(np.int8)
    deq = (q.astype(np.float32) - zp) * np.float32(scale)
    a = NativeSvmLayer(64, CLASSES, 100, tol=1e-6, storage="int8", scale=scale, zero_point=zp,
                       precision="float64")
    f = NativeSvmLayer(64, CLASSES, 100, tol=1e-6, precision="float64")
    a.append(q, y[:100])
    f.append(deq, y[:100])
    a.train()
    f.train()
    np.testing.assert_allclose(a.w, f.w, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(a.predict(q)[0], f.predict(deq)[0])


def test_layer_errors(digits: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = digits
    layer = NativeSvmLayer(64, CLASSES, 10)
    layer.append(x[:8], y[:8])
    with pytest.raises(BufferFullError, match="8 of 10 samples"):
        layer.append(x[8:11], y[8:11])
    with pytest.raises(SvmDataError, match="label 11 is not one of the classes"):
        layer.append(x[:1], [11])
    bad = x[:2].copy()
    bad[1, 5] = np.inf
    with pytest.raises(SvmDataError, match=r"feature \[1, 5\] is inf"):
        layer.append(bad, y[:2])
    with pytest.raises(SvmParameterError, match="carry must be one of"):
        NativeSvmLayer(64, CLASSES, 10, carry="all")
    report = NativeSvmLayer(64, [0, 1, 2], 10)
    report.append(x[y < 2][:6], y[y < 2][:6])
    r = report.train()
    assert list(r.status) == [0, 2, 2]  # pairs (0,2) and (1,2): class 2 absent, skipped
    assert np.isnan(r.objective[1]) and r.trained.tolist() == [True, False, False]
