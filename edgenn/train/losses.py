"""Losses over skip configurations.

The joint loss of NestedNet-style layer skipping is the mean over the trained configurations
of the cross-entropy, ``(L(y, y_full) + L(y, y_skip)) / 2`` for two configurations; the plain
loss is the same with the full configuration only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from edgenn.errors import EdgennError
from edgenn.train.torch_dep import require_torch

if TYPE_CHECKING:
    import torch
else:
    torch = require_torch()


def joint_loss(logits: Sequence[torch.Tensor], target: torch.Tensor,
               weights: Sequence[float] | None = None) -> torch.Tensor:
    """Weighted mean of the cross-entropies of each configuration's ``logits`` (equal weights
    by default: the joint loss). One element gives the plain cross-entropy."""
    if not logits:
        raise EdgennError("joint_loss: no configurations")
    if weights is None:
        weights = [1.0] * len(logits)
    if len(weights) != len(logits) or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise EdgennError(f"joint_loss: {len(weights)} weights {list(weights)} for "
                          f"{len(logits)} configurations (need one non-negative weight each)")
    total = sum(w * torch.nn.functional.cross_entropy(z, target)
                for w, z in zip(weights, logits, strict=True))
    return total / float(sum(weights))
