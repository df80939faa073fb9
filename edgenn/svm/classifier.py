"""SMOClassifier: a linear SVM trained by SMO, one-vs-one, with scikit-learn's interface.

It follows ``sklearn.svm.SVC(kernel="linear")`` closely enough to replace it in a pipeline
(``clone``, ``cross_val_score``, ``GridSearchCV`` work) without importing scikit-learn: the
same fitted attributes with the same meaning, the same pair order and signs, the same vote.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.errors import ToolchainError
from edgenn.svm.errors import (
    ConvergenceWarning,
    NotFittedError,
    SvmDataError,
    SvmParameterError,
)
from edgenn.svm.ovo import (
    NUMPY_SOLVER,
    PairFit,
    class_pairs,
    ovr_decision,
    pair_decisions,
    resolve_solver,
    train_ovo,
    vote_predict,
)
from edgenn.svm.smo import check_finite, check_hyper

_PARAMS = ("C", "tol", "max_iter", "solver", "decision_function_shape")
_SHAPES = ("ovr", "ovo")


class SMOClassifier:
    """Linear support vector classifier trained by SMO (LIBSVM's algorithm), one-vs-one.

    Parameters
    ----------
    C : float, default 1.0
        Box constraint (inverse regularisation), as in ``SVC``.
    tol : float, default 1e-3
        Stop when the maximal KKT violation ``Gmax + Gmax2`` falls below it (LIBSVM's eps).
    max_iter : int, default 100_000
        Pair updates allowed per binary problem; a pair that hits it is recorded in
        ``converged_`` and a :class:`~edgenn.svm.errors.ConvergenceWarning` is issued.
    solver : "auto" | "numpy" | "native", default "auto"
        ``numpy``: the float64 reference solver (:func:`~edgenn.svm.smo.solve_binary`).
        ``native``: the same algorithm in C, compiled for the host at first use (the code the
        microcontroller runs). ``auto``: native when a host C compiler is available and it
        builds, numpy otherwise.
    decision_function_shape : "ovr" | "ovo", default "ovr"
        Shape of ``decision_function`` for more than two classes, as in ``SVC``.

    Fitted attributes (scikit-learn's meaning)
    ------------------------------------------
    classes_ [k], coef_ [n_pairs, d] (``[1, d]`` for two classes, positive for ``classes_[1]``),
    intercept_ [n_pairs], support_ (training indices of the support vectors, grouped by class),
    n_support_ [k], support_vectors_, dual_coef_ [k-1, n_SV] (LIBSVM's layout), n_iter_
    [n_pairs], n_features_in_, fit_status_. Additions: ``objective_`` [n_pairs] (the dual
    objective of each pair as LIBSVM reports it), ``converged_`` [n_pairs] and ``solver_``
    (the solver actually used).

    Not supported: kernels other than linear, ``class_weight``, ``sample_weight``, probability
    estimates, sparse input.
    """

    def __init__(self, C: float = 1.0, tol: float = 1e-3, max_iter: int = 100_000,
                 solver: str = "auto", decision_function_shape: str = "ovr") -> None:
        # why: scikit-learn's contract: __init__ stores the parameters untouched; fit checks.
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.decision_function_shape = decision_function_shape

    # -- scikit-learn estimator protocol ------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters (``deep`` is accepted for compatibility: none nest)."""
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params: Any) -> SMOClassifier:
        """Set constructor parameters; unknown names raise SvmParameterError (a ValueError)."""
        for name, value in params.items():
            if name not in _PARAMS:
                raise SvmParameterError(
                    f"invalid parameter {name!r} for SMOClassifier (valid: {', '.join(_PARAMS)})"
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = SMOClassifier().get_params()
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k]]
        return f"SMOClassifier({', '.join(changed)})"

    _estimator_type = "classifier"  # scikit-learn < 1.6 reads this to pick stratified folds

    def __sklearn_tags__(self) -> Any:
        # why: only scikit-learn calls this, so importing it here never makes it a dependency
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags())

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "classes_")

    # -- training -------------------------------------------------------------------------------
    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike) -> SMOClassifier:
        """Train on ``X`` [n_samples, n_features] and labels ``y`` [n_samples] (any sortable
        labels: ints, strings ...). Returns self."""
        C, tol, max_iter = check_hyper(self.C, self.tol, self.max_iter)
        if self.decision_function_shape not in _SHAPES:
            raise SvmParameterError("decision_function_shape must be 'ovr' or 'ovo', got "
                                    f"{self.decision_function_shape!r}")
        x = check_features(X)
        labels = check_labels(y, x.shape[0])
        solver = resolve_solver(self.solver, x.shape[1])
        classes, class_index = np.unique(labels, return_inverse=True)
        if len(classes) < 2:
            raise SvmDataError(
                f"SMOClassifier needs at least 2 classes, got 1 (class {classes[0]})")
        k = len(classes)
        try:
            fits = train_ovo(x, class_index, k, C, tol, max_iter, solver)
        except ToolchainError:
            if self.solver != "auto":
                raise
            # why: "auto" promised numpy when the host compiler cannot build the C solver.
            solver = NUMPY_SOLVER
            fits = train_ovo(x, class_index, k, C, tol, max_iter, solver)
        pair_fits = [f for f in fits if f is not None]
        self._set_fitted(x, classes, class_index, pair_fits)
        self.solver_ = solver.name
        if not self.converged_.all():
            bad = [f"({classes[a]}, {classes[c]})" for (a, c), ok
                   in zip(class_pairs(k), self.converged_, strict=True) if not ok]
            warnings.warn(f"SMO stopped at max_iter={max_iter} before reaching tol={tol:g} for "
                          f"{len(bad)} pair(s): {', '.join(bad[:5])}; raise max_iter or scale "
                          "the features", ConvergenceWarning, stacklevel=2)
        return self

    def _set_fitted(self, x: npt.NDArray[np.float64], classes: npt.NDArray[Any],
                    class_index: npt.NDArray[np.int64], fits: list[PairFit]) -> None:
        k, d = len(classes), x.shape[1]
        n_pairs = len(fits)
        w = np.empty((n_pairs, d))
        b = np.empty(n_pairs)
        # alpha of each training sample in each pair it took part in, LIBSVM's [k-1, n] layout:
        # a class-a sample's alpha for pair (a, c) sits in row c-1, a class-c sample's in row a.
        coef = np.zeros((k - 1, x.shape[0]))
        for p, fit in enumerate(fits):
            sol = fit.solution
            w[p], b[p] = sol.w, sol.b
            coef[fit.c - 1, fit.index[: fit.n_a]] = sol.alpha[: fit.n_a]
            coef[fit.a, fit.index[fit.n_a:]] = -sol.alpha[fit.n_a:]
        is_sv = (coef != 0).any(axis=0)
        support = np.concatenate([np.flatnonzero(is_sv & (class_index == c)) for c in range(k)])
        self.classes_ = classes
        self.n_features_in_ = d
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.bincount(class_index[support], minlength=k).astype(np.int32)
        self.support_vectors_ = x[support]
        self._w, self._b = w, b
        binary = k == 2
        self.dual_coef_ = -coef[:, support] if binary else coef[:, support]
        self.coef_ = -w if binary else w
        self.intercept_ = -b if binary else b
        self.n_iter_ = np.array([f.solution.iterations for f in fits], np.int32)
        self.objective_ = np.array([f.solution.objective for f in fits])
        self.converged_ = np.array([f.solution.converged for f in fits], bool)
        self.fit_status_ = int(not self.converged_.all())

    # -- inference --------------------------------------------------------------------------
    def decision_function(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Two classes: [n] (positive for ``classes_[1]``). More: ``"ovo"`` [n, n_pairs]
        (pair (a, c) positive for ``classes_[a]``) or ``"ovr"`` [n, k] as ``SVC``."""
        dec = self._pair_decisions(X)
        k = len(self.classes_)
        if k == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovr":
            return ovr_decision(dec, k)
        return dec

    def predict(self, X: npt.ArrayLike) -> npt.NDArray[Any]:
        """One-vs-one vote, ties to the lowest class index (as ``SVC.predict``)."""
        dec = self._pair_decisions(X)
        return self.classes_[vote_predict(dec, len(self.classes_))]

    def score(self, X: npt.ArrayLike, y: npt.ArrayLike,
              sample_weight: npt.ArrayLike | None = None) -> float:
        """Mean accuracy on ``X``, ``y`` (optionally weighted), as ClassifierMixin.score."""
        pred = self.predict(X)
        truth = check_labels(y, len(pred))
        hits = (pred == truth).astype(np.float64)
        if sample_weight is None:
            return float(hits.mean())
        return float(np.average(hits, weights=np.asarray(sample_weight, dtype=np.float64)))

    def _pair_decisions(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        if not hasattr(self, "classes_"):
            raise NotFittedError("this SMOClassifier is not fitted yet: call fit(X, y) first")
        x = check_features(X)
        if x.shape[1] != self.n_features_in_:
            raise SvmDataError(f"X has {x.shape[1]} features, but SMOClassifier was fitted "
                               f"with {self.n_features_in_}")
        return pair_decisions(x, self._w, self._b)


def check_features(X: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``X`` as a finite float64 [n, d] array with n, d >= 1, or one SvmDataError naming the
    first bad entry."""
    try:
        x = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise SvmDataError(f"X must be a numeric 2-D array ({err})") from None
    if x.ndim != 2:
        raise SvmDataError(f"X must be 2-D [n_samples, n_features], got shape {list(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise SvmDataError(f"X has shape {list(x.shape)}: needs at least one sample and feature")
    check_finite(x)
    return x


def check_labels(y: npt.ArrayLike, n: int) -> npt.NDArray[Any]:
    """Labels as a 1-D array of length ``n`` (an [n, 1] column is accepted), or SvmDataError."""
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.shape != (n,):
        raise SvmDataError(f"y has shape {list(labels.shape)}, expected [{n}] "
                           "(one label per row of X)")
    if labels.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(labels))
        if len(bad):
            raise SvmDataError(f"y[{bad[0]}] is {labels[bad[0]]}: labels must be finite")
    return labels
