"""The training loop for SkipNet: Adam, cosine learning rate, shift augmentation, fixed seeds.

``train_skipnet(model, x, y, TrainOptions(configs=...))`` minimises the joint loss over the
given skip configurations (default: the full net and the net without its last block); pass
``configs=[frozenset()]`` for the plain loss. With the same seed, torch build and thread count
the run is reproducible (deterministic algorithms, one seeded generator for shuffling and
augmentation).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from edgenn.errors import EdgennError
from edgenn.train.losses import joint_loss
from edgenn.train.skipnet import FULL, SkipConfig, SkipNet, full_and_skip_last
from edgenn.train.torch_dep import require_torch

if TYPE_CHECKING:
    import torch
else:
    torch = require_torch()


@dataclass(frozen=True)
class TrainOptions:
    """Hyper-parameters. ``configs=None`` means :func:`full_and_skip_last` of the model."""

    epochs: int = 40
    batch_size: int = 64
    lr: float = 2e-3
    seed: int = 0
    max_shift: int = 2
    configs: Sequence[SkipConfig] | None = None
    weights: Sequence[float] | None = None
    threads: int | None = None  # torch intra-op threads (None: leave torch's setting)
    progress: bool = True  # a rich progress bar on stderr (shown on a terminal only)


@dataclass
class TrainResult:
    configs: list[SkipConfig]
    epoch_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def seed_everything(seed: int) -> None:
    """Seed torch's global generator (weight initialisation) and ask for deterministic kernels."""
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def images_to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 images [N, H, W] -> float32 [N, 1, H, W] in [0, 1] (pixels / 255)."""
    if images.ndim != 3:
        raise EdgennError(f"images_to_tensor: expected uint8 [N, H, W], got shape {images.shape}")
    return torch.from_numpy(images.astype(np.float32)[:, None] / np.float32(255.0))


def random_shift(x: torch.Tensor, gen: torch.Generator, max_shift: int) -> torch.Tensor:
    """Translate every image of ``x`` [N, C, H, W] by its own random offset of up to
    ``max_shift`` pixels in each direction, filling with zeros."""
    if max_shift <= 0:
        return x
    n, _, h, w = x.shape
    padded = torch.nn.functional.pad(x, (max_shift,) * 4)
    dy = torch.randint(0, 2 * max_shift + 1, (n,), generator=gen)
    dx = torch.randint(0, 2 * max_shift + 1, (n,), generator=gen)
    rows = dy[:, None] + torch.arange(h)  # [N, H]
    cols = dx[:, None] + torch.arange(w)  # [N, W]
    batch = torch.arange(n)[:, None, None]
    # why: advanced indices around a slice put their broadcast dims first -> [N, H, W, C]
    return padded[batch, :, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


def train_skipnet(
    model: SkipNet,
    x: torch.Tensor,
    y: torch.Tensor,
    options: TrainOptions | None = None,
    on_epoch: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train ``model`` in place on ``x`` [N, C, H, W] float, ``y`` [N] int64 class labels.

    Each step computes the logits of every configuration (sharing common prefixes) and
    minimises their :func:`joint_loss`. ``on_epoch(epoch, mean_loss)`` is called after each
    epoch (1-based).
    """
    from edgenn.progress import progress

    def quiet(_: int = 1) -> None:
        return None

    opts = options or TrainOptions()
    if opts.epochs <= 0 or opts.batch_size <= 0 or opts.lr <= 0:
        raise EdgennError(f"train_skipnet: epochs {opts.epochs}, batch_size {opts.batch_size} "
                          f"and lr {opts.lr} must be positive")
    if len(x) != len(y) or len(x) == 0:
        raise EdgennError(f"train_skipnet: {len(x)} images and {len(y)} labels")
    configs = [model.check_config(c) for c in (opts.configs or full_and_skip_last(model))]
    result = TrainResult(configs=configs)
    if opts.threads is not None:
        # why: a fixed thread count keeps runs reproducible, and one thread is often faster on
        # a busy machine (OpenMP workers spin-wait for each other)
        torch.set_num_threads(opts.threads)
    gen = torch.Generator().manual_seed(opts.seed)
    opt = torch.optim.Adam(model.parameters(), lr=opts.lr)
    steps_per_epoch = -(-len(x) // opts.batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=opts.epochs * steps_per_epoch)
    start = time.perf_counter()
    total_steps = opts.epochs * steps_per_epoch
    bar = progress("training", total_steps) if opts.progress else nullcontext(quiet)
    with bar as advance:
        for epoch in range(1, opts.epochs + 1):
            model.train()
            order = torch.randperm(len(x), generator=gen)
            total = 0.0
            for first in range(0, len(x), opts.batch_size):
                idx = order[first:first + opts.batch_size]
                batch = random_shift(x[idx], gen, opts.max_shift)
                opt.zero_grad()
                loss = joint_loss(model.forward_configs(batch, configs), y[idx], opts.weights)
                loss.backward()
                opt.step()
                sched.step()
                total += float(loss.item()) * len(idx)
                advance(1)
            result.epoch_losses.append(total / len(x))
            if on_epoch is not None:
                on_epoch(epoch, result.epoch_losses[-1])
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


def predict(model: SkipNet, x: torch.Tensor, skip: SkipConfig = FULL,
            batch_size: int = 500) -> np.ndarray:
    """Class predictions of configuration ``skip`` in eval mode (BN running statistics)."""
    model.eval()
    with torch.no_grad():
        preds = [model(x[i:i + batch_size], model.check_config(skip)).argmax(dim=1)
                 for i in range(0, len(x), batch_size)]
    return torch.cat(preds).numpy()


def accuracy(model: SkipNet, x: torch.Tensor, y: torch.Tensor | np.ndarray,
             skip: SkipConfig = FULL) -> float:
    """Top-1 accuracy of configuration ``skip`` on ``x``, ``y``."""
    labels = y.numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    return float(np.mean(predict(model, x, skip) == labels))
