"""``edgenn tune MODEL --strategy grid|random|tpe --trials N [--threads T] [--db URL]
[--emulate-hetero 1+1:0.43]``: search kernels and thread schedules per layer on this machine.

Every measurement goes to the tuning database at once, so an interrupted run loses nothing:
run the same command again and it continues. ``edgenn bench|run MODEL --target host`` applies
the best records automatically (``--schedule tuned``, the default).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from edgenn.cli.console import console, err_console, table
from edgenn.cli.options import (
    add_json_option,
    add_model_input_options,
    add_timing_options,
    model_input_options,
    staged_path,
    write_json,
)
from edgenn.outputs import new_file_guard, staged_files


def add_parser(sub: Any) -> None:
    from edgenn.tune.space import MODES
    from edgenn.tune.strategies import STRATEGIES

    p = sub.add_parser("tune", help="search kernels and thread schedules per layer (host)")
    p.add_argument("model")
    add_model_input_options(p)
    p.add_argument("--strategy", choices=STRATEGIES, default="tpe",
                   help="grid (fixed order), random, or tpe (Bayesian, optuna; the default)")
    p.add_argument("--trials", type=int, default=200,
                   help="measurements per layer in the database (default 200); a study that "
                        "has them already is done, so a rerun resumes an interrupted one")
    p.add_argument("--threads", type=int, default=None,
                   help="at most this many threads per layer (default: every CPU)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="tuning database: sqlite:///file.db, postgresql://user@host/db or a "
                        "file path (default: sqlite under ~/.cache/edgenn)")
    p.add_argument("--emulate-hetero", default=None, metavar="SPEC",
                   help="emulate big.LITTLE on this machine, e.g. 1+1:0.43 (1 big + 1 LITTLE "
                        "at 0.43 of its speed); results are labelled emulated")
    p.add_argument("--space", choices=MODES, default="all",
                   help="all (kernel x schedule), kernel (default schedule) or schedule "
                        "(default kernel)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--share-step", type=float, default=0.05,
                   help="granularity of the clusters' work shares (default 0.05)")
    add_timing_options(p, "per trial")
    p.add_argument("--max-ms", type=float, default=None,
                   help="stop repeating a trial once its timed runs took this long (>= 3 runs)")
    p.add_argument("--idle-ms", type=float, default=1.0,
                   help="sleep before each timed run so the pool's threads are asleep, as "
                        "between layers of a model (default 1; 0: back to back)")
    p.add_argument("--flush-cache", action="store_true",
                   help="evict the caches before every timed run")
    p.add_argument("--check", choices=("first", "always", "never"), default="first",
                   help="compare outputs with the reference runtime: the first time each "
                        "kernel config runs (default), every trial, or never")
    p.add_argument("--only", default=None, metavar="NODES",
                   help="tune only these layers (node names, comma-separated)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="convergence plot (default out/tune/MODEL-STRATEGY-convergence.png)")
    add_json_option(p, "the report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import optuna

    from edgenn.api import load_model
    from edgenn.tune.database import SQLITE_COMPANIONS, TuningDatabase, normalize_url, sqlite_path
    from edgenn.tune.errors import TuningError
    from edgenn.tune.measure import MeasureProtocol
    from edgenn.tune.plot import plot_convergence
    from edgenn.tune.session import plan_layers, tune_model
    from edgenn.tune.target import HostTarget

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    graph = load_model(args.model, **model_input_options(args))
    try:
        protocol = MeasureProtocol(args.warmup, args.repeats, args.flush_cache, args.max_ms,
                                   args.idle_ms)
        target = HostTarget(emulate_hetero=args.emulate_hetero, threads=args.threads)
        jobs = plan_layers(graph, target, share_step=args.share_step, mode=args.space)
    except ValueError as err:
        raise TuningError(str(err)) from None
    if args.only:
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = wanted - {n for job in jobs for n in job.nodes}
        if unknown:
            raise TuningError(f"--only: no tunable layer named {', '.join(sorted(unknown))}")
        jobs = [job for job in jobs if wanted & set(job.nodes)]
    emulated = " (emulated)" if target.topology.emulated else ""
    opened: list[TuningDatabase] = []

    def has_trials() -> bool:
        return any(s.n_trials for db in opened for s in db.studies())

    # why a guard, not a temporary copy: the database is a store that tuners append to
    # together, one SQL transaction per trial; a new file is removed only when the run
    # failed before it recorded a trial (a rerun resumes from the ones it holds)
    with new_file_guard(sqlite_path(normalize_url(args.db)), has_trials, SQLITE_COMPANIONS):
        db = TuningDatabase(args.db)
        opened.append(db)
        console.print(f"tuning {graph.name}: {len(jobs)} distinct layers, {args.strategy}, "
                      f"{args.trials} trials each, on {target.describe()}")
        with _Progress(len(jobs), args.trials) as bar:
            report = tune_model(graph, target, db, strategy=args.strategy, trials=args.trials,
                                seed=args.seed, protocol=protocol, share_step=args.share_step,
                                mode=args.space, check=args.check, jobs=jobs,
                                on_layer=bar.layer, on_trial=bar.trial)
    _print_table(report, emulated)
    plot = Path(args.plot) if args.plot else (
        Path("out/tune") / f"{_slug(graph.name)}-{args.strategy}-convergence.png")
    curve = report.convergence()
    # why staged: the plot and the JSON appear together, or neither (edgenn.outputs)
    with staged_files() as stage:
        if curve:
            plot_convergence({args.strategy: curve}, stage.path(plot),
                             f"{graph.name}: {args.strategy} on {target.describe()}",
                             baseline=report.baseline_ms)
        to_stdout = write_json(staged_path(stage, args.json), report.to_json())
    if curve:
        console.print(f"wrote {plot}")
    if args.json is not None and not to_stdout:
        console.print(f"wrote {args.json}")
    return 0


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "model"


def _ms(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _print_table(report: Any, emulated: str) -> None:
    rows = []
    for i, r in enumerate(report.layers):
        names = r.nodes[0] + (f" (+{r.count - 1})" if r.count > 1 else "")
        failed = sum(1 for _, v, _, _ in r.result.history if v is None)
        trials = f"{r.result.finished}" + (" (all)" if r.result.stopped == "exhausted" else "")
        trials += f", {failed} failed" if failed else ""
        gain = f"{r.gain_pct:+.1f}%" if r.gain_pct is not None else "-"
        rows.append((i, names, r.op, "x".join(map(str, r.output_shape[1:])), trials,
                     _ms(r.baseline_ms), _ms(r.best_ms), gain,
                     r.best_attrs.get("kernel", "-"),
                     r.best_attrs.get("schedule_text", r.best_attrs.get("schedule_label", "-"))))
    console.print(table(
        f"{report.model}: {report.strategy}, {report.trials} trials per layer{emulated}",
        ["#", "layer", "op", "output", "trials", "baseline ms", "best ms", "gain", "kernel",
         "schedule"], rows, right_align_from=4))
    base, tuned = report.baseline_ms, report.tuned_ms
    if base and tuned:
        console.print(
            f"sum of layer medians: baseline {base:.2f} ms -> tuned {tuned:.2f} ms "
            f"({(base / tuned - 1) * 100:+.1f}%)")
        console.print("the whole model with these records: edgenn bench MODEL --target host "
                      "--db URL (--schedule tuned is the default)")


class _Progress:
    """A rich progress bar over every layer's remaining trials (quiet when not a terminal)."""

    def __init__(self, layers: int, trials: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.layers = layers
        self.trials = trials
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                            TextColumn("{task.fields[best]}"), console=err_console,
                            transient=True, disable=not err_console.is_terminal)
        self.task = self.bar.add_task("tuning", total=layers * trials, best="")
        self.done_layers = 0

    def __enter__(self) -> _Progress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)  # type: ignore[arg-type]

    def layer(self, index: int, job: Any, finished_before: int) -> None:
        # the budget counts trials already in the database: those are done
        self.bar.update(self.task, completed=index * self.trials
                        + min(finished_before, self.trials),
                        description=f"layer {index + 1}/{self.layers} {job.nodes[0][:28]}",
                        best="")

    def trial(self, event: Any) -> None:
        best = f"best {event.best_ms:.3f} ms" if event.best_ms is not None else ""
        self.bar.update(self.task, advance=1, best=best)
