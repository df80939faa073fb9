"""Options every command spells the same way: ``--json PATH`` (``-`` for stdout), ``-o`` for
a file the command writes, ``--out-dir`` for a folder."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from edgenn.utils import atomic_write_bytes

STDOUT = "-"


def add_json_option(p: argparse.ArgumentParser, what: str, bare_means_stdout: bool = False
                    ) -> None:
    """``--json PATH``: also write ``what`` as JSON to PATH, or to stdout for ``-``. With
    ``bare_means_stdout`` a bare ``--json`` means ``--json -`` (inspect's historical form)."""
    extra: dict[str, Any] = {"nargs": "?", "const": STDOUT} if bare_means_stdout else {}
    p.add_argument("--json", default=None, metavar="PATH",
                   help=f"write {what} as JSON to PATH ('-': stdout)", **extra)


def write_json(path: str | None, data: Any) -> bool:
    """Write ``data`` for ``--json``; True when it went to stdout (print nothing else there)."""
    if path is None:
        return False
    text = json.dumps(data, indent=2) + "\n"
    if path == STDOUT:
        sys.stdout.write(text)
        return True
    atomic_write_bytes(path, text.encode())
    return False


def add_out_dir_option(p: argparse.ArgumentParser, default: str, what: str) -> None:
    """``--out-dir DIR`` (``--out`` kept as an alias): the folder a demo writes into."""
    p.add_argument("--out-dir", "--out", dest="out", default=default, metavar="DIR",
                   help=f"folder for {what} (default: {default})")


DEFAULT_WARMUP = 3  # untimed runs before the timed ones (caches, page faults, thread start-up)
DEFAULT_REPEATS = 10  # timed runs; the median is reported


def add_timing_options(p: argparse.ArgumentParser, what: str) -> None:
    """``--warmup N`` and ``--repeats N`` with the same defaults on every command that times."""
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                   help=f"untimed runs first ({what}; default {DEFAULT_WARMUP})")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help=f"timed runs, the median is reported ({what}; default "
                        f"{DEFAULT_REPEATS})")
