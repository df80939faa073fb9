"""A throwaway PostgreSQL server for tests (the tuning database's shared-worker case).

The fixture finds PostgreSQL's server binaries (installing the Debian ``postgresql`` package
with apt-get when they are missing and we are root), runs ``initdb`` into a fresh temporary
directory and starts the server on a free local port with ``pg_ctl``, creates a database, yields
its SQLAlchemy URL, and stops the server and deletes everything at the end of the session.
PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(created when missing). Durability is off (``fsync=off``): the data dies with the test.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_USER = "postgres"  # the OS account the server runs as when we are root
DB_USER = "edgenn"
DB_NAME = "edgenn_test"


def _bindir() -> Path | None:
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                             check=False).stdout.strip()
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    # Debian keeps the server programs out of PATH, one directory per major version
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit()
                      else 0)
    if versions:
        return Path(versions[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _install() -> None:
    if os.geteuid() != 0:
        pytest.skip("PostgreSQL is not installed and installing it needs root "
                    "(apt-get install postgresql)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "postgresql"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")


def _as_server_user() -> dict[str, Any]:
    """subprocess arguments that drop root for the server's account (nothing otherwise)."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                        "--shell", "/usr/sbin/nologin", PG_USER], check=True)
    return {"user": PG_USER, "group": PG_USER, "extra_groups": []}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], **kwargs: Any) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/", **kwargs)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-800:]}")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a database on a private PostgreSQL server started for this test session."""
    psycopg2 = pytest.importorskip("psycopg2")
    bindir = _bindir()
    if bindir is None:
        _install()
        bindir = _bindir()
        if bindir is None:
            pytest.fail("postgresql installed but initdb not found")
    user = _as_server_user()
    base = Path(tempfile.mkdtemp(prefix="edgenn-pg-"))
    base.chmod(0o755)  # why: the server's account must be able to enter it
    if user:
        entry = pwd.getpwnam(PG_USER)
        os.chown(base, entry.pw_uid, entry.pw_gid)
    data, log = base / "data", base / "server.log"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    port = _free_port()
    started = False
    try:
        try:
            _run([str(bindir / "initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust",
                  "--no-locale", "-E", "UTF8", "--no-sync"], env=env, **user)
            options = (f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
                       "-c synchronous_commit=off -c full_page_writes=off "
                       "-c max_connections=50")
            _run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options,
                  "-w", "-t", "60", "start"], env=env, **user)
            started = True
            conn = psycopg2.connect(host="127.0.0.1", port=port, user=DB_USER,
                                    dbname="postgres")
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE {DB_NAME}")
            conn.close()
        except (RuntimeError, psycopg2.Error) as err:
            server_log = log.read_text()[-800:] if log.exists() else ""
            pytest.fail(f"could not start PostgreSQL: {err} {server_log}")
        yield f"postgresql+psycopg2://{DB_USER}@127.0.0.1:{port}/{DB_NAME}"
    finally:
        if started:
            subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                            "-w", "stop"], capture_output=True, env=env, check=False,
                           cwd="/", **user)
        shutil.rmtree(base, ignore_errors=True)
