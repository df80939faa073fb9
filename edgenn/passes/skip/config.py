"""Skip configurations: which blocks to skip, as a frozenset of block names.

``frozenset()`` is the full network; ``frozenset({"block2"})`` skips block 2. The Cortex-M
mask of a configuration has bit ``i - 1`` set when ``block<i>`` is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Protocol

from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.passes.skip.blocks import Block, find_blocks

SkipConfig = frozenset[str]

FULL: SkipConfig = frozenset()


class Named(Protocol):
    """Anything with a block name: a ``Block``, or the Cortex-M generator's ``SkipBlock``."""

    @property
    def name(self) -> str: ...


# why a bound: 2**N configurations cost 2**N plans; beyond this many blocks the default set
# is the full network and each block skipped alone (N + 1), see default_configs.
MAX_ENUMERATED_BLOCKS = 10


def _blocks_of(source: Graph | Sequence[Block]) -> list[Block]:
    return find_blocks(source) if isinstance(source, Graph) else list(source)


def parse_skip(text: str | Iterable[str] | None, source: Graph | Sequence[Block]) -> SkipConfig:
    """``"block2,block3"`` (or an iterable of names) -> a SkipConfig checked against the
    blocks of ``source`` (a graph, or its blocks). ``None``, ``""`` and ``"none"`` mean the
    full network. An unknown name raises EdgennError listing the known blocks."""
    if text is None:
        return FULL
    if isinstance(text, str):
        names = [p.strip() for p in text.split(",") if p.strip()]
        if names == ["none"]:
            return FULL
    else:
        names = [str(p).strip() for p in text]
    blocks = _blocks_of(source)
    known = [b.name for b in blocks]
    for name in names:
        if name not in known:
            where = f"model {source.name!r}" if isinstance(source, Graph) else "the model"
            have = f"its blocks are {', '.join(known)}" if known else "it has no skippable blocks"
            raise EdgennError(f"unknown block {name!r} to skip: {where} has no such block; {have}")
    return frozenset(names)


def all_configs(blocks: Sequence[Named]) -> list[SkipConfig]:
    """Every subset of ``blocks`` (2**N configurations), ordered by their mask 0, 1, 2, ...:
    the full network first, the one skipping every block last."""
    names = [b.name for b in blocks]
    return [frozenset(n for i, n in enumerate(names) if mask >> i & 1)
            for mask in range(1 << len(names))]


def default_configs(blocks: Sequence[Named]) -> list[SkipConfig]:
    """The configurations planned when none are given: every subset (``all_configs``) of at
    most ``MAX_ENUMERATED_BLOCKS`` blocks; for more, the full network and each single block
    skipped (``configs_up_to(blocks, 1)``), so the count stays linear in the blocks. Any
    other combination is planned when asked for by name (``skip_configs``, ``--skip``)."""
    if len(blocks) > MAX_ENUMERATED_BLOCKS:
        return configs_up_to(blocks, 1)
    return all_configs(blocks)


def configs_up_to(blocks: Sequence[Named], max_skipped: int) -> list[SkipConfig]:
    """The configurations skipping at most ``max_skipped`` blocks (full network first)."""
    names = [b.name for b in blocks]
    return [frozenset(c) for k in range(min(max_skipped, len(names)) + 1)
            for c in combinations(names, k)]


def config_mask(config: SkipConfig, blocks: Sequence[Block]) -> int:
    """The Cortex-M skip mask of ``config``: bit ``i - 1`` set when ``block<i>`` is skipped."""
    index = {b.name: b.index for b in blocks}
    mask = 0
    for name in config:
        if name not in index:
            raise EdgennError(f"unknown block {name!r} in skip configuration")
        mask |= 1 << (index[name] - 1)
    return mask


def format_skip(config: SkipConfig) -> str:
    """``"block2,block3"`` in block order, ``"none"`` for the full network."""
    if not config:
        return "none"
    return ",".join(sorted(config, key=lambda n: (len(n), n)))
