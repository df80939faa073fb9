"""The tuning loop of one layer: sync with the database, ask, claim, measure, record, tell.

    tuner = LayerTuner(db, study, strategy, measurer, budget=200)
    result = tuner.run()

``budget`` is the number of measurements the *study* should hold, whoever made them: a run
killed and started again continues where the database stands, two workers on one study stop
together at the budget, and ``--trials 300`` after ``--trials 200`` measures 100 more. Before
each proposal the strategy is told every result in the database and every point being measured
elsewhere, so no worker proposes a known point; a claim (``claims.py``) settles the race when
two propose the same one at once. A claim whose worker died is taken over first.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna
from optuna.trial import TrialState

from edgenn.tune.claims import Claim, ClaimTable, new_owner
from edgenn.tune.database import TuningDatabase, param_hash, trial_attrs
from edgenn.tune.space import Point, point_key
from edgenn.tune.strategy import PENDING, Strategy


@dataclass(frozen=True)
class TrialResult:
    """One candidate's outcome: its median ms (``None``: it failed) and what to store with it
    (decisions, samples, the error)."""

    median_ms: float | None
    attrs: dict[str, Any] = field(default_factory=dict)


class Measurer(Protocol):
    def __call__(self, point: Point) -> TrialResult: ...


@dataclass(frozen=True)
class TrialEvent:
    """Reported after every measurement this worker makes."""

    study: str
    number: int
    point: Point
    median_ms: float | None
    best_ms: float | None
    measured: int  # by this run so far
    finished: int  # in the study, by anyone
    error: str | None = None


@dataclass
class LayerTuneResult:
    """Where a layer's study stands after a run."""

    study: str
    measured: int = 0  # by this run
    finished: int = 0  # in the study
    stopped: str = ""  # "budget", "exhausted"
    history: list[tuple[int, float | None, Point, dict[str, Any]]] = field(
        default_factory=list)  # (trial number, ms, point, attrs), all workers, in order

    @property
    def best(self) -> tuple[int, float, Point, dict[str, Any]] | None:
        done = [(n, v, p, a) for n, v, p, a in self.history if v is not None]
        if not done:
            return None
        n, v, p, a = min(done, key=lambda h: (h[1], h[0]))
        assert v is not None
        return n, v, p, a

    def value_of(self, point: Point) -> float | None:
        key = point_key(point)
        return next((v for _, v, p, _ in self.history if point_key(p) == key), None)

    def best_so_far(self) -> list[float | None]:
        """Best median after each trial, in trial order (``None`` until one succeeds)."""
        out: list[float | None] = []
        best: float | None = None
        for _, v, _, _ in self.history:
            if v is not None and (best is None or v < best):
                best = v
            out.append(best)
        return out


