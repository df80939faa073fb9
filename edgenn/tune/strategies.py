"""The search strategies by name: ``grid``, ``random`` and ``tpe``.

Why a module of its own: each strategy subclasses ``edgenn.tune.strategy.Strategy``, so the
base class cannot name them without an import cycle; whoever picks one by name imports this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgenn.tune.space import LayerSpace, Point
from edgenn.tune.strategy import Strategy

# why the names here and the classes on first use: the CLI lists the names while it builds
# its parser, and the TPE strategy's module imports optuna (most of a second of start-up)
STRATEGIES = ("grid", "random", "tpe")


def strategy_classes() -> dict[str, type[Strategy]]:
    """Each strategy class by its ``name``."""
    from edgenn.tune.grid import GridStrategy
    from edgenn.tune.random_search import RandomStrategy
    from edgenn.tune.tpe import TPEStrategy

    return {c.name: c for c in (GridStrategy, RandomStrategy, TPEStrategy)}


def make_strategy(name: str, space: LayerSpace[Any], seed: int = 0,
                  first: Sequence[Point] | None = None) -> Strategy:
    """``grid``, ``random`` or ``tpe`` over ``space``."""
    classes = strategy_classes()
    if name not in classes:
        raise ValueError(f"unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})")
    return classes[name](space, seed=seed, first=first)
