"""Generated C kernels on this CPU's thread pool as a compile target (``host``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.host.schedule import parse_schedule
from edgenn.backends.options import option
from edgenn.backends.registry import Backend, register_backend
from edgenn.ir import Graph

SCHEDULE_MODES = ("tuned", "default")


def schedule_option(text: str) -> Any:
    """``--schedule``'s text: ``tuned``, ``default`` or a ThreadSchedule parsed from
    ``CLUSTER:THREADS:SHARE+...`` (empty: ``tuned``)."""
    if not text or text in SCHEDULE_MODES:
        return text or "tuned"
    return parse_schedule(text)


@dataclass(frozen=True)
class HostOptions:
    """``threads``, ``schedule`` ("tuned", "default" or a ThreadSchedule), ``db`` (tuning
    database URL), ``emulate_hetero`` (e.g. "1+1:0.43")."""

    threads: int | None = option(
        "--threads", type=int, metavar="T", minimum=1,
        help="with --target host: at most T threads per layer (the default schedule uses "
             "exactly T; default: the smallest cluster's core count)")
    schedule: Any = option(
        "--schedule", default="tuned", metavar="MODE", parse=schedule_option,
        help="with --target host: tuned (best tuning records, default where none; the "
             "default), default (rule-based: ACL's method rules, threads = smallest cluster, "
             "equal split, unpinned) or an explicit schedule CLUSTER:THREADS:SHARE+..., e.g. "
             "0:1:0.7+1:1:0.3")
    db: str | None = option(
        "--db", metavar="URL",
        help="with --target host: tuning database (SQLite or PostgreSQL URL; default: the "
             "tuner's, ~/.cache/edgenn/)")
    emulate_hetero: str | None = option(
        "--emulate-hetero", metavar="SPEC",
        help="with --target host: emulate big.LITTLE on this machine, e.g. 1+1:0.43 (1 big + "
             "1 LITTLE CPU at 0.43 of its speed); figures are labelled emulated")


def _compile(graph: Graph, **options: Any) -> Any:
    from edgenn.backends.host.executable import compile_host

    return compile_host(graph, **options)


register_backend(Backend("host", HostOptions, _compile, fusion=False,
                         description="float kernels compiled for this CPU, tuned schedules",
                         order=30))
