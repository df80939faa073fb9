"""The tuning database: keying, append-only records, best records, claims, URL handling."""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pytest
from tune_standin import (
    FINGERPRINT,
    FakeConfig,
    FakeSchedule,
    FakeWork,
    SyntheticMeasurer,
    fake_space,
)

from edgenn.tune.claims import CLAIMS, new_owner
from edgenn.tune.codec import from_json, to_json
from edgenn.tune.database import (
    TuningDatabase,
    best_record,
    normalize_url,
    param_hash,
    study_name,
)
from edgenn.tune.errors import TuningDatabaseError
from edgenn.tune.strategies import make_strategy
from edgenn.tune.tuner import LayerTuner

KEY = "Conv2D(float32[1,8,8,4],float32[8,3,3,4],float32[8])->float32[1,8,8,8]{}"


@pytest.fixture
def db(tmp_path: Path) -> TuningDatabase:
    return TuningDatabase(f"sqlite:///{tmp_path / 'tune.db'}")


def _tune(db: TuningDatabase, budget: int, key: str = KEY, fingerprint: str = FINGERPRINT,
          strategy: str = "random", fail_kernel: str | None = None) -> LayerTuner:
    space = fake_space()
    tuner = LayerTuner(db, db.study(key, fingerprint), make_strategy(strategy, space, seed=0),
                       SyntheticMeasurer(space, fail_kernel=fail_kernel), budget=budget)
    tuner.run()
    return tuner


def test_one_study_per_workload_and_fingerprint(db: TuningDatabase) -> None:
    _tune(db, 5)
    _tune(db, 5, fingerprint="another-machine")
    _tune(db, 5, key=KEY.replace("[1,8,8,4]", "[1,16,16,4]"))
    names = sorted(s.study_name for s in db.studies())
    assert len(names) == 3 and study_name(KEY, FINGERPRINT) in names
    assert all(s.n_trials == 5 for s in db.studies())


def test_budget_counts_the_study_not_the_run(db: TuningDatabase) -> None:
    first = _tune(db, 8)
    again = _tune(db, 8)  # already has its 8: nothing to do
    more = _tune(db, 12)
    assert (first.result.measured, again.result.measured, more.result.measured) == (8, 0, 4)
    assert again.result.stopped == "budget"
    trials = db.finished(db.study(KEY, FINGERPRINT))
    assert len(trials) == 12
    assert len({t.user_attrs["param_hash"] for t in trials}) == 12


def test_records_are_appended_finished_and_never_change(db: TuningDatabase) -> None:
    tuner = _tune(db, 6)
    before = [(t.number, t.value, t.state, t.user_attrs) for t in tuner.db.finished(tuner.study)]
    _tune(db, 10)
    after = [(t.number, t.value, t.state, t.user_attrs)
             for t in db.finished(db.study(KEY, FINGERPRINT))]
    assert after[:6] == before


def test_failed_candidates_are_recorded_and_count(db: TuningDatabase) -> None:
    tuner = _tune(db, 30, strategy="grid", fail_kernel="im2col/8x6")
    errors = [t for t in db.finished(tuner.study) if t.value is None]
    assert errors and all(t.user_attrs["edgenn"]["error"] for t in errors)
    assert len(db.finished(tuner.study)) == 30


def test_best_record_decodes_the_fastest_and_honours_max_threads(db: TuningDatabase) -> None:
    tuner = _tune(db, 60, strategy="tpe")
    url = db.url
    record = best_record(url, KEY, FINGERPRINT)
    assert record is not None
    values = [t.value for t in db.finished(tuner.study) if t.value is not None]
    assert record.median_ms == min(values)
    assert isinstance(record.config, FakeConfig) and isinstance(record.schedule, FakeSchedule)
    assert record.schedule.threads == 2  # both clusters win on the synthetic cost
    one = best_record(url, KEY, FINGERPRINT, max_threads=1)
    assert one is not None and one.schedule.threads == 1 and one.median_ms > record.median_ms
    assert best_record(url, KEY, "unknown-machine") is None
    assert best_record(url, "Conv2D(nothing)", FINGERPRINT) is None


def test_records_of_unknown_classes_are_skipped(db: TuningDatabase) -> None:
    study = db.study(KEY, FINGERPRINT)
    space = fake_space()
    point = space.default_point
    db.record(study, point, 0.5, {"config": {"algorithm": "x"}, "config_type": "os:system",
                                  "schedule": {}, "schedule_type": "os:system"},
              datetime.datetime.now())
    assert best_record(db.url, KEY, FINGERPRINT) is None  # never imports outside edgenn
    result = SyntheticMeasurer(space)(space.points()[1])
    db.record(study, space.points()[1], 2.0, result.attrs, datetime.datetime.now())
    record = best_record(db.url, KEY, FINGERPRINT)
    assert record is not None and record.median_ms == 2.0  # the next best that decodes


