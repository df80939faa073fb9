"""One-vs-one multi-class training and voting, shared by SMOClassifier and the SVM layer.

For ``k`` classes there are ``k(k-1)/2`` binary problems, ordered as scikit-learn and LIBSVM
order them: ``(0, 1), (0, 2), ..., (0, k-1), (1, 2), ...``. Pair ``(a, c)`` is trained on the
samples of class ``a`` (label +1, in their original order) followed by those of class ``c``
(label -1), so its decision is positive for class ``a``. Prediction is LIBSVM's vote: pair
``(a, c)`` votes for ``a`` when its decision is ``> 0`` and for ``c`` otherwise, and the class
with most votes wins, ties going to the lowest class index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.errors import ToolchainError
from edgenn.svm.errors import SvmParameterError
from edgenn.svm.smo import DEFAULT_MAX_GRAM_BYTES, BinarySolution, solve_binary

SolveFn = Callable[..., BinarySolution]
SOLVERS = ("auto", "numpy", "native")
# Below this many features the C solver's own dot products (with its kernel-row cache) beat a
# precomputed Gram matrix: on the 8,000 MNIST digits, 64 CNN features train in ~0.3 s that way
# against ~1-2 s with Gram matrices; with 196 or 784 features the Gram matrices win (BLAS).
NATIVE_GRAM_MIN_FEATURES = 128


@dataclass(frozen=True)
class Solver:
    """A binary solver (``solve_binary``'s signature) and how train_ovo feeds it: with
    ``share_gram`` every pair gets its Gram matrix assembled from per-class blocks."""

    name: str
    solve: SolveFn
    share_gram: bool = True


NUMPY_SOLVER = Solver("numpy", solve_binary)


def class_pairs(n_classes: int) -> list[tuple[int, int]]:
    """The one-vs-one pairs ``(a, c)``, ``a < c``, in scikit-learn's order."""
    return [(a, c) for a in range(n_classes) for c in range(a + 1, n_classes)]


@dataclass(frozen=True)
class PairFit:
    """One trained pair: ``index`` are the samples used (class ``a`` first, then ``c``) and
    ``solution.alpha`` their dual variables in the same order."""

    a: int
    c: int
    index: npt.NDArray[np.int64]
    n_a: int
    solution: BinarySolution


class GramBlocks:
    """Per-class Gram blocks ``X_a X_a'`` shared by the ``k - 1`` pairs each class is in.

    A pair's Gram matrix is assembled from its two classes' blocks and one cross block
    ``X_a X_c'``: about half the multiply-adds of ``X_ac X_ac'`` per pair. A class's block is
    dropped after its last pair, and nothing is cached when the blocks would not fit in
    ``max_bytes`` (the solver then builds each pair's Gram itself or uses its row cache).
    """

    def __init__(self, x: npt.NDArray[np.float64], members: Sequence[npt.NDArray[np.int64]],
                 pairs: Sequence[tuple[int, int]], max_bytes: int) -> None:
        self.x = x
        self.members = members
        self.max_bytes = max_bytes
        self.remaining = np.zeros(len(members), np.int64)
        for a, c in pairs:
            self.remaining[a] += 1
            self.remaining[c] += 1
        sizes = np.array([len(m) for m in members], np.int64)
        self.cache_blocks = int((sizes**2).sum()) * 8 <= max_bytes
        self.blocks: dict[int, npt.NDArray[np.float64]] = {}

    def pair_gram(self, a: int, c: int) -> npt.NDArray[np.float64] | None:
        """The Gram matrix of pair (a, c)'s samples, or None when it would be too large."""
        ia, ic = self.members[a], self.members[c]
        na, n = len(ia), len(ia) + len(ic)
        gram = None
        if 8 * n * n <= self.max_bytes:
            gram = np.empty((n, n))
            xa, xc = self.x[ia], self.x[ic]
            gram[:na, :na] = self._block(a, xa)
            gram[na:, na:] = self._block(c, xc)
            cross = xa @ xc.T
            gram[:na, na:] = cross
            gram[na:, :na] = cross.T
        for k in (a, c):
            self.remaining[k] -= 1
            if self.remaining[k] == 0:
                self.blocks.pop(k, None)
        return gram

    def _block(self, k: int, xk: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        block = self.blocks.get(k)
        if block is None:
            block = xk @ xk.T  # why: numpy turns A @ A.T into one symmetric BLAS call (syrk)
            if self.cache_blocks:
                self.blocks[k] = block
        return block


def train_ovo(
    x: npt.NDArray[np.float64],
    class_index: npt.NDArray[np.int64],
    n_classes: int,
    C: float,
    tol: float,
    max_iter: int,
    solver: Solver = NUMPY_SOLVER,
    alpha0: Callable[[int, int, npt.NDArray[np.int64], int], npt.NDArray[np.float64] | None]
    | None = None,
    max_gram_bytes: int = DEFAULT_MAX_GRAM_BYTES,
) -> list[PairFit | None]:
    """Train every pair of classes on ``x`` [n, d] with ``class_index`` [n] in ``0..k-1``.

    A pair with no sample of one of its classes is not trained (``None`` in its slot: the SVM
    layer keeps that pair's previous weights). ``alpha0(a, c, index, n_a)`` may return a warm
    start for a pair.
    """
    members = [np.flatnonzero(class_index == k) for k in range(n_classes)]
    pairs = class_pairs(n_classes)
    present = [(a, c) for a, c in pairs if len(members[a]) and len(members[c])]
    blocks = GramBlocks(x, members, present if solver.share_gram else [], max_gram_bytes)
    fits: list[PairFit | None] = []
    for a, c in pairs:
        if (a, c) not in present:
            fits.append(None)
            continue
        index = np.concatenate([members[a], members[c]])
        n_a = len(members[a])
        y = np.ones(len(index))
        y[n_a:] = -1.0
        options: dict[str, Any] = {}
        if solver.share_gram:
            options["gram"] = blocks.pair_gram(a, c)
        start = alpha0(a, c, index, n_a) if alpha0 is not None else None
        if start is not None:
            options["alpha0"] = start
        sol = solver.solve(x[index], y, C, tol, max_iter, **options)
        fits.append(PairFit(a, c, index, n_a, sol))
    return fits


def pair_decisions(x: npt.ArrayLike, w: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Decision of every pair ``x @ w.T + b`` [m, n_pairs]; positive votes for the pair's first
    class."""
    return np.asarray(x) @ w.T + b


def ovo_votes(dec: npt.NDArray[Any], n_classes: int,
              active: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.int64]:
    """Votes per class [m, k] from pair decisions [m, n_pairs] (LIBSVM: ``> 0`` votes for the
    first class of the pair). Pairs with ``active`` False abstain."""
    votes = np.zeros((dec.shape[0], n_classes), np.int64)
    for p, (a, c) in enumerate(class_pairs(n_classes)):
        if active is not None and not active[p]:
            continue
        first = dec[:, p] > 0
        votes[:, a] += first
        votes[:, c] += ~first
    return votes


def vote_predict(dec: npt.NDArray[Any], n_classes: int,
                 active: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.int64]:
    """The class index with most votes, ties to the lowest index (LIBSVM's ``svm_predict``)."""
    return ovo_votes(dec, n_classes, active).argmax(axis=1)


def ovr_decision(dec: npt.NDArray[Any], n_classes: int,
                 active: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.float64]:
    """scikit-learn's ``_ovr_decision_function`` of pair decisions: votes plus the summed
    confidences squashed into (-1/3, 1/3), so the largest entry is a class with most votes
    and, among tied classes, the most confident one.

    As scikit-learn, a decision of exactly 0 votes for the pair's first class here (LIBSVM's
    ``svm_predict`` gives it to the second). Pairs with ``active`` False abstain.
    """
    m = dec.shape[0]
    votes = np.zeros((m, n_classes))
    confidence = np.zeros((m, n_classes))
    for p, (a, c) in enumerate(class_pairs(n_classes)):
        if active is not None and not active[p]:
            continue
        d = dec[:, p].astype(np.float64)
        confidence[:, a] += d
        confidence[:, c] -= d
        second = d < 0
        votes[:, a] += ~second
        votes[:, c] += second
    return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))


def pair_objectives(x: npt.ArrayLike, class_index: npt.ArrayLike, support: npt.ArrayLike,
                    n_support: npt.ArrayLike, dual_coef: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The dual objective ``1/2 |w|^2 - sum(alpha)`` of every pair, recomputed from fitted
    attributes in scikit-learn's layout (``support_``, ``n_support_``, ``dual_coef_``) and the
    training data: compares an SMOClassifier with an ``SVC`` pair by pair.

    ``class_index`` [n] is each training sample's class position; ``dual_coef`` is ``[k-1,
    n_SV]`` (a class-``a`` support vector's ``alpha y`` for pair ``(a, c)`` in row ``c - 1``, a
    class-``c`` one's in row ``a``; the sign does not matter here).
    """
    x = np.asarray(x, dtype=np.float64)
    support = np.asarray(support)
    n_support = np.asarray(n_support)
    coef = np.abs(np.asarray(dual_coef, dtype=np.float64))
    if not np.array_equal(np.repeat(np.arange(len(n_support)), n_support),
                          np.asarray(class_index)[support]):
        raise SvmParameterError("support vectors are not grouped by class as n_support says")
    start = np.concatenate([[0], np.cumsum(n_support)])
    objectives = []
    for a, c in class_pairs(len(n_support)):
        sa, sc = slice(start[a], start[a + 1]), slice(start[c], start[c + 1])
        alpha_a, alpha_c = coef[c - 1, sa], coef[a, sc]
        w = x[support[sa]].T @ alpha_a - x[support[sc]].T @ alpha_c
        objectives.append(0.5 * float(w @ w) - float(alpha_a.sum() + alpha_c.sum()))
    return np.array(objectives)


def resolve_solver(name: str, n_features: int) -> Solver:
    """The binary solver for ``name`` (``auto`` resolved) on data with ``n_features``.

    ``native`` is the C SMO compiled for the host (``edgenn.svm.native``); ``auto`` uses
    it when a host C compiler is available and numpy otherwise.
    """
    if name not in SOLVERS:
        raise SvmParameterError(f"solver must be one of {', '.join(SOLVERS)}, got {name!r}")
    if name == "numpy":
        return NUMPY_SOLVER
    try:
        from edgenn.svm import native
    except ImportError as err:
        if name == "auto":
            return NUMPY_SOLVER
        raise ToolchainError(f"the native SVM solver is not available ({err})") from None
    if name == "auto" and not native.available():
        return NUMPY_SOLVER
    if n_features < NATIVE_GRAM_MIN_FEATURES:
        return Solver("native", partial(native.solve_binary_native, max_gram_bytes=0), False)
    return Solver("native", native.solve_binary_native)
