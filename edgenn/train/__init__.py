"""Training for edgenn models; PyTorch is an optional extra (``pip install torch==2.13.0``).

Joint-loss training of skippable residual networks (NestedNet-style layer skipping):
:class:`~edgenn.train.skipnet.SkipNet` can skip any of its residual blocks, and
:func:`~edgenn.train.trainer.train_skipnet` minimises the mean cross-entropy over a set of
skip configurations so that one set of weights serves every depth. Importing this package
never imports torch; the submodules that need it raise an :class:`~edgenn.errors.EdgennError`
with the install hint when it is missing. :mod:`edgenn.train.metadata` needs only onnx.
"""

from __future__ import annotations

import importlib
from typing import Any

from edgenn.train.torch_dep import TORCH_HINT, require_torch

# name -> submodule, resolved on first attribute access so `import edgenn.train` stays light.
_LAZY = {
    "SkipNet": "skipnet",
    "SkipConfig": "skipnet",
    "full_and_skip_last": "skipnet",
    "joint_loss": "losses",
    "TrainOptions": "trainer",
    "TrainResult": "trainer",
    "train_skipnet": "trainer",
    "accuracy": "trainer",
    "export_onnx": "export",
    "METADATA_KEY": "metadata",
    "read_skippable_blocks": "metadata",
    "drop_blocks": "metadata",
}

__all__ = ["TORCH_HINT", "require_torch", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"edgenn.train.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'edgenn.train' has no attribute {name!r}")
