"""Helpers comparing edgenn's SMO with scikit-learn's SVC (LIBSVM), shared by the SVM tests.

LIBSVM's per-pair alphas are recovered from ``SVC.dual_coef_`` and each pair's dual objective
is recomputed from them as ``1/2 |w|^2 - sum(alpha)`` (the number LIBSVM prints as ``obj``)
by ``edgenn.svm.ovo.pair_objectives``; recomputing ours the same way and matching the
solver's own ``objective_`` (kept from its running gradient) checks that function too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from edgenn.svm.ovo import pair_objectives


@dataclass(frozen=True)
class Comparison:
    accuracy: float
    accuracy_libsvm: float
    n_sv: int
    n_sv_libsvm: int
    objective_rel: np.ndarray  # per pair |ours - libsvm| / |libsvm|

    @property
    def accuracy_gap_pt(self) -> float:
        return 100.0 * abs(self.accuracy - self.accuracy_libsvm)

    @property
    def n_sv_rel(self) -> float:
        return abs(self.n_sv - self.n_sv_libsvm) / self.n_sv_libsvm


def compare_with_libsvm(ours: Any, libsvm: Any, x: np.ndarray, y: np.ndarray,
                        x_test: np.ndarray, y_test: np.ndarray) -> Comparison:
    """Accuracy, support-vector count and per-pair objectives of two fitted classifiers."""
    _, class_index = np.unique(y, return_inverse=True)
    obj_ours = pair_objectives(x, class_index, ours.support_, ours.n_support_, ours.dual_coef_)
    obj_lib = pair_objectives(x, class_index, libsvm.support_, libsvm.n_support_,
                              libsvm.dual_coef_)
    np.testing.assert_allclose(obj_ours, ours.objective_, rtol=1e-7)
    return Comparison(
        accuracy=float(np.mean(ours.predict(x_test) == y_test)),
        accuracy_libsvm=float(np.mean(libsvm.predict(x_test) == y_test)),
        n_sv=int(ours.n_support_.sum()),
        n_sv_libsvm=int(libsvm.n_support_.sum()),
        objective_rel=np.abs(obj_ours - obj_lib) / np.abs(obj_lib),
    )
