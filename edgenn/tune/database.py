"""The tuning database: optuna RDB storage (SQLite by default, PostgreSQL the same way).

One optuna study per (workload key, target fingerprint), direction *minimize* (median ms).
Each trial is one measured candidate, added finished (COMPLETE with its median, or FAIL with
the error), never changed afterwards: the database is append-only. The decisions live in the
trial's user attributes (``point``, ``kernel``, ``config``, ``schedule`` as JSON), not in
optuna parameters, because optuna fixes a categorical parameter's choices for a whole study,
while the set of kernels grows with edgenn versions and restricted searches (kernel only,
schedule only) use fewer. Points in flight are tracked by :mod:`edgenn.tune.claims`.

``best_record(db_url, workload_key, fingerprint)`` is what ``compile_host(schedule="tuned")``
calls per layer.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy as sa
from optuna.trial import FrozenTrial, TrialState

from edgenn.tune.claims import ClaimTable
from edgenn.tune.codec import from_json
from edgenn.tune.errors import TuningDatabaseError
from edgenn.tune.space import Point, point_key
from edgenn.utils import user_cache_dir

STUDY_NAME_CHARS = 512  # optuna's studies.study_name column


def default_db_url() -> str:
    """``sqlite:///$XDG_CACHE_HOME/edgenn/tuning.db`` (``~/.cache`` when unset)."""
    return f"sqlite:///{user_cache_dir('tuning.db')}"


def normalize_url(db: str | os.PathLike[str] | None) -> str:
    """A database URL from a URL, a plain file path (SQLite) or ``None`` (the default)."""
    if db is None:
        return default_db_url()
    text = os.fspath(db)
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    scheme, _, rest = text.partition("://")
    if scheme in ("postgresql", "postgres"):
        # why: SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; edgenn depends on
        # psycopg2-binary, so name the driver that is installed
        return f"postgresql+{_postgres_driver()}://{rest}"
    return text


SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")  # files SQLite keeps beside a database


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite database URL (``normalize_url``'s form); None for another kind of
    database or an in-memory one."""
    if not url.startswith("sqlite"):
        return None
    path = sa.engine.make_url(url).database
    return Path(path) if path and path != ":memory:" else None


def _postgres_driver() -> str:
    import importlib.util

    return "psycopg" if importlib.util.find_spec("psycopg") else "psycopg2"


def study_name(workload_key: str, fingerprint: str) -> str:
    name = f"{workload_key}@{fingerprint}"
    if len(name) > STUDY_NAME_CHARS:
        digest = hashlib.sha256(name.encode()).hexdigest()[:24]
        name = f"{name[:STUDY_NAME_CHARS - 30]}..#{digest}"
    return name


def param_hash(point: Point) -> str:
    return hashlib.sha256(point_key(point).encode()).hexdigest()


@dataclass(frozen=True)
class TuningRecord:
    """The best measured decision for one workload on one target."""

    config: Any  # HostKernelConfig
    schedule: Any  # ThreadSchedule
    median_ms: float
    trial_number: int = -1
    kernel: str = ""
    schedule_label: str = ""
    point: Point = field(default_factory=dict)


class TuningDatabase:
    """A tuning database at ``url`` (created on first use)."""

    def __init__(self, url: str | None = None, grace_s: float = 60.0) -> None:
        self.url = normalize_url(url)
        try:
            engine_kwargs: dict[str, Any]
            if self.url.startswith("sqlite"):
                path = sqlite_path(self.url)
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                # why: workers wait for each other's writes instead of failing at once
                engine_kwargs = {"connect_args": {"timeout": 120}}
            else:
                engine_kwargs = {"pool_pre_ping": True}
            self.storage, self.claims = _open_schema(self.url, engine_kwargs, grace_s)
        except ImportError as err:
            raise TuningDatabaseError(
                f"tuning database {redact_url(self.url)}: no driver for it ({_first_line(err)}; "
                "PostgreSQL needs psycopg2-binary)") from None
        except (sa.exc.ArgumentError, sa.exc.OperationalError, sa.exc.NoSuchModuleError,
                ValueError, OSError) as err:
            raise TuningDatabaseError(
                f"tuning database {redact_url(self.url)}: {_first_line(err)}") from None
        self._studies: dict[str, optuna.Study] = {}
        self._ids: dict[str, int] = {}

    # -- studies ------------------------------------------------------------------------------
    def study(self, workload_key: str, fingerprint: str,
              attrs: Mapping[str, Any] | None = None) -> optuna.Study:
        """The study of a workload on a target, created when new."""
        name = study_name(workload_key, fingerprint)
        if name in self._studies:
            return self._studies[name]
        study = optuna.create_study(storage=self.storage, study_name=name,
                                    direction="minimize", load_if_exists=True)
        if "workload" not in study.user_attrs:
            for key, value in {"workload": workload_key, "fingerprint": fingerprint,
                               **(attrs or {})}.items():
                study.set_user_attr(key, value)
        self.claims.ensure_study(name)
        self._studies[name] = study
        return study

    def find_study(self, workload_key: str, fingerprint: str) -> optuna.Study | None:
        name = study_name(workload_key, fingerprint)
        if name in self._studies:
            return self._studies[name]
        try:
            return optuna.load_study(study_name=name, storage=self.storage)
        except KeyError:
            return None

    def studies(self) -> list[optuna.study.StudySummary]:
        return optuna.get_all_study_summaries(self.storage, include_best_trial=True)

    # -- trials -------------------------------------------------------------------------------
    @staticmethod
    def finished(study: optuna.Study) -> list[FrozenTrial]:
        """The measurements of a study: COMPLETE and FAIL trials, in order."""
        return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))

    def record(self, study: optuna.Study, point: Point, median_ms: float | None,
               attrs: Mapping[str, Any], started: datetime.datetime) -> int:
        """Append one measured candidate (``median_ms=None``: failed); its trial number."""
        h = param_hash(point)
        # why: optuna writes one row per user attribute; three rows instead of twenty make a
        # record several times cheaper to append
        user_attrs = {"point": point, "param_hash": h, "edgenn": dict(attrs)}
        trial = FrozenTrial(
            number=-1, trial_id=-1,
            state=TrialState.FAIL if median_ms is None else TrialState.COMPLETE,
            value=median_ms, values=None, datetime_start=started,
            datetime_complete=datetime.datetime.now(), params={}, distributions={},
            user_attrs=json.loads(json.dumps(user_attrs)), system_attrs={},
            intermediate_values={})
        trial._validate()
        trial_id = self.storage.create_new_trial(self._study_id(study), template_trial=trial)
        return self.storage.get_trial_number_from_id(trial_id)

    def _study_id(self, study: optuna.Study) -> int:
        if study.study_name not in self._ids:
            self._ids[study.study_name] = self.storage.get_study_id_from_name(study.study_name)
        return self._ids[study.study_name]

    def best(self, workload_key: str, fingerprint: str, *, max_threads: int | None = None,
             types: tuple[type, type] | None = None) -> TuningRecord | None:
        """The fastest decodable record (see :func:`best_record`)."""
        study = self.find_study(workload_key, fingerprint)
        if study is None:
            return None
        complete = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                    if t.value is not None]
        for t in sorted(complete, key=lambda t: (t.value, t.number)):
            threads = trial_attrs(t).get("threads")
            if max_threads is not None and threads is not None and threads > max_threads:
                continue
            record = decode_record(t, types)
            if record is not None:
                return record
        return None


def trial_attrs(trial: FrozenTrial) -> dict[str, Any]:
    """Everything edgenn stored with a trial, in one dict (``point``, ``param_hash``, the
    decisions, samples, error, strategy, worker)."""
    user = trial.user_attrs
    return {**dict(user.get("edgenn") or {}),
            **{k: v for k, v in user.items() if k != "edgenn"}}


def decode_record(trial: FrozenTrial, types: tuple[type, type] | None = None
                  ) -> TuningRecord | None:
    """The record of a trial, or ``None`` if this edgenn cannot rebuild its decisions."""
    attrs = trial_attrs(trial)
    try:
        config_type, schedule_type = types or (_resolve(attrs["config_type"]),
                                               _resolve(attrs["schedule_type"]))
        config: Any = from_json(config_type, attrs["config"])
        schedule: Any = from_json(schedule_type, attrs["schedule"])
    except (KeyError, ValueError, TypeError, ImportError, AttributeError):
        return None  # why: a record of another edgenn version: skip it, try the next best
    assert trial.value is not None
    return TuningRecord(config, schedule, float(trial.value), trial.number,
                        str(attrs.get("kernel", "")), str(attrs.get("schedule_label", "")),
                        dict(attrs.get("point", {})))


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


_DECISION_TYPES: dict[str, type] = {}


def register_decision_type(cls: type) -> type:
    """Let records that name ``cls`` be decoded (edgenn's own classes always can be): for
    kernel libraries and schedules defined outside the package, e.g. test stand-ins."""
    _DECISION_TYPES[qualified_name(cls)] = cls
    return cls


def _resolve(name: str) -> type:
    if name in _DECISION_TYPES:
        return _DECISION_TYPES[name]
    module, _, qualname = name.partition(":")
    # why: a database is data; it may only name edgenn's own decision classes
    if module != "edgenn" and not module.startswith("edgenn."):
        raise ImportError(f"refusing to load {name!r} from a tuning record")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise TypeError(name)
    return obj


def _open_schema(url: str, engine_kwargs: dict[str, Any], grace_s: float
                 ) -> tuple[optuna.storages.RDBStorage, ClaimTable]:
    """optuna's storage and the claim tables, creating the schema when the database is new.

    Creating tables is check-then-create, so workers starting together on a fresh database
    race; on PostgreSQL an advisory lock serializes them, elsewhere the loser retries (the
    tables exist by then).
    """
    for attempt in range(4):
        try:
            with _schema_lock(url):
                storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
                if url.startswith("sqlite"):
                    _sqlite_wal(storage.engine)
                return storage, ClaimTable(storage.engine, grace_s=grace_s)
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError) as err:
            if attempt == 3:
                raise TuningDatabaseError(
                    f"tuning database {redact_url(url)}: could not create the tables "
                    f"({_first_line(err)})") from None
        except sa.exc.OperationalError as err:
            if "already exists" not in str(err) or attempt == 3:
                raise
        time.sleep(0.2 + 0.3 * attempt)
    raise AssertionError("unreachable")


@contextmanager
def _schema_lock(url: str) -> Iterator[None]:
    if not url.startswith("postgresql"):
        yield
        return
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _SCHEMA_LOCK_KEY})
    finally:
        engine.dispose()


_SCHEMA_LOCK_KEY = 0x65646765  # "edge": any constant unlikely to clash with other tools


def _sqlite_wal(engine: sa.Engine) -> None:
    """Write-ahead log, fsync at checkpoints only: every record survives a killed process
    (the resume guarantee), and an append costs a fraction of a millisecond instead of a
    full fsync. A power cut may lose the last records, which a rerun measures again."""

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    sa.event.listen(engine, "connect", on_connect)
    engine.dispose()  # why: connections opened before the listener must not be reused


@functools.lru_cache(maxsize=8)
def open_database(url: str | None = None) -> TuningDatabase:
    """One :class:`TuningDatabase` per URL and process (an engine is costly to create)."""
    return TuningDatabase(url)


def best_record(db_url: str | None, workload_key: str, fingerprint: str, *,
                max_threads: int | None = None) -> TuningRecord | None:
    """The fastest measured decision for ``workload_key`` on the target ``fingerprint``.

    ``None`` when nothing was measured (the caller uses the rule-based default). With
    ``max_threads``, records whose schedule uses more threads are skipped. Records written by
    an edgenn whose decision classes no longer decode are skipped too.
    """
    return open_database(normalize_url(db_url)).best(workload_key, fingerprint,
                                                     max_threads=max_threads)


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def redact_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url
