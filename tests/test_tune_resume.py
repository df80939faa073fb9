"""A tuning run killed midway (SIGKILL, a real subprocess) and started again loses no
completed trial and repeats none; its half-measured point is taken over and measured once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tune_standin import FINGERPRINT

from edgenn.tune.database import TuningDatabase

WORKER = Path(__file__).resolve().parent / "tune_worker.py"
KEY = "Conv2D(resume-test)"


def _worker(url: str, budget: int, strategy: str, delay: float, log: Path,
            seed: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), url, KEY, str(budget), strategy,
                             str(delay), str(log), str(seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(url: str) -> list[tuple[int, str, float | None]]:
    db = TuningDatabase(url)
    study = db.find_study(KEY, FINGERPRINT)
    if study is None:
        return []
    return [(t.number, t.user_attrs["param_hash"], t.value) for t in db.finished(study)]


def _log(path: Path, what: str) -> list[str]:
    if not path.exists():
        return []
    return [line.split()[1] for line in path.read_text().splitlines()
            if line.startswith(what + " ")]


def test_kill_and_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tune.db'}"
    budget = 24
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    proc = _worker(url, budget, "tpe", 0.25, first_log)
    deadline = time.monotonic() + 120
    while len(_finished(url)) < 8:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the worker made no progress"
        time.sleep(0.05)
    # kill it in the middle of a measurement: after one started and before it is recorded
    while len(_log(first_log, "start")) <= len(_finished(url)):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _finished(url)
    assert 8 <= len(before) < budget
    in_flight = set(_log(first_log, "start")) - {h for _, h, _ in before}
    assert len(in_flight) <= 1

    second = _worker(url, budget, "tpe", 0.0, second_log, seed=1)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err
    after = _finished(url)

    assert len(after) == budget  # exactly the budget, nothing lost
    assert after[: len(before)] == before  # the completed trials are untouched
    hashes = [h for _, h, _ in after]
    assert len(set(hashes)) == budget  # no point twice
    remeasured = set(_log(second_log, "start")) & {h for _, h, _ in before}
    assert not remeasured  # no completed trial measured again
    assert in_flight <= set(hashes)  # the interrupted point was taken over and recorded
    assert "measured" in out


def test_interrupt_releases_the_claim(tmp_path: Path) -> None:
    """Ctrl-C (KeyboardInterrupt) mid-measurement gives the point back at once."""
    import pytest
    from tune_standin import SyntheticMeasurer, fake_space

    from edgenn.tune.strategies import make_strategy
    from edgenn.tune.tuner import LayerTuner, TrialResult

    db = TuningDatabase(f"sqlite:///{tmp_path / 'tune.db'}")
    space = fake_space()
    real = SyntheticMeasurer(space)
    calls = []

    def interrupted(point: dict) -> TrialResult:
        calls.append(point)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(point)

    study = db.study(KEY, FINGERPRINT)
    with pytest.raises(KeyboardInterrupt):
        LayerTuner(db, study, make_strategy("grid", space), interrupted, budget=10).run()
    assert db.claims.running(study.study_name) == []
    assert db.claims.count(study.study_name) == 2
    tuner = LayerTuner(db, study, make_strategy("grid", space), real, budget=10)
    tuner.run()
    assert tuner.result.finished == 10
    assert [p for _, _, p, _ in tuner.result.history][2] == calls[2]


def test_taken_over_claim_whose_result_landed_is_not_measured_again(tmp_path: Path) -> None:
    """A worker that died after recording its point but before closing the claim: the worker
    taking the stale claim over closes it with the recorded trial and measures nothing."""
    from tune_standin import SyntheticMeasurer, fake_space

    from edgenn.tune.claims import CLAIMS, RUNNING
    from edgenn.tune.strategies import make_strategy
    from edgenn.tune.tuner import LayerTuner, TrialResult

    db = TuningDatabase(f"sqlite:///{tmp_path / 'tune.db'}")
    space = fake_space()
    study = db.study(KEY, FINGERPRINT)
    LayerTuner(db, study, make_strategy("grid", space), SyntheticMeasurer(space), budget=1).run()
    (recorded,) = _finished(db.url)
    with db.claims.engine.begin() as conn:  # as the dead worker left it: running, no heartbeat
        conn.execute(CLAIMS.update().values(state=RUNNING, heartbeat=0.0, trial_number=None,
                                            owner="elsewhere:1:dead"))
    calls = []

    def measurer(point: dict) -> TrialResult:
        calls.append(point)
        raise AssertionError("a recorded point was measured again")

    tuner = LayerTuner(db, study, make_strategy("grid", space), measurer, budget=1)
    tuner.run()
    assert calls == [] and db.claims.running(study.study_name) == []
    assert _finished(db.url) == [recorded]


def test_two_workers_on_sqlite(tmp_path: Path) -> None:
    """The same guarantee on the default SQLite file (workers on one machine)."""
    url = f"sqlite:///{tmp_path / 'tune.db'}"
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    procs = [_worker(url, 30, "grid", 0.03, log, seed=i) for i, log in enumerate(logs)]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    hashes = [h for _, h, _ in _finished(url)]
    assert len(hashes) == len(set(hashes)) == 30
    assert sorted(h for log in logs for h in _log(log, "start")) == sorted(hashes)
