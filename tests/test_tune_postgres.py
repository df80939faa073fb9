"""Several workers share one study on a real PostgreSQL server: together they finish it
with exactly the budget and no point measured twice (the claims at work)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pg_server import postgres_url
from tune_standin import FINGERPRINT, SyntheticMeasurer, fake_space

from edgenn.tune.database import TuningDatabase, best_record
from edgenn.tune.strategies import make_strategy
from edgenn.tune.tuner import LayerTuner

__all__ = ["postgres_url"]  # the fixture, imported for pytest

WORKER = Path(__file__).resolve().parent / "tune_worker.py"


def _run_workers(url: str, key: str, budget: int, strategy: str, n: int, tmp: Path,
                 delay: float = 0.05) -> list[Path]:
    logs = [tmp / f"{key}-{i}.log" for i in range(n)]
    procs = [subprocess.Popen([sys.executable, str(WORKER), url, key, str(budget), strategy,
                               str(delay), str(log), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, log in enumerate(logs)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return logs


@pytest.mark.parametrize("strategy", ["grid", "tpe"])
def test_two_workers_one_study_no_duplicate(postgres_url: str, tmp_path: Path,
                                            strategy: str) -> None:
    """grid is the hard case: both workers propose the same points in the same order."""
    key, budget = f"Conv2D(two-workers-{strategy})", 40
    logs = _run_workers(postgres_url, key, budget, strategy, 2, tmp_path)
    db = TuningDatabase(postgres_url)
    study = db.find_study(key, FINGERPRINT)
    assert study is not None
    trials = db.finished(study)
    hashes = [t.user_attrs["param_hash"] for t in trials]
    assert len(trials) == budget and len(set(hashes)) == budget
    workers = {t.user_attrs["edgenn"]["worker"] for t in trials}
    assert len(workers) == 2  # both did part of the work
    measured = [line.split()[1] for log in logs for line in log.read_text().splitlines()
                if line.startswith("start ")]
    assert sorted(measured) == sorted(hashes)  # every measurement is a trial, once
    assert db.claims.running(study.study_name) == []
    assert best_record(postgres_url, key, FINGERPRINT) is not None


def test_postgres_resume_and_budget_in_process(postgres_url: str) -> None:
    db = TuningDatabase(postgres_url)
    key = "Conv2D(pg-in-process)"
    space = fake_space()
    study = db.study(key, FINGERPRINT)
    first = LayerTuner(db, study, make_strategy("random", space), SyntheticMeasurer(space),
                       budget=10).run()
    second = LayerTuner(db, study, make_strategy("random", space, seed=9),
                        SyntheticMeasurer(space), budget=15).run()
    assert (first.measured, second.measured, second.finished) == (10, 5, 15)
    assert len({t.user_attrs["param_hash"] for t in db.finished(study)}) == 15
