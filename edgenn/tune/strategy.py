"""The ask/tell contract every search strategy keeps (optuna's, TVM MetaSchedule's).

``ask()`` proposes a point nobody has measured or is measuring (``None``: the space is
exhausted); ``tell(point, ms)`` reports a measurement (``None``: the candidate failed) and may
come from another worker; ``pending(point)`` says someone else is measuring a point. So several
workers can share one study: each keeps its strategy in step with the database and never
proposes a point twice. Every strategy proposes the rule-based baseline first, so the best
found is never a guess about how the default did.

The strategies themselves (grid, random, TPE) subclass :class:`Strategy` and are found by name
in :mod:`edgenn.tune.strategies`; this module imports none of them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar

from edgenn.tune.space import LayerSpace, Point, point_key


class _Pending:
    def __repr__(self) -> str:
        return "PENDING"


PENDING: Any = _Pending()


class Strategy:
    """Base class: bookkeeping of known points; subclasses implement :meth:`_propose`."""

    name: ClassVar[str]

    def __init__(self, space: LayerSpace[Any], seed: int = 0,
                 first: Sequence[Point] | None = None) -> None:
        self.space = space
        self.seed = seed
        self.rng = random.Random(seed)
        self.first = list(first) if first is not None else [space.default_point]
        self.known: dict[str, float | None | _Pending] = {}

    # -- the contract -----------------------------------------------------------------------
    def ask(self) -> Point | None:
        """The next point to measure, marked pending; ``None`` when every point is known."""
        point = next((p for p in self.first
                      if point_key(p) not in self.known and self.space.contains(p)), None)
        if point is not None:
            self._on_pending(point)
        else:
            point = self._propose()
        if point is not None:
            self.known[point_key(point)] = PENDING
        return point

    def tell(self, point: Point, value: float | None) -> None:
        """The median ms of ``point`` (``None``: it failed), measured here or elsewhere."""
        key = point_key(point)
        if key in self.known and self.known[key] is not PENDING:
            return  # already told (a worker re-reading the database)
        self.known[key] = value
        if self.space.contains(point):
            self._on_tell(point, value)

    def pending(self, point: Point) -> None:
        """Someone (maybe another worker) is measuring ``point``: do not propose it."""
        key = point_key(point)
        if key not in self.known:
            self.known[key] = PENDING
            if self.space.contains(point):
                self._on_pending(point)

    def release(self, point: Point) -> None:
        """A pending point was given up unmeasured (its worker stopped): it may be proposed
        again."""
        key = point_key(point)
        if self.known.get(key, None) is PENDING:
            del self.known[key]
            self._on_release(point)

    # -- helpers and hooks ------------------------------------------------------------------
    @property
    def results(self) -> dict[str, float | None]:
        return {k: v for k, v in self.known.items() if not isinstance(v, _Pending)}

    def random_unknown(self) -> Point | None:
        """A uniformly random point not yet known (``None`` if none is left)."""
        points = self.space.points()
        for _ in range(64):  # why: cheap while most of the space is unexplored
            p = points[self.rng.randrange(len(points))]
            if point_key(p) not in self.known:
                return p
        left = [p for p in points if point_key(p) not in self.known]
        return self.rng.choice(left) if left else None

    def _propose(self) -> Point | None:
        """A point not in ``self.known``, or ``None`` when there is none."""
        raise NotImplementedError

    def _on_tell(self, point: Point, value: float | None) -> None:
        """Hook: a result arrived (model-based strategies learn here)."""

    def _on_pending(self, point: Point) -> None:
        """Hook: a point is being measured by someone."""

    def _on_release(self, point: Point) -> None:
        """Hook: a pending point was given up."""