class LayerTuner:
    """Tune one layer's study to ``budget`` measurements (see the module docstring)."""

    def __init__(self, db: TuningDatabase, study: optuna.Study, strategy: Strategy,
                 measurer: Measurer, *, budget: int, owner: str | None = None,
                 heartbeat_s: float = 10.0,
                 on_trial: Callable[[TrialEvent], None] | None = None) -> None:
        if budget < 1:
            raise ValueError(f"the trial budget must be >= 1, got {budget}")
        self.db = db
        self.claims: ClaimTable = db.claims
        self.study = study
        self.name = study.study_name
        self.strategy = strategy
        self.measurer = measurer
        self.budget = budget
        self.owner = owner or new_owner()
        self.heartbeat_s = heartbeat_s
        self.on_trial = on_trial
        self.result = LayerTuneResult(self.name)
        self._seen: set[int] = set()
        self._numbers: dict[str, int] = {}  # param hash -> trial number
        self._points: dict[str, Point] = {}
        self._others = True  # does anyone else hold a claim in this study (from sync)

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> LayerTuneResult:
        while self.step():
            pass
        self.sync()
        return self.result

    def step(self) -> bool:
        """Measure one point; False when the study has its budget or the space is exhausted."""
        self.sync()
        # why: taking over needs the study's lock; only look when someone else holds claims
        claim = self.claims.steal_stale(self.name, self.owner) if self._others else None
        if claim is None:
            point = self.strategy.ask()
            if point is None:
                self.result.stopped = "exhausted"
                return False
            self._points[point_key(point)] = point
            outcome = self.claims.acquire(self.name, param_hash(point), point, self.owner,
                                          self.budget)
            if outcome.status == "budget":
                self.strategy.release(point)
                self.result.stopped = "budget"
                return False
            if outcome.status == "taken":
                return True  # stays pending until the database has its result
            assert outcome.claim is not None
            self._measure(outcome.claim, taken_over=False)
            return True
        # a stale claim taken over: the point is pending here now, unless it landed already
        self._points[point_key(claim.point)] = claim.point
        self.strategy.pending(claim.point)
        landed = self._recorded_number(claim.param_hash)
        if landed is not None:  # its worker died after recording, before closing it
            self.claims.finish(claim, landed)
            return True
        self._measure(claim, taken_over=True)
        return True

    def _measure(self, claim: Claim, taken_over: bool) -> None:
        point = claim.point
        started = datetime.datetime.now()
        try:
            with self._heartbeat(claim):
                outcome = self.measurer(point)
        except BaseException:
            # why: an interrupted or crashed measurement is not a result; free the point
            self.claims.release(claim)
            self.strategy.release(point)
            raise
        attrs = {**outcome.attrs, "strategy": self.strategy.name, "worker": self.owner}
        # why: if this worker stalled past the grace period, another may have taken the claim
        # over and recorded the point already; and a taken-over claim's first worker may yet
        # record it. One record per point, whatever happens: look before appending.
        still_ours = self.claims.heartbeat(claim)
        number = self._recorded_number(claim.param_hash) if (
            taken_over or not still_ours) else None
        if number is None:
            number = self.db.record(self.study, point, outcome.median_ms, attrs, started)
            self._add_history(number, outcome.median_ms, point,
                              {**attrs, "point": point, "param_hash": claim.param_hash})
        self.claims.finish(claim, number)
        self.strategy.tell(point, outcome.median_ms)
        self.result.measured += 1
        if self.on_trial is not None:
            best = self.result.best
            self.on_trial(TrialEvent(
                self.name, number, point, outcome.median_ms, best[1] if best else None,
                self.result.measured, self.result.finished,
                outcome.attrs.get("error")))

    def _recorded_number(self, h: str) -> int | None:
        """The trial number of the point with hash ``h`` if the database has it (re-read)."""
        if h not in self._numbers:
            self._sync_trials()
        return self._numbers.get(h)

    @contextmanager
    def _heartbeat(self, claim: Claim) -> Iterator[None]:
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.heartbeat_s):
                self.claims.heartbeat(claim)

        thread = threading.Thread(target=beat, name="edgenn-tune-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    # -- keeping the strategy in step with the database ---------------------------------------
    def sync(self) -> None:
        """Tell the strategy every new result; mark points in flight elsewhere as pending and
        release those whose worker gave them up."""
        self._sync_trials()
        claims = self.claims.running(self.name)
        self._others = any(c.owner != self.owner for c in claims)
        running = {point_key(c.point): c.point for c in claims}
        for key, point in running.items():
            self._points[key] = point
            self.strategy.pending(point)
        for key, state in list(self.strategy.known.items()):
            if state is PENDING and key not in running and key in self._points:
                self.strategy.release(self._points[key])

    def _sync_trials(self) -> None:
        for t in self.db.finished(self.study):
            if t.number in self._seen:
                continue
            attrs = trial_attrs(t)
            point = attrs.get("point")
            if not isinstance(point, dict):
                self._seen.add(t.number)
                continue  # not an edgenn measurement
            value: float | None = t.value if t.state == TrialState.COMPLETE else None
            self._add_history(t.number, value, point, attrs)
            self.strategy.tell(point, value)

    def _add_history(self, number: int, value: float | None, point: Point,
                     attrs: dict[str, Any]) -> None:
        if number in self._seen:
            return
        self._seen.add(number)
        history = self.result.history
        history.append((number, value, point, attrs))
        if len(history) > 1 and history[-2][0] > number:
            history.sort(key=lambda h: h[0])
        self.result.finished = len(history)
        self._numbers[str(attrs.get("param_hash"))] = number
        self._points[point_key(point)] = point
