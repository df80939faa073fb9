"""README's figure for the cold test run, from benchmarks/cold_test_run.py."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, n


def cold_run(doc: dict[str, Any]) -> str:
    counts = ", ".join(f"{n(v)} {k}" for k, v in doc["counts"].items())
    slowest = doc["slowest"][0] if doc["slowest"] else None
    tail = (f"; the slowest test, `{slowest['test']}`, {slowest['seconds']:.0f} s"
            if slowest else "")
    verdict = "" if doc["returncode"] == 0 else "**the run failed**: "
    return (f"{verdict}on {doc['date']}, from a fresh clone with an empty `~/.cache`, "
            f"`make test` took "
            f"{doc['wall_seconds'] / 60:.1f} min in all (virtual environment included; pytest "
            f"{doc['pytest_seconds'] / 60:.1f} min: {counts}) on a {doc['cpus']}-CPU host at "
            f"load average {doc['load_before'][0]:.1f}, against a target of "
            f"{doc['target_seconds'] / 60:.0f} min{tail} ({COLD.source})")


COLD = Section("cold-test-run", "cold_test_run", cold_run)
SECTIONS = (COLD,)
