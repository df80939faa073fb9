"""The SVM layer's training buffer and its continued-training policy.

The layer owns a buffer of ``capacity`` feature vectors (float32, as on the device) with their
class indices. Samples are appended as they arrive; when the buffer is full, :meth:`train`
runs SMO for every one-vs-one pair that has samples of both its classes in the buffer, writes
``w`` and ``b`` of those pairs in place, and clears the buffer for the next batch.

Continued training (``carry``):

``"support_vectors"`` (default)
    The support vectors of the step (samples with ``alpha > 0`` in any pair) stay at the front
    of the buffer and the new batch fills the rest; SMO starts from ``alpha = 0``. For a linear
    SVM the support vectors carry everything the solution depends on (``w`` is their weighted
    sum, the other samples satisfy the margin), so a batch is trained as if it were added to
    all the data seen so far (Syed, Liu and Sung, "Incremental learning with support vector
    machines", 1999). It needs no memory beyond the buffer and keeps old classes alive when a
    batch holds only new ones.
``"warm_start"``
    As above, and each pair's SMO also starts from the carried samples' previous alphas
    instead of zero (when ``carry_limit`` dropped some of a pair's support vectors, the heavier
    side is scaled down so that ``y.alpha = 0`` holds again). The optimum is the same; only the
    number of iterations -- device cycles -- changes.
``"none"``
    The buffer is emptied; each batch is a new problem (pairs absent from it keep their
    weights). The baseline the other two are measured against.

Both carrying policies also keep the samples of classes that took part in no trained pair
(a batch holding one class trains nothing: its samples wait for the next batch instead of
being thrown away). At most ``carry_limit`` samples are carried (default ``capacity // 2``, so
at least half of every batch is new data). When there are more candidates, the classes take
turns -- every class's best candidate, then every class's second best, ... (ties by class
index) -- so that a class seen long ago keeps its share when the stream moves on to new
classes; within a class the free support vectors (``0 < alpha < C``, on the margin) come
first, then the unused samples, then the bounded support vectors (inside the margin or
misclassified), newest first within each group. The kept samples stay in buffer order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgenn.svm.errors import BufferFullError, SvmDataError, SvmParameterError
from edgenn.svm.ovo import class_pairs, train_ovo
from edgenn.svm.smo import check_finite, check_hyper

CARRY_POLICIES = ("support_vectors", "warm_start", "none")


@dataclass(frozen=True)
class BatchReport:
    """One training step of an SVM layer.

    ``samples`` SMO trained on, of which ``carried_in`` were kept from the previous step;
    ``carried_out`` are kept for the next one. Per pair (scikit-learn's order): ``trained``
    (False when the buffer lacked one of its classes: the pair kept its weights),
    ``iterations``, ``objective`` (NaN when not trained) and ``converged``. ``seconds`` is the
    host time of the step.
    """

    samples: int
    carried_in: int
    carried_out: int
    trained: npt.NDArray[np.bool_]
    iterations: npt.NDArray[np.int64]
    objective: npt.NDArray[np.float64]
    converged: npt.NDArray[np.bool_]
    seconds: float


class TrainingBuffer:
    """Buffer, alphas and carry policy of one SVM layer (``n_classes`` classes indexed 0..k-1).

    Memory mirrors the device: features ``[capacity, n_features]`` float32, class indices
    ``[capacity]``, and the alphas ``[capacity, k - 1]`` in LIBSVM's layout (a class-``a``
    sample's alpha for pair ``(a, c)`` is in column ``c - 1`` when ``a < c``, else ``c``).
    """

    def __init__(self, n_features: int, n_classes: int, capacity: int, C: float = 1.0,
                 tol: float = 1e-3, max_iter: int = 100_000, carry: str = "support_vectors",
                 carry_limit: int | None = None) -> None:
        self.C, self.tol, self.max_iter = check_hyper(C, tol, max_iter)
        if n_classes < 2:
            raise SvmParameterError(f"an SVM needs at least 2 classes, got {n_classes}")
        if int(capacity) != capacity or capacity < 2:
            raise SvmParameterError(f"buffer capacity must be an integer >= 2, got {capacity!r}")
        if carry not in CARRY_POLICIES:
            raise SvmParameterError(
                f"carry must be one of {', '.join(CARRY_POLICIES)}, got {carry!r}")
        limit = capacity // 2 if carry_limit is None else carry_limit
        if int(limit) != limit or not 0 <= limit < capacity:
            raise SvmParameterError(
                f"carry_limit must be an integer in [0, {capacity - 1}], got {carry_limit!r}")
        self.n_features, self.n_classes = int(n_features), int(n_classes)
        self.capacity, self.carry, self.carry_limit = int(capacity), carry, int(limit)
        self.x = np.zeros((self.capacity, self.n_features), np.float32)
        self.labels = np.zeros(self.capacity, np.int64)
        self.alpha = np.zeros((self.capacity, self.n_classes - 1))
        self.count = 0  # samples in the buffer
        self.carried = 0  # of which carried from the previous step (at the front)

    @property
    def room(self) -> int:
        """How many more samples fit before the buffer must be trained."""
        return self.capacity - self.count

    @property
    def nbytes(self) -> int:
        """Bytes of training state on a float32 device (features, labels as int32, alphas)."""
        return self.capacity * (4 * self.n_features + 4 + 4 * (self.n_classes - 1))

    def append(self, x: npt.NDArray[np.float32], class_index: npt.NDArray[np.int64]) -> None:
        """Append samples ``x`` [m, d] with class indices [m]; BufferFullError if they do not
        fit (train first)."""
        m = len(x)
        if m > self.room:
            raise BufferFullError(
                f"SVM training buffer is full ({self.count} of {self.capacity} samples): train "
                f"it before appending {m} more")
        if x.shape[1:] != (self.n_features,):
            raise SvmDataError(f"features have shape {list(x.shape)}, the buffer holds "
                               f"[N, {self.n_features}]")
        check_finite(x, "feature ")
        self.x[self.count:self.count + m] = x
        self.labels[self.count:self.count + m] = class_index
        self.alpha[self.count:self.count + m] = 0.0
        self.count += m

    def train(self, w: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> BatchReport:
        """SMO on every pair present in the buffer; write their ``w`` [n_pairs, d] and ``b``
        [n_pairs] in place; then keep the carried samples and clear the rest."""
        start = time.perf_counter()
        n = self.count
        pairs = class_pairs(self.n_classes)
        warm = self.carry == "warm_start" and self.carried > 0
        fits = train_ovo(self.x[:n].astype(np.float64), self.labels[:n], self.n_classes,
                         self.C, self.tol, self.max_iter,
                         alpha0=self._warm_start if warm else None)
        trained = np.zeros(len(pairs), bool)
        iterations = np.zeros(len(pairs), np.int64)
        objective = np.full(len(pairs), np.nan)
        converged = np.ones(len(pairs), bool)
        for p, fit in enumerate(fits):
            if fit is None:
                continue
            sol = fit.solution
            w[p] = sol.w
            b[p] = sol.b
            trained[p], iterations[p] = True, sol.iterations
            objective[p], converged[p] = sol.objective, sol.converged
            self.alpha[fit.index[:fit.n_a], fit.c - 1] = sol.alpha[:fit.n_a]
            self.alpha[fit.index[fit.n_a:], fit.a] = sol.alpha[fit.n_a:]
        carried_in = self.carried
        self._carry_over(trained)
        return BatchReport(n, carried_in, self.carried, trained, iterations, objective,
                           converged, time.perf_counter() - start)

    def clear(self) -> None:
        """Forget every buffered sample (the weights are not touched)."""
        self.count = self.carried = 0
        self.alpha[:] = 0.0

    def _warm_start(self, a: int, c: int, index: npt.NDArray[np.int64],
                    n_a: int) -> npt.NDArray[np.float64] | None:
        alpha = np.concatenate([self.alpha[index[:n_a], c - 1], self.alpha[index[n_a:], a]])
        pos, neg = alpha[:n_a].sum(), alpha[n_a:].sum()
        if pos == 0.0 or neg == 0.0:
            return None
        # why: y.alpha = 0 breaks when carry_limit dropped some of the pair's support vectors;
        # shrinking the heavier side restores it and stays inside the box.
        if pos > neg:
            alpha[:n_a] *= neg / pos
        elif neg > pos:
            alpha[n_a:] *= pos / neg
        return alpha

    def _carry_over(self, trained: npt.NDArray[np.bool_]) -> None:
        n = self.count
        alpha = self.alpha[:n]
        keep = np.zeros(0, np.int64)
        if self.carry != "none":
            sv = (alpha > 0).any(axis=1)
            learned = np.zeros(self.n_classes, bool)  # classes in at least one trained pair
            for (a, c), done in zip(class_pairs(self.n_classes), trained, strict=True):
                learned[[a, c]] |= done
            unused = ~learned[self.labels[:n]]
            keep = np.flatnonzero(sv | unused)
            if len(keep) > self.carry_limit:
                keep = np.sort(keep[self._carry_order(keep, unused)[: self.carry_limit]])
        m = len(keep)
        self.x[:m] = self.x[keep]
        self.labels[:m] = self.labels[keep]
        self.alpha[:m] = self.alpha[keep]
        self.alpha[m:] = 0.0
        self.count = self.carried = m

    def _carry_order(self, cand: npt.NDArray[np.int64],
                     unused: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """Positions in ``cand`` by carry priority: classes take turns (the best candidate of
        every class, then the second best ...); within a class free support vectors, unused
        samples, bounded support vectors, newest first in each group."""
        alpha = self.alpha[cand]
        free = ((alpha > 0) & (alpha < self.C)).any(axis=1)
        group = np.where(free, 0, np.where(unused[cand], 1, 2))
        labels = self.labels[cand]
        by_class = np.lexsort((-cand, group, labels))
        rank = np.empty(len(cand), np.int64)
        for k in np.unique(labels):
            members = by_class[labels[by_class] == k]
            rank[members] = np.arange(len(members))
        return np.lexsort((labels, rank))
