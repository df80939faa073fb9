"""A linear SVM trained by SMO: on the host (scikit-learn compatible) and as a network layer.

* :class:`SMOClassifier` -- ``fit`` / ``predict`` / ``decision_function`` with the fitted
  attributes of ``sklearn.svm.SVC(kernel="linear")``; one-vs-one with LIBSVM's vote.
* :func:`~edgenn.train.svm.smo.solve_binary` -- the binary SMO solver (LIBSVM's second-order
  working-set selection, float64 numpy); ``edgenn.train.svm.native`` is the same algorithm in C.
* :class:`TrainingBuffer` -- the training buffer and continued-training policy (``carry``) of
  the SVM layer of the reference runtime (``edgenn/backends/ref/kernels/svm.py``).
* :func:`attach_svm_head` -- cut a (quantized) network at a feature tensor and append an SVM
  layer that learns on the device.

Importing this package needs only numpy (no torch, no scikit-learn). See docs/svm.md.
"""

from edgenn.train.svm.buffer import CARRY_POLICIES, BatchReport, TrainingBuffer
from edgenn.train.svm.classifier import SMOClassifier
from edgenn.train.svm.errors import (
    BufferFullError,
    ConvergenceWarning,
    NotFittedError,
    SvmDataError,
    SvmParameterError,
)
from edgenn.train.svm.head import attach_svm_head, penultimate_features, trained_graph
from edgenn.train.svm.smo import BinarySolution, solve_binary

__all__ = [
    "CARRY_POLICIES",
    "BatchReport",
    "BinarySolution",
    "BufferFullError",
    "ConvergenceWarning",
    "NotFittedError",
    "SMOClassifier",
    "SvmDataError",
    "SvmParameterError",
    "TrainingBuffer",
    "attach_svm_head",
    "penultimate_features",
    "solve_binary",
    "trained_graph",
]