def test_codec_round_trips_the_host_decisions() -> None:
    from edgenn.backends.host.kernels import HostKernelConfig
    from edgenn.backends.host.schedule import ClusterWork, ThreadSchedule

    config = HostKernelConfig("winograd_2x2", "6x16", split="rows")
    schedule = ThreadSchedule((ClusterWork(0, 1, 0.7), ClusterWork(1, 1, 0.3)))
    assert from_json(HostKernelConfig, to_json(config)) == config
    assert from_json(ThreadSchedule, to_json(schedule)) == schedule
    assert from_json(FakeSchedule, to_json(FakeSchedule((FakeWork(0, 2, 1.0),)))).threads == 2
    with pytest.raises(ValueError, match="no field"):
        from_json(HostKernelConfig, {**to_json(config), "future_field": 1})


def test_claims_race_budget_and_stale_takeover(db: TuningDatabase) -> None:
    name = db.study(KEY, FINGERPRINT).study_name
    space = fake_space()
    a, b = space.points()[:2]
    me, other = new_owner(), "elsewhere:123:abcd"
    first = db.claims.acquire(name, param_hash(a), a, other, budget=2)
    assert first.status == "claimed"
    assert db.claims.acquire(name, param_hash(a), a, me, budget=2).status == "taken"
    assert db.claims.acquire(name, param_hash(b), b, me, budget=2).status == "claimed"
    c = space.points()[2]
    assert db.claims.acquire(name, param_hash(c), c, me, budget=2).status == "budget"
    # the other worker's heartbeat is fresh: nothing to take over; then it goes quiet
    assert db.claims.steal_stale(name, me) is None
    with db.claims.engine.begin() as conn:
        conn.execute(CLAIMS.update().where(CLAIMS.c.owner == other)
                     .values(heartbeat=time.time() - 3600))
    stolen = db.claims.steal_stale(name, me)
    assert stolen is not None and stolen.point == a and stolen.owner == me
    assert first.claim is not None and not db.claims.heartbeat(first.claim)  # no longer theirs


def test_claims_of_dead_local_processes_are_stale_at_once(db: TuningDatabase) -> None:
    import socket
    import subprocess
    import sys

    name = db.study(KEY, FINGERPRINT).study_name
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = f"{socket.gethostname()}:{int(proc.stdout)}:0000"
    point = fake_space().points()[3]
    db.claims.acquire(name, param_hash(point), point, dead, budget=10)
    stolen = db.claims.steal_stale(name, new_owner())
    assert stolen is not None and stolen.point == point


def test_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert normalize_url(None) == f"sqlite:///{tmp_path / 'cache' / 'edgenn' / 'tuning.db'}"
    assert normalize_url(tmp_path / "x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert normalize_url("postgresql://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
    TuningDatabase(str(tmp_path / "nested" / "dir" / "t.db"))  # creates the directory
    assert (tmp_path / "nested" / "dir" / "t.db").exists()


@pytest.mark.parametrize("url", ["nosuchdriver://x/y", "postgresql://u:secret@127.0.0.1:1/db"])
def test_bad_urls_are_one_line_errors(url: str) -> None:
    with pytest.raises(TuningDatabaseError) as err:
        TuningDatabase(url)
    message = str(err.value)
    assert "\n" not in message and "secret" not in message


def test_a_stalled_worker_does_not_record_a_taken_over_point(db: TuningDatabase) -> None:
    """Worker A stalls past the grace period mid-measurement; B takes its claim over and
    records the point; when A wakes up it finds the record and adds none."""
    from edgenn.tune.tuner import TrialResult

    study = db.study(KEY, FINGERPRINT)
    space = fake_space()
    real = SyntheticMeasurer(space)
    b = LayerTuner(db, study, make_strategy("grid", space), real, budget=1)

    def stalling(point: dict) -> TrialResult:
        with db.claims.engine.begin() as conn:  # A's heartbeat goes quiet for an hour
            conn.execute(CLAIMS.update().values(heartbeat=time.time() - 3600))
        assert b.step()  # B takes the claim over, measures and records
        return real(point)

    a = LayerTuner(db, study, make_strategy("grid", space), stalling, budget=1)
    a.run()
    trials = db.finished(study)
    assert len(trials) == 1
    assert trials[0].user_attrs["edgenn"]["worker"] == b.owner
    assert db.claims.running(study.study_name) == []


@pytest.mark.parametrize("strategy", ["random", "tpe"])
def test_online_tuning_equals_replaying_the_measurements(db: TuningDatabase,
                                                         strategy: str) -> None:
    """What benchmarks/host_tuning.py relies on: the tuner (database, claims, sync) makes
    exactly the choices its strategy makes when fed the same numbers directly."""
    from tune_standin import synthetic_ms

    space = fake_space()
    measurer = SyntheticMeasurer(space)
    tuner = LayerTuner(db, db.study(KEY, FINGERPRINT), make_strategy(strategy, space, seed=3),
                       measurer, budget=30)
    online = [p for _, _, p, _ in tuner.run().history]
    direct = make_strategy(strategy, space, seed=3)
    replayed = []
    for _ in range(30):
        point = direct.ask()
        assert point is not None
        direct.tell(point, synthetic_ms(space, point))
        replayed.append(point)
    assert online == replayed
