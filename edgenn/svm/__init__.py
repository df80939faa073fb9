"""A linear SVM trained by SMO: on the host (scikit-learn compatible) and as a network layer.

* :class:`SMOClassifier` -- ``fit`` / ``predict`` / ``decision_function`` with the fitted
  attributes of ``sklearn.svm.SVC(kernel="linear")``; one-vs-one with LIBSVM's vote.
* :func:`~edgenn.svm.smo.solve_binary` -- the binary SMO solver (LIBSVM's second-order
  working-set selection, float64 numpy); ``edgenn.svm.native`` is the same algorithm in C.
* :class:`TrainingBuffer` -- the training buffer and continued-training policy (``carry``) of
  the SVM layer of the reference runtime (``edgenn/backends/ref/kernels/svm.py``).
* :func:`attach_svm_head` -- cut a (quantized) network at a feature tensor and append an SVM
  layer that learns on the device.

Importing this package needs only numpy (no torch, no scikit-learn). See docs/svm.md.
It sits below the backends (the reference runtime, the Cortex-M firmware and the host build
run this solver and its C sources in ``c/``); the demo that drives them is
:mod:`edgenn.train.svm`.
"""

from edgenn.svm.buffer import CARRY_POLICIES, BatchReport, TrainingBuffer
from edgenn.svm.classifier import SMOClassifier
from edgenn.svm.errors import (
    BufferFullError,
    ConvergenceWarning,
    NotFittedError,
    SvmDataError,
    SvmParameterError,
)
from edgenn.svm.head import attach_svm_head, penultimate_features, trained_graph
from edgenn.svm.smo import BinarySolution, solve_binary

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
