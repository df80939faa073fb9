"""How one command on one hostile file ended: the five classes a fuzzing campaign counts.

The contract for hostile input (docs of ``edgenn.cli.main``): the command either succeeds or
fails with exit code != 0 and exactly one line on stderr. Anything else is a finding.
"""

from __future__ import annotations

import re
from enum import StrEnum

# A line a Python warning prints (``file.py:12: RuntimeWarning: overflow ...``).
_WARNING_LINE = re.compile(r"\b\w*Warning: ")


class Outcome(StrEnum):
    OK = "ok"                    # exit 0, nothing on stderr
    CLEAN_ERROR = "clean error"  # exit != 0, exactly one stderr line, no warning or traceback
    TRACEBACK = "traceback"      # an exception escaped the CLI
    EXTRA_LINES = "extra lines"  # warnings or other lines beyond the one-line error
    HANG = "hang"                # the command did not finish within the time limit
    CRASH = "crash"              # the process died (signal, out of memory) without a verdict


FINDINGS = (Outcome.TRACEBACK, Outcome.EXTRA_LINES, Outcome.HANG, Outcome.CRASH)


def classify(returncode: int | None, stderr: str, timed_out: bool = False) -> Outcome:
    """The outcome of one command from its exit code and everything it wrote to stderr
    (``returncode`` None: the process died before reporting one)."""
    if timed_out:
        return Outcome.HANG
    if returncode is None:
        return Outcome.CRASH
    if "Traceback (most recent call last)" in stderr:
        return Outcome.TRACEBACK
    lines = [line for line in stderr.splitlines() if line.strip()]
    if any(_WARNING_LINE.search(line) for line in lines):
        return Outcome.EXTRA_LINES
    if returncode == 0:
        return Outcome.OK if not lines else Outcome.EXTRA_LINES
    return Outcome.CLEAN_ERROR if len(lines) == 1 else Outcome.EXTRA_LINES
