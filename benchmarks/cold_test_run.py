"""How long the README's test command takes on a cold machine: a fresh clone, nothing cached.

    .venv/bin/python benchmarks/cold_test_run.py [--keep]

Clones the current commit next to this checkout (so the clone's ``../shared`` is this one's),
runs ``make test`` there with ``HOME`` set to an empty folder (no ``~/.cache``: no host kernel
builds, no trial figures, no pip downloads to reuse; the Debian packages are the machine's)
and records the wall time of the whole command (virtual environment included) and of the
pytest run, the outcome counts, the 15 slowest tests that ``make test`` prints, the host's
CPU count and its load average before and after. The target (issue 23) is 10 minutes on a
2-core machine. Writes benchmarks/results/cold_test_run.json; the README quotes it (rendered
by tools/results_doc.py). A failing test run is reported and exits 1; the JSON is still
written, with the failure counted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cold_test_run.json"
TARGET_S = 600.0
_SUMMARY = re.compile(r"^=*\s*(\d+ \w+(?:, \d+ \w+)*) in ([\d.]+)s", re.M)
_DURATION = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(\S+)")


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()


def parse(log: str) -> dict[str, Any]:
    """The pytest summary (counts, seconds) and the slowest-tests list of a ``make test`` log."""
    counts: dict[str, int] = {}
    pytest_s = None
    for match in _SUMMARY.finditer(log):
        pytest_s = float(match.group(2))
        counts = {}
        for part in match.group(1).split(","):
            words = part.strip().split()
            if len(words) == 2 and words[0].isdigit():
                counts[words[1]] = int(words[0])
    slowest = [{"seconds": float(m.group(1)), "phase": m.group(2), "test": m.group(3)}
               for m in (_DURATION.match(line) for line in log.splitlines()) if m]
    return {"pytest_seconds": pytest_s, "counts": counts, "slowest": slowest}


def run(keep: bool) -> dict[str, Any]:
    # why next to this checkout: the clone's ../shared must be this checkout's
    work = ROOT.parent / f".edgenn-cold-{os.getpid()}"
    if work.exists():
        raise SystemExit(f"error: {work} exists; remove it first")
    home = Path(tempfile.mkdtemp(prefix="edgenn-cold-home-"))
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True)
        env = {k: v for k, v in os.environ.items()
               if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTEST_ADDOPTS", "XDG_CACHE_HOME",
                            "EDGENN_TRIAL_CACHE")}
        env["HOME"] = str(home)
        load_before = os.getloadavg()
        start = time.perf_counter()
        done = subprocess.run(["make", "test"], cwd=work, env=env, capture_output=True,
                              text=True, check=False)
        wall = time.perf_counter() - start
        load_after = os.getloadavg()
        log = done.stdout + done.stderr
        if keep:
            (work / "cold_test_run.log").write_text(log)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return {
        "date": dt.date.today().isoformat(), "commit": _commit(), "command": "make test",
        "returncode": done.returncode, "wall_seconds": round(wall, 1),
        "target_seconds": TARGET_S, "cpus": os.cpu_count(),
        "load_before": [round(v, 2) for v in load_before],
        "load_after": [round(v, 2) for v in load_after], **parse(log),
        "log_tail": log.strip().splitlines()[-3:] if done.returncode else [],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true",
                    help="keep the clone (and its make test log) next to this checkout")
    args = ap.parse_args(argv)
    console = Console()
    with console.status("make test in a fresh clone with an empty HOME ..."):
        doc = run(args.keep)
    table = Table(title=f"cold `make test` ({doc['cpus']} CPUs, commit {doc['commit'][:10]})")
    for col in ("wall (whole command)", "pytest", "target", "outcome"):
        table.add_column(col, justify="right")
    outcome = ", ".join(f"{v:,} {k}" for k, v in doc["counts"].items()) or "no summary"
    pytest_s = doc["pytest_seconds"]
    table.add_row(f"{doc['wall_seconds'] / 60:.1f} min",
                  "-" if pytest_s is None else f"{pytest_s / 60:.1f} min",
                  f"{doc['target_seconds'] / 60:.0f} min", outcome)
    console.print(table)
    slow = Table(title="15 slowest tests")
    slow.add_column("s", justify="right")
    slow.add_column("test")
    for row in doc["slowest"][:15]:
        slow.add_row(f"{row['seconds']:.1f}", escape(f"{row['test']} ({row['phase']})"))
    console.print(slow)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(OUT, (json.dumps(with_version(doc), indent=1) + "\n").encode())
    console.print(f"wrote {OUT.relative_to(ROOT)}")
    return 0 if doc["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
