"""PyTorch, the optional extra of training: the one place that imports it by name.

Why a module of its own: the training modules need it and the package ``edgenn.train``
re-exports them, so it cannot live in the package's ``__init__`` without an import cycle.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from edgenn.errors import EdgennError

TORCH_HINT = "PyTorch is needed for training: pip install torch==2.13.0 (or `make train-deps`)"


def require_torch() -> ModuleType:
    """Return the ``torch`` module, or raise EdgennError with the install hint."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise EdgennError(TORCH_HINT) from None
