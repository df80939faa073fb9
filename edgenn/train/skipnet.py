"""SkipNet: a Wide-ResNet-style image classifier whose residual blocks can be skipped.

::

    input [N, C, H, W]
    -> stem: (Conv3x3 stride 2 + BN + ReLU) x (len(stem) + 1)      [N, width, H/4, W/4] (default)
    -> block1 .. blockN: x + F(x),  F = Conv3x3 + BN + ReLU + Conv3x3 + BN
    -> global average pooling -> Linear(width -> classes)          logits

Every block keeps ``width`` channels at its ends (identity shortcut) and may be wider inside
(``hidden[i]`` channels), the Wide-ResNet idea that lets one block dominate the MACs and the
peak activation memory. Nothing follows the Add inside a block (no ReLU after it), so skipping
a block is exactly the identity ``x -> x``: the exported graph's ``Add(x, F(x))`` is what
edgenn's ``find_blocks`` detects, and ``apply_skip`` reproduces this module's skip path.

A *configuration* is the frozenset of skipped block names (``frozenset()`` = the full net),
the same value as ``edgenn.passes.skip.SkipConfig``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from edgenn.errors import EdgennError
from edgenn.train.torch_dep import require_torch

if TYPE_CHECKING:
    import torch
    from torch import nn
else:
    torch = require_torch()
    nn = torch.nn

SkipConfig = frozenset[str]
FULL: SkipConfig = frozenset()


class ResidualBlock(nn.Module):
    """``x + F(x)`` with ``F = conv3x3(width->hidden) BN ReLU conv3x3(hidden->width) BN``."""

    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        # why: bias=False because the BatchNorm that follows supplies the shift; once edgenn
        # folds BN into the conv the imported graph has one biased Conv2D per conv here.
        self.conv1 = nn.Conv2d(width, hidden, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.conv2 = nn.Conv2d(hidden, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.branch(x)


class SkipNet(nn.Module):
    """Stem conv, ``len(hidden)`` skippable residual blocks, global pooling, dense.

    ``forward(x, skip)`` runs the configuration that skips the blocks named in ``skip``
    (``"block1"``, ``"block2"``, ... in execution order). ``forward_configs`` runs several
    configurations sharing the computation of their common prefix.

    The stem is ``len(stem) + 1`` stride-2 convolutions with ``stem`` channels and then
    ``width`` (the residual stream's channels); block ``i`` has ``hidden[i-1]`` channels inside.
    The defaults (28x28 input -> 7x7x32 stream, blocks of 64 and 128) are the shipped models.
    """

    def __init__(self, width: int = 32, hidden: Sequence[int] = (64, 128),
                 stem: Sequence[int] = (16,), classes: int = 10, in_channels: int = 1,
                 zero_init_residual: bool = True) -> None:
        super().__init__()
        if width <= 0 or classes <= 0 or in_channels <= 0 or any(c <= 0 for c in stem):
            raise EdgennError(f"SkipNet: width {width}, stem {list(stem)}, classes {classes} "
                              f"and in_channels {in_channels} must be positive")
        if not hidden or any(h <= 0 for h in hidden):
            raise EdgennError(f"SkipNet: hidden widths {list(hidden)} must be positive, >= 1 block")
        self.width, self.hidden, self.classes = width, tuple(hidden), classes
        self.in_channels = in_channels
        layers: list[torch.nn.Module] = []
        for cin, cout in itertools.pairwise((in_channels, *stem, width)):
            layers += [nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
                       nn.BatchNorm2d(cout), nn.ReLU()]
        self.stem = nn.Sequential(*layers)
        # why: named children block1, block2, ... so that the exported ONNX node names start
        # with "/block1/", "/block2/" (the prefixes recorded in the file's metadata).
        for i, h in enumerate(self.hidden, start=1):
            block = ResidualBlock(width, h)
            if zero_init_residual:
                # why: each block starts as the identity (F = 0), so every configuration starts
                # as the same network and the residual stream's range grows only as needed;
                # the stream shares one int8 scale when blocks are skippable.
                nn.init.zeros_(block.bn2.weight)
            self.add_module(f"block{i}", block)
        self.fc = nn.Linear(width, classes)

    @property
    def block_names(self) -> list[str]:
        return [f"block{i}" for i in range(1, len(self.hidden) + 1)]

    def check_config(self, skip: Iterable[str]) -> SkipConfig:
        """Validate a configuration: an unknown block name is an EdgennError."""
        config = frozenset(skip)
        unknown = sorted(config - set(self.block_names))
        if unknown:
            raise EdgennError(f"SkipNet: unknown block(s) {', '.join(unknown)} "
                              f"(known: {', '.join(self.block_names)})")
        return config

    def head(self, x: torch.Tensor) -> torch.Tensor:
        # why: mean over H, W exports as ReduceMean -> edgenn Mean, then Gemm -> FullyConnected
        return self.fc(x.mean(dim=(2, 3)))

    def forward(self, x: torch.Tensor, skip: SkipConfig | None = None) -> torch.Tensor:
        # why: None, not FULL, as default: the ONNX tracer rejects a frozenset argument
        h = self.stem(x)
        for name in self.block_names:
            if skip is None or name not in skip:
                h = getattr(self, name)(h)
        return self.head(h)

    def forward_configs(self, x: torch.Tensor,
                        configs: Sequence[SkipConfig]) -> list[torch.Tensor]:
        """Logits of every configuration; blocks shared by a common prefix run once.

        Walks the blocks in order keeping one activation per distinct prefix decision
        (skipped / run): for "full" and "skip the last block" the stem and block1 run once.
        """
        configs = [self.check_config(c) for c in configs]
        stem = self.stem(x)
        states: dict[tuple[bool, ...], torch.Tensor] = {(): stem}
        for i, name in enumerate(self.block_names):
            nxt: dict[tuple[bool, ...], torch.Tensor] = {}
            for c in configs:
                prefix = tuple(b in c for b in self.block_names[:i])
                key = (*prefix, name in c)
                if key not in nxt:
                    h = states[prefix]
                    nxt[key] = h if name in c else getattr(self, name)(h)
            states = nxt
        return [self.head(states[tuple(b in c for b in self.block_names)]) for c in configs]


def full_and_skip_last(model: SkipNet) -> list[SkipConfig]:
    """The default training configurations: the full net and the net without its last block."""
    return [FULL, frozenset({model.block_names[-1]})]


def config_label(config: SkipConfig) -> str:
    """``"full"`` or ``"skip block2,block3"``."""
    return "full" if not config else "skip " + ",".join(sorted(config))

