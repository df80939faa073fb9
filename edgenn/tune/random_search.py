"""Random search: uniform over the points nobody has measured (sampling without repeats)."""

from __future__ import annotations

from edgenn.tune.space import Point
from edgenn.tune.strategy import Strategy


class RandomStrategy(Strategy):
    """Each point of the space equally likely; seeded, so a run can be repeated."""

    name = "random"

    def _propose(self) -> Point | None:
        return self.random_unknown()
