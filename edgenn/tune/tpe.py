"""TPE: optuna's Tree-structured Parzen Estimator proposes points (Bergstra et al. 2011).

The sampler runs on an in-memory optuna study that mirrors what the strategy has been told:
finished points as COMPLETE (or FAIL) trials, points being measured anywhere as RUNNING trials,
which the constant liar counts as bad so that parallel workers spread out. The shared database
holds only real measurements; this mirror is private to the worker. The space is a tree
(``variant[...]``, ``threads[...]`` and ``share[...]`` depend on their parents), so the
sampler is multivariate with ``group=True``: it models each branch's parameters jointly.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import optuna
from optuna.trial import TrialState, create_trial

from edgenn.tune.space import LayerSpace, Point, point_key
from edgenn.tune.strategy import Strategy

# why: once TPE has converged it keeps drawing points it knows (its best); each redraw costs a
# sampling pass, so after this many the nearest unknown neighbour of its last draw is measured
# instead: exploitation goes on around the model's favourite instead of stalling
MAX_REDRAWS = 3


@contextmanager
def _quiet_optuna() -> Iterator[None]:
    """optuna logs every trial at INFO; the mirror's trials are bookkeeping, not news."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


class TPEStrategy(Strategy):
    """Bayesian search with ``optuna.samplers.TPESampler``; the first ``n_startup_trials``
    results (the baseline included) come from uniform random points."""

    name = "tpe"

    def __init__(self, space: LayerSpace[Any], seed: int = 0,
                 first: Sequence[Point] | None = None, n_startup_trials: int = 10) -> None:
        super().__init__(space, seed, first)
        self.n_startup_trials = n_startup_trials
        with warnings.catch_warnings():
            # `group` is marked experimental in optuna 5.0; it is what conditional spaces need
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(
                seed=seed % 2**32, n_startup_trials=n_startup_trials, multivariate=True, group=True,
                constant_liar=True)
        with _quiet_optuna():
            self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self._trial_of: dict[str, int] = {}  # point key -> mirror trial number (RUNNING ones)

    def _propose(self) -> Point | None:
        if len(self.results) < self.n_startup_trials:
            # why: optuna's own start-up draws are uniform per parameter, which over this tree
            # favours small branches (LITTLE alone is as likely as every share split); start
            # uniform over the points instead, as the random strategy does
            start = self.random_unknown()
            if start is not None:
                self._on_pending(start)
            return start
        with _quiet_optuna(), warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            for _ in range(MAX_REDRAWS):
                trial = self.study.ask()
                point = self.space.suggest(trial)
                key = point_key(point)
                if key not in self.known:
                    self._trial_of[key] = trial.number
                    return point
                self.study.tell(trial, state=TrialState.FAIL)  # a repeat: not a measurement
        nearest = self.nearest_unknown(point)
        if nearest is not None:
            self._on_pending(nearest)
        return nearest

    def nearest_unknown(self, target: Point) -> Point | None:
        """The unknown point closest to ``target`` (ties broken at random)."""
        best: list[Point] = []
        best_d = float("inf")
        for p in self.space.points():
            if point_key(p) in self.known:
                continue
            d = self.space.distance(target, p)
            if d < best_d - 1e-12:
                best, best_d = [p], d
            elif d <= best_d + 1e-12:
                best.append(p)
        return self.rng.choice(best) if best else None

    def _on_pending(self, point: Point) -> None:
        key = point_key(point)
        if key in self._trial_of:
            return
        with _quiet_optuna():
            self.study.add_trial(create_trial(
                state=TrialState.RUNNING, params=point,
                distributions=self.space.distributions(point)))
        self._trial_of[key] = len(self.study.get_trials(deepcopy=False)) - 1

    def _on_tell(self, point: Point, value: float | None) -> None:
        key = point_key(point)
        number = self._trial_of.pop(key, None)
        with _quiet_optuna():
            if number is not None:
                if value is None:
                    self.study.tell(number, state=TrialState.FAIL)
                else:
                    self.study.tell(number, value)
                return
            distributions = self.space.distributions(point)
            if value is None:
                self.study.add_trial(create_trial(state=TrialState.FAIL, params=point,
                                                  distributions=distributions))
            else:
                self.study.add_trial(create_trial(value=value, params=point,
                                                  distributions=distributions))

    def _on_release(self, point: Point) -> None:
        number = self._trial_of.pop(point_key(point), None)
        if number is not None:
            with _quiet_optuna():
                self.study.tell(number, state=TrialState.FAIL)
