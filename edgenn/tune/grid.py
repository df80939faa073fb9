"""Grid search: every point in the space's fixed order (kernels outer, schedules inner)."""

from __future__ import annotations

from typing import Any

from edgenn.tune.space import LayerSpace, Point, point_key
from edgenn.tune.strategy import Strategy


class GridStrategy(Strategy):
    """Nested loops over the space, as a person would write them; skips known points."""

    name = "grid"

    def __init__(self, space: LayerSpace[Any], seed: int = 0,
                 first: list[Point] | None = None) -> None:
        super().__init__(space, seed, first)
        self._next = 0

    def _propose(self) -> Point | None:
        points = self.space.points()
        while self._next < len(points):
            point = points[self._next]
            self._next += 1
            if point_key(point) not in self.known:
                return point
        # why: a point skipped as pending may have been released by a worker that stopped
        return next((p for p in points if point_key(p) not in self.known), None)
