"""Every strategy keeps the ask/tell contract: baseline first, no repeats, exhausts the space,
respects other workers' results and pending points, and proposes released points again."""

from __future__ import annotations

import pytest
from tune_standin import fake_space, synthetic_ms

from edgenn.tune.space import point_key
from edgenn.tune.strategies import STRATEGIES, make_strategy, strategy_classes
from edgenn.tune.strategy import Strategy


def _drive(strategy: Strategy, budget: int) -> list[float]:
    """Ask/tell ``budget`` times on the synthetic cost; the best-so-far curve."""
    best: list[float] = []
    for _ in range(budget):
        point = strategy.ask()
        if point is None:
            break
        ms = synthetic_ms(strategy.space, point)
        strategy.tell(point, ms)
        best.append(min(ms, best[-1]) if best else ms)
    return best


@pytest.mark.parametrize("name", STRATEGIES)
def test_baseline_first_then_every_point_once(name: str) -> None:
    space = fake_space("schedule")  # 22 points: small enough to exhaust
    strategy = make_strategy(name, space, seed=1)
    seen = []
    while (point := strategy.ask()) is not None:
        seen.append(point_key(point))
        strategy.tell(point, synthetic_ms(space, point))
    assert seen[0] == point_key(space.default_point)
    assert len(seen) == len(set(seen)) == len(space)
    assert strategy.ask() is None


@pytest.mark.parametrize("name", STRATEGIES)
def test_other_workers_results_and_pending_points_are_not_proposed(name: str) -> None:
    space = fake_space("schedule")
    strategy = make_strategy(name, space, seed=2)
    points = space.points()
    for p in points[:10]:
        strategy.tell(p, synthetic_ms(space, p))  # measured elsewhere
    for p in points[10:15]:
        strategy.pending(p)  # being measured elsewhere
    proposed = []
    while (point := strategy.ask()) is not None:
        proposed.append(point_key(point))
        strategy.tell(point, 1.0)
    assert set(proposed) == {point_key(p) for p in points[15:]}


@pytest.mark.parametrize("name", STRATEGIES)
def test_released_points_come_back(name: str) -> None:
    space = fake_space("schedule")
    strategy = make_strategy(name, space, seed=3)
    first = strategy.ask()
    assert first is not None
    strategy.release(first)  # e.g. its measurement was interrupted
    again = []
    while (point := strategy.ask()) is not None:
        again.append(point_key(point))
        strategy.tell(point, 1.0)
    assert point_key(first) in again and len(again) == len(space)


@pytest.mark.parametrize("name", STRATEGIES)
def test_failed_candidates_are_results(name: str) -> None:
    space = fake_space("kernel")
    strategy = make_strategy(name, space, seed=4)
    point = strategy.ask()
    assert point is not None
    strategy.tell(point, None)
    assert strategy.results[point_key(point)] is None
    assert all(point_key(p) != point_key(point) for p in iter(strategy.ask, None))


@pytest.mark.parametrize("name", STRATEGIES)
def test_seeded_runs_repeat(name: str) -> None:
    space = fake_space()
    runs = [_drive(make_strategy(name, space, seed=5), 25) for _ in range(2)]
    assert runs[0] == runs[1]


def test_grid_follows_the_space_order() -> None:
    space = fake_space()
    strategy = make_strategy("grid", space)
    order = [point_key(strategy.ask() or {}) for _ in range(30)]
    assert order == [point_key(p) for p in space.points()[:30]]


def test_tpe_beats_grid_and_finds_the_optimum() -> None:
    """On the synthetic big.LITTLE cost (132 points, optimum: Winograd on both clusters near
    70/30), TPE gets within 2% of the optimum in 60 trials; grid, in the space's order, is
    still in the first kernels."""
    space = fake_space()
    optimum = min(synthetic_ms(space, p) for p in space.points())
    tpe = _drive(make_strategy("tpe", space, seed=0), 60)
    grid = _drive(make_strategy("grid", space, seed=0), 60)
    assert tpe[-1] <= optimum * 1.02
    assert grid[-1] > tpe[-1]


def test_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        make_strategy("annealing", fake_space())


def test_strategy_names_are_the_classes() -> None:
    """The names the CLI lists without importing the strategies are exactly the classes'."""
    assert tuple(strategy_classes()) == STRATEGIES
