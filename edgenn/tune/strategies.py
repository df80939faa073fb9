"""The search strategies by name: ``grid``, ``random`` and ``tpe``.

Why a module of its own: each strategy subclasses ``edgenn.tune.strategy.Strategy``, so the
base class cannot name them without an import cycle; whoever picks one by name imports this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgenn.tune.grid import GridStrategy
from edgenn.tune.random_search import RandomStrategy
from edgenn.tune.space import LayerSpace, Point
from edgenn.tune.strategy import Strategy
from edgenn.tune.tpe import TPEStrategy

CLASSES: dict[str, type[Strategy]] = {
    c.name: c for c in (GridStrategy, RandomStrategy, TPEStrategy)}
STRATEGIES = tuple(CLASSES)


def make_strategy(name: str, space: LayerSpace[Any], seed: int = 0,
                  first: Sequence[Point] | None = None) -> Strategy:
    """``grid``, ``random`` or ``tpe`` over ``space``."""
    if name not in CLASSES:
        raise ValueError(f"unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})")
    return CLASSES[name](space, seed=seed, first=first)
