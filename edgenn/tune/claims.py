"""Claims: which worker measures which point, so no point of a study is measured twice.

optuna's own ways to share a study (the sampler's view of RUNNING trials, ``enqueue_trial``
with ``skip_if_exists``) are not atomic: two workers can both start the same parameters. So
edgenn claims a point before measuring it, in a small table beside optuna's in the same
database: one row per (study, point hash), unique. Every claim runs in one transaction that
first updates the study's lock row, which serializes claimers (a row lock on PostgreSQL, the
write lock on SQLite); inside it the budget is checked too, so N workers stop at exactly the
budget. A worker holding a claim updates its ``heartbeat`` while it measures; a claim whose
heartbeat is older than the grace period, or whose worker on this host is dead, is *stale* and
is taken over by the next worker that looks (after checking that its result did not land).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from edgenn.tune.space import Point

_META = sa.MetaData()

CLAIMS = sa.Table(
    "edgenn_tune_claims", _META,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("study", sa.String(512), nullable=False),
    sa.Column("param_hash", sa.String(64), nullable=False),
    sa.Column("point", sa.Text, nullable=False),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # running | done
    sa.Column("heartbeat", sa.Float, nullable=False),  # the owner's time.time()
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("trial_number", sa.Integer, nullable=True),
    sa.UniqueConstraint("study", "param_hash", name="uq_edgenn_tune_claims_point"),
)

LOCKS = sa.Table(
    "edgenn_tune_locks", _META,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("counter", sa.Integer, nullable=False),
)

RUNNING, DONE = "running", "done"


def new_owner() -> str:
    """This worker's id: ``host:pid:random`` (the pid lets a local restart spot a dead run)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_is_dead(owner: str) -> bool:
    """True when ``owner`` ran on this host and its process is gone."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


@dataclass(frozen=True)
class Claim:
    id: int
    study: str
    param_hash: str
    point: Point
    owner: str
    state: str
    heartbeat: float
    trial_number: int | None

    @classmethod
    def from_row(cls, row: Any) -> Claim:
        return cls(row.id, row.study, row.param_hash, json.loads(row.point), row.owner,
                   row.state, row.heartbeat, row.trial_number)


@dataclass(frozen=True)
class Outcome:
    """Result of :meth:`ClaimTable.acquire`: ``claimed`` (with the claim), ``taken`` or
    ``budget`` (the study has its trials)."""

    status: str
    claim: Claim | None = None


class ClaimTable:
    """The claim and lock tables of one database (created if missing)."""

    def __init__(self, engine: sa.Engine, grace_s: float = 60.0) -> None:
        self.engine = engine
        self.grace_s = grace_s
        _META.create_all(engine, checkfirst=True)

    def ensure_study(self, study: str) -> None:
        with self.engine.begin() as conn:
            if conn.execute(sa.select(LOCKS.c.study).where(LOCKS.c.study == study)).first():
                return
        try:
            with self.engine.begin() as conn:
                conn.execute(LOCKS.insert().values(study=study, counter=0))
        except IntegrityError:
            pass  # another worker created it at the same moment

    def _lock(self, conn: sa.Connection, study: str) -> None:
        # why: the first statement of the transaction is a write to the study's row, so every
        # claimer of this study waits here for the previous one to commit
        conn.execute(LOCKS.update().where(LOCKS.c.study == study)
                     .values(counter=LOCKS.c.counter + 1))

    def acquire(self, study: str, param_hash: str, point: Point, owner: str,
                budget: int) -> Outcome:
        """Claim ``point`` unless it is claimed already or the study has ``budget`` claims."""
        now = time.time()
        with self.engine.begin() as conn:
            self._lock(conn, study)
            count = conn.execute(sa.select(sa.func.count()).select_from(CLAIMS)
                                 .where(CLAIMS.c.study == study)).scalar_one()
            existing = conn.execute(sa.select(CLAIMS).where(
                CLAIMS.c.study == study, CLAIMS.c.param_hash == param_hash)).first()
            if existing is not None:
                return Outcome("taken", Claim.from_row(existing))
            if count >= budget:
                return Outcome("budget")
            result = conn.execute(CLAIMS.insert().values(
                study=study, param_hash=param_hash, point=json.dumps(point, sort_keys=True),
                owner=owner, state=RUNNING, heartbeat=now, created=now, trial_number=None))
            claim_id = int(result.inserted_primary_key[0])  # type: ignore[index]
        return Outcome("claimed", Claim(claim_id, study, param_hash, point, owner, RUNNING,
                                        now, None))

    def steal_stale(self, study: str, owner: str) -> Claim | None:
        """Take over the oldest stale claim of ``study`` (its worker died), if any."""
        now = time.time()
        with self.engine.begin() as conn:
            self._lock(conn, study)
            rows = conn.execute(sa.select(CLAIMS).where(
                CLAIMS.c.study == study, CLAIMS.c.state == RUNNING)
                .order_by(CLAIMS.c.id)).all()
            for row in rows:
                if row.owner == owner:
                    continue
                if now - row.heartbeat > self.grace_s or owner_is_dead(row.owner):
                    conn.execute(CLAIMS.update().where(CLAIMS.c.id == row.id)
                                 .values(owner=owner, heartbeat=now))
                    stolen = Claim.from_row(row)
                    return Claim(stolen.id, study, stolen.param_hash, stolen.point, owner,
                                 RUNNING, now, None)
        return None

    def heartbeat(self, claim: Claim) -> bool:
        """Refresh ``claim``; False if it is no longer ours (taken over as stale)."""
        with self.engine.begin() as conn:
            result = conn.execute(CLAIMS.update().where(
                CLAIMS.c.id == claim.id, CLAIMS.c.owner == claim.owner,
                CLAIMS.c.state == RUNNING).values(heartbeat=time.time()))
        return bool(result.rowcount)

    def finish(self, claim: Claim, trial_number: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(CLAIMS.update().where(CLAIMS.c.id == claim.id)
                         .values(state=DONE, trial_number=trial_number))

    def release(self, claim: Claim) -> None:
        """Give a claim up unmeasured (an interrupted run): the point may be claimed again."""
        with self.engine.begin() as conn:
            conn.execute(CLAIMS.delete().where(CLAIMS.c.id == claim.id,
                                               CLAIMS.c.owner == claim.owner,
                                               CLAIMS.c.state == RUNNING))

    def running(self, study: str) -> list[Claim]:
        with self.engine.begin() as conn:
            rows = conn.execute(sa.select(CLAIMS).where(
                CLAIMS.c.study == study, CLAIMS.c.state == RUNNING)).all()
        return [Claim.from_row(r) for r in rows]

    def count(self, study: str) -> int:
        with self.engine.begin() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(CLAIMS)
                                    .where(CLAIMS.c.study == study)).scalar_one())
