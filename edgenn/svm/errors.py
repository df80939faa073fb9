"""Errors and warnings of the SVM trainer and layer.

Each is an :class:`~edgenn.errors.EdgennError` (one-line message naming the row, column, class,
parameter or node) and, where scikit-learn code would expect it, also a ``ValueError`` so that
``except ValueError`` in users' pipelines keeps working.
"""

from __future__ import annotations

from edgenn.errors import EdgennError


class SvmDataError(EdgennError, ValueError):
    """Training or prediction data the SVM cannot use: NaN/inf, wrong shape, one class only,
    a label the layer was not built for."""


class SvmParameterError(EdgennError, ValueError):
    """A hyper-parameter out of range (``C <= 0``, an unknown solver ...)."""


class NotFittedError(EdgennError, ValueError, AttributeError):
    """``predict`` / ``decision_function`` before ``fit`` (ValueError and AttributeError, as
    scikit-learn's NotFittedError)."""


class BufferFullError(EdgennError):
    """More samples appended to an SVM layer's training buffer than it has room for."""


class ConvergenceWarning(UserWarning):
    """SMO stopped at ``max_iter`` before the KKT gap fell below ``tol``."""
