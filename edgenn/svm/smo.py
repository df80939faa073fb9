"""Binary linear SVM by SMO with LIBSVM's second-order working-set selection (numpy, float64).

The C-SVC dual on samples ``x_i`` with labels ``y_i`` in {+1, -1} and box ``C``::

    min f(a) = 1/2 a'Qa - e'a   subject to   0 <= a_i <= C,  y'a = 0,   Q_ij = y_i y_j x_i.x_j

is solved exactly as LIBSVM's ``Solver::Solve`` does it (Fan, Chen and Lin, "Working set
selection using second order information for training SVM", JMLR 2005), without shrinking:

* ``i`` is the maximal violator ``argmax_{t in I_up} -y_t G_t`` (``Gmax``), and the loop stops
  when ``Gmax + max_{t in I_low} y_t G_t < tol`` (LIBSVM's ``eps``);
* ``j`` minimises the second-order decrease ``-b_it^2 / a_it`` over ``t in I_low`` with
  ``b_it = Gmax + y_t G_t > 0`` and ``a_it = K_ii + K_tt - 2 K_it`` (``TAU`` when not positive);
* the pair is updated analytically and clipped to the box (LIBSVM's two cases ``y_i != y_j`` and
  ``y_i == y_j``), and the gradient ``G = Qa - e`` follows with two kernel rows.

``rho`` is LIBSVM's ``calculate_rho`` (mean of ``y_i G_i`` over free ``a_i``, otherwise the
midpoint of the bounds), ``w = sum a_i y_i x_i``, ``b = -rho`` and the decision is
``w.x + b``. The objective is reported as LIBSVM prints it: ``sum_i a_i (G_i - 1) / 2``.

Deliberate differences from LIBSVM: ties go to the *first* index (numpy's ``argmax``; the
C port on the device uses strict comparisons to match) where LIBSVM keeps the last; there is
no shrinking (a speed heuristic that matters for tens of thousands of samples, not for the
batches an SVM layer trains on); and the kernel is kept in float64 (LIBSVM caches float32).

Speed: for a linear kernel the whole Gram matrix ``X X'`` of a problem is one BLAS call, after
which every iteration is a dozen vector operations of length ``n``. Problems whose Gram matrix
would exceed ``max_gram_bytes`` fall back to kernel rows computed on demand and kept in an LRU
cache (LIBSVM's strategy), so memory stays bounded for large data sets.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.svm.errors import SvmDataError, SvmParameterError

TAU = 1e-12  # LIBSVM's floor for a non-positive second-order denominator
DEFAULT_MAX_GRAM_BYTES = 1 << 29  # 512 MiB: the Gram matrix in memory up to ~8,000 samples
DEFAULT_QUAD_CACHE_BYTES = 1 << 26  # 64 MiB of cached second-order denominators

Float64Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class BinarySolution:
    """The solution of one binary problem.

    ``alpha`` [n] are the dual variables (``0 <= alpha <= C``; support vectors have
    ``alpha > 0``), ``w`` [d] and ``b`` the primal hyperplane (``decision(x) = w.x + b``, positive
    for ``y = +1``), ``objective`` the dual objective as LIBSVM reports it (a negative number),
    ``iterations`` the number of SMO pair updates and ``converged`` whether the KKT gap fell below
    ``tol`` before ``max_iter``.
    """

    alpha: Float64Array
    w: Float64Array
    b: float
    objective: float
    iterations: int
    converged: bool

    @property
    def support(self) -> npt.NDArray[np.int64]:
        """Indices of the support vectors (``alpha > 0``), ascending."""
        return np.flatnonzero(self.alpha > 0)

    def decision_function(self, X: npt.ArrayLike) -> Float64Array:
        """``X @ w + b`` for samples ``X`` [m, d]."""
        return np.asarray(X, dtype=np.float64) @ self.w + self.b


class KernelRows:
    """What the SMO loop needs from the kernel: rows of K and of the second-order denominators.

    Subclasses provide ``row`` and ``matvec``; the denominators ``K_ii + K_tt - 2 K_it`` of the
    rows that were chosen as ``i`` are cached (SMO picks the same few hundred ``i`` again and
    again, so this is far cheaper than precomputing all ``n^2`` of them).
    """

    def __init__(self, diag: Float64Array, cache_bytes: int) -> None:
        self.diag = diag
        self._quad: OrderedDict[int, Float64Array] = OrderedDict()
        self._quad_rows = max(2, cache_bytes // max(1, 8 * len(diag)))

    def row(self, i: int) -> Float64Array:  # pragma: no cover - interface
        """``K[i, :]``, valid until the next call."""
        raise NotImplementedError

    def matvec(self, v: Float64Array) -> Float64Array:  # pragma: no cover - interface
        """``K @ v``."""
        raise NotImplementedError

    def quad(self, i: int) -> Float64Array:
        """``K_ii + K_tt - 2 K_it`` for every t, non-positive entries replaced by ``TAU``."""
        q = self._quad.get(i)
        if q is not None:
            self._quad.move_to_end(i)
            return q
        # why: (K_ii + K_tt) - 2 K_it in LIBSVM's order so that the C port rounds alike.
        q = self.diag[i] + self.diag
        q -= 2.0 * self.row(i)
        q[q <= 0.0] = TAU
        self._quad[i] = q
        if len(self._quad) > self._quad_rows:
            self._quad.popitem(last=False)
        return q


class DenseKernel(KernelRows):
    """The whole Gram matrix in memory (one BLAS call for a linear kernel)."""

    def __init__(self, gram: Float64Array, cache_bytes: int = DEFAULT_QUAD_CACHE_BYTES) -> None:
        super().__init__(np.diagonal(gram).copy(), cache_bytes)
        self.k = gram

    def row(self, i: int) -> Float64Array:
        return self.k[i]

    def matvec(self, v: Float64Array) -> Float64Array:
        return self.k @ v


class CachedKernel(KernelRows):
    """Kernel rows ``X @ x_i`` computed on demand, the most recent ones kept (LIBSVM's cache)."""

    def __init__(self, X: Float64Array, cache_bytes: int) -> None:
        super().__init__(np.einsum("ij,ij->i", X, X), cache_bytes // 4)
        self.x = X
        self.rows: OrderedDict[int, Float64Array] = OrderedDict()
        self.capacity = max(2, cache_bytes // max(1, 8 * X.shape[0]))

    def row(self, i: int) -> Float64Array:
        r = self.rows.get(i)
        if r is not None:
            self.rows.move_to_end(i)
            return r
        r = self.x @ self.x[i]
        self.rows[i] = r
        if len(self.rows) > self.capacity:
            self.rows.popitem(last=False)
        return r

    def matvec(self, v: Float64Array) -> Float64Array:
        return self.x @ (self.x.T @ v)


def solve_binary(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    C: float,
    tol: float = 1e-3,
    max_iter: int = 100_000,
    gram: npt.ArrayLike | None = None,
    *,
    alpha0: npt.ArrayLike | None = None,
    max_gram_bytes: int = DEFAULT_MAX_GRAM_BYTES,
) -> BinarySolution:
    """Train a binary linear SVM on ``X`` [n, d] with labels ``y`` in {+1, -1}.

    ``gram`` is an optional precomputed ``X @ X.T`` [n, n] (the one-vs-one trainer assembles it
    from per-class blocks shared between pairs). ``alpha0`` warm-starts from a feasible point
    (``0 <= alpha0 <= C`` and ``y.alpha0 = 0``), e.g. the previous solution's support vectors;
    the optimum is the same, only the number of iterations changes. Without ``gram``, problems
    whose Gram matrix would exceed ``max_gram_bytes`` use an LRU cache of kernel rows instead.
    """
    x, labels = check_problem(X, y)
    C, tol, max_iter = check_hyper(C, tol, max_iter)
    n = len(labels)
    kernel: KernelRows
    if gram is not None:
        k = np.asarray(gram, dtype=np.float64)
        if k.shape != (n, n):
            raise SvmDataError(f"gram has shape {list(k.shape)}, expected [{n}, {n}]")
        kernel = DenseKernel(k)
    elif 8 * n * n <= max_gram_bytes:
        kernel = DenseKernel(x @ x.T)
    else:
        kernel = CachedKernel(x, max_gram_bytes)
    alpha = np.zeros(n) if alpha0 is None else check_alpha0(alpha0, labels, C)
    # why: the loop keeps g = -y*G (G = Qa - e): with y_t = +-1 this is exact, and every
    # quantity of the selection rule becomes a plain max/min of g over a masked set.
    g = labels.copy() if alpha0 is None else labels - kernel.matvec(labels * alpha)
    iterations, converged = smo_loop(kernel, labels, C, tol, max_iter, alpha, g)
    grad = -labels * g
    objective = float(np.dot(alpha, grad - 1.0) / 2.0)
    rho = calculate_rho(alpha, labels, grad, C)
    w = x.T @ (alpha * labels)
    return BinarySolution(alpha, w, -rho, objective, iterations, converged)


def smo_loop(
    kernel: KernelRows,
    y: Float64Array,
    C: float,
    tol: float,
    max_iter: int,
    alpha: Float64Array,
    g: Float64Array,
) -> tuple[int, bool]:
    """Run SMO in place on ``alpha`` and ``g = -y * (Q alpha - e)``; return (updates, converged)."""
    n = len(y)
    pos = y > 0
    # why: I_up / I_low as additive penalties (0 inside, -inf / +inf outside) turn the masked
    # argmax / min into one add and one reduction; only two entries change per iteration.
    up_pen = np.where(np.where(pos, alpha < C, alpha > 0), 0.0, -np.inf)
    low_pen = np.where(np.where(pos, alpha > 0, alpha < C), 0.0, np.inf)
    buf = np.empty(n)
    tmp = np.empty(n)
    diag = kernel.diag
    for it in range(max_iter + 1):
        np.add(g, up_pen, out=buf)
        i = int(buf.argmax())
        gmax = float(buf[i])
        np.add(g, low_pen, out=buf)
        if gmax - float(buf.min()) < tol:  # Gmax + Gmax2 < eps
            return it, True
        if it == max_iter:
            break
        # second-order choice of j: maximise b^2 / a over I_low with b = Gmax - g_t > 0
        np.subtract(gmax, buf, out=buf)
        np.maximum(buf, 0.0, out=buf)
        buf *= buf
        buf /= kernel.quad(i)
        j = int(buf.argmax())
        if not buf[j] > 0.0:  # no t with b_it > 0: LIBSVM's Gmin_idx == -1
            return it, True
        ki = kernel.row(i)
        kij = float(ki[j])
        yi, yj = float(y[i]), float(y[j])
        ai, aj = update_pair(float(alpha[i]), float(alpha[j]), -yi * float(g[i]),
                             -yj * float(g[j]), yi, yj, float(diag[i]), float(diag[j]), kij, C)
        ci = yi * (ai - float(alpha[i]))
        cj = yj * (aj - float(alpha[j]))
        alpha[i], alpha[j] = ai, aj
        # G_k += Q_ki da_i + Q_kj da_j, i.e. g_k -= K_ki y_i da_i + K_kj y_j da_j
        np.multiply(ki, ci, out=tmp)
        np.multiply(kernel.row(j), cj, out=buf)
        tmp += buf
        g -= tmp
        for t, a_t in ((i, ai), (j, aj)):
            in_up = a_t < C if pos[t] else a_t > 0
            in_low = a_t > 0 if pos[t] else a_t < C
            up_pen[t] = 0.0 if in_up else -np.inf
            low_pen[t] = 0.0 if in_low else np.inf
    return max_iter, False


def update_pair(ai: float, aj: float, gi: float, gj: float, yi: float, yj: float,
                qdi: float, qdj: float, kij: float, C: float) -> tuple[float, float]:
    """LIBSVM's analytic two-variable step, clipped to the box (``Solver::Solve``)."""
    quad = (qdi + qdj) - 2.0 * kij
    if quad <= 0.0:
        quad = TAU
    if yi != yj:
        delta = (-gi - gj) / quad
        diff = ai - aj
        ai += delta
        aj += delta
        if diff > 0:
            if aj < 0:
                aj, ai = 0.0, diff
        elif ai < 0:
            ai, aj = 0.0, -diff
        if diff > 0:  # LIBSVM: diff > C_i - C_j, with C_i == C_j
            if ai > C:
                ai, aj = C, C - diff
        elif aj > C:
            aj, ai = C, C + diff
    else:
        delta = (gi - gj) / quad
        total = ai + aj
        ai -= delta
        aj += delta
        if total > C:
            if ai > C:
                ai, aj = C, total - C
        elif aj < 0:
            aj, ai = 0.0, total
        if total > C:
            if aj > C:
                aj, ai = C, total - C
        elif ai < 0:
            ai, aj = 0.0, total
    return ai, aj


def calculate_rho(alpha: Float64Array, y: Float64Array, grad: Float64Array, C: float) -> float:
    """LIBSVM's ``calculate_rho``: mean ``y G`` over free alphas, else the middle of the bounds."""
    yg = y * grad
    upper = alpha >= C
    lower = alpha <= 0
    free = ~(upper | lower)
    if free.any():
        return float(yg[free].mean())
    pos = y > 0
    ub_set = (upper & ~pos) | (lower & pos)
    lb_set = (upper & pos) | (lower & ~pos)
    ub = float(yg[ub_set].min()) if ub_set.any() else np.inf
    lb = float(yg[lb_set].max()) if lb_set.any() else -np.inf
    return (ub + lb) / 2.0


def check_problem(X: npt.ArrayLike, y: npt.ArrayLike) -> tuple[Float64Array, Float64Array]:
    """``X`` as float64 [n, d] and ``y`` as float64 +-1, or one clear SvmDataError."""
    x = np.asarray(X, dtype=np.float64)
    labels = np.asarray(y)
    if x.ndim != 2:
        raise SvmDataError(f"X must be 2-D [n_samples, n_features], got shape {list(x.shape)}")
    if labels.shape != (x.shape[0],):
        raise SvmDataError(f"y has shape {list(labels.shape)}, expected [{x.shape[0]}] "
                           "(one label per row of X)")
    check_finite(x)
    if not np.isin(labels, (-1, 1)).all():
        raise SvmDataError("binary labels y must be -1 or +1")
    if not ((labels > 0).any() and (labels < 0).any()):
        raise SvmDataError("a binary problem needs samples of both labels +1 and -1")
    return x, labels.astype(np.float64)


def check_finite(x: npt.NDArray[Any], name: str = "X") -> None:
    """One SvmDataError naming the first NaN or inf of the features ``x`` [n, d] (``name``:
    how the message calls them, ``X[r, c]`` or ``feature [r, c]``)."""
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise SvmDataError(f"{name}[{row}, {col}] is {x[row, col]} (row {row}, column {col}): "
                           "features must be finite")


def check_hyper(C: float, tol: float, max_iter: int) -> tuple[float, float, int]:
    """Validated (C, tol, max_iter): C and tol positive and finite, max_iter a positive int."""
    if not (np.isfinite(C) and C > 0):
        raise SvmParameterError(f"C must be a positive number, got {C!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise SvmParameterError(f"tol must be a positive number, got {tol!r}")
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
        raise SvmParameterError(f"max_iter must be a positive integer, got {max_iter!r}")
    return float(C), float(tol), int(max_iter)


def check_alpha0(alpha0: npt.ArrayLike, y: Float64Array, C: float) -> Float64Array:
    """A copy of a warm start that is feasible for this problem, or one clear error."""
    a = np.array(alpha0, dtype=np.float64)
    if a.shape != y.shape:
        raise SvmParameterError(f"alpha0 has shape {list(a.shape)}, expected [{len(y)}]")
    if not (np.isfinite(a).all() and (a >= 0).all() and (a <= C).all()):
        raise SvmParameterError(f"alpha0 must lie in [0, C={C:g}]")
    if abs(float(np.dot(y, a))) > 1e-9 * max(1.0, C * len(y)):
        raise SvmParameterError("alpha0 violates y.alpha = 0 (not a feasible warm start)")
    return a
