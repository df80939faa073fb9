"""Run a fuzzing campaign against the ``edgenn`` CLI and report outcome counts.

    python tools/fuzz.py --n 10000 --seed 1 --commands inspect,run,quantize --json fuzz.json

``--n`` mutants are split evenly over the families (byte-level on every seed file,
structure-aware ONNX, structure-aware TFLite once its mutators exist); each mutant runs
through every command in ``--commands`` (``compile`` only on every ``--compile-every``-th
mutant: it builds firmware). Prints a table of outcome counts per family and command, writes
the full report (counts and every finding with its mutant index) as JSON, keeps the files
that gave findings under ``--keep``, and exits 1 when there was any finding.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edgenn.utils import atomic_write_bytes  # noqa: E402
from tools.fuzzing import COMMANDS, Outcome, Report, run_campaign  # noqa: E402
from tools.fuzzing.seeds import families  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000, help="mutants in total (split over families)")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (mutant i is reproducible)")
    p.add_argument("--commands", default="inspect,run",
                   help=f"comma-separated, from {','.join(COMMANDS)}")
    p.add_argument("--families", default=None,
                   help="comma-separated: byte, onnx, tflite (default: all available)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write the report here ('-': stdout)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default 2)")
    p.add_argument("--compile-every", type=int, default=50,
                   help="run compile on every k-th mutant (it builds firmware)")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="copy the mutants that gave findings here")
    args = p.parse_args(argv)
    args.commands = [c for c in args.commands.split(",") if c]
    bad = set(args.commands) - set(COMMANDS)
    if bad or args.n <= 0:
        p.error(f"unknown commands {sorted(bad)}" if bad else "--n must be positive")
    return args


def table(reports: dict[str, Report]) -> Table:
    t = Table(title="fuzzing outcomes (commands run per outcome)", title_justify="left")
    t.add_column("family")
    t.add_column("command")
    for o in Outcome:
        t.add_column(o.value, justify="right")
    for family, report in reports.items():
        for cmd, counts in report.counts.items():
            t.add_row(family, cmd, *(str(counts[o]) for o in Outcome))
    return t


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(stderr=args.json == "-")
    with tempfile.TemporaryDirectory(prefix="edgenn-fuzz-seeds-") as tmp:
        fams = families(Path(tmp))
        chosen = args.families.split(",") if args.families else list(fams)
        missing = [f for f in chosen if f not in fams]
        if missing:
            console.print(f"unknown or unavailable families {missing}; have {sorted(fams)}")
            return 2
        reports: dict[str, Report] = {}
        start = time.perf_counter()
        for k, family in enumerate(chosen):
            files, mutators = fams[family]
            n = args.n // len(chosen) + (1 if k < args.n % len(chosen) else 0)
            keep = Path(args.keep) / family if args.keep else None
            reports[family] = run_campaign(files, mutators, n, args.commands, seed=args.seed,
                                           workers=args.workers,
                                           compile_every=args.compile_every, keep_dir=keep)
        elapsed = time.perf_counter() - start
    console.print(table(reports))
    findings = sum(r.n_findings for r in reports.values())
    console.print(f"{args.n} mutants, seed {args.seed}, {elapsed:.0f} s: {findings} findings")
    for family, report in reports.items():
        for f in report.findings[:20]:
            last = f.stderr_tail.splitlines()[-1] if f.stderr_tail else ""
            console.print(f"  {family} #{f.index} {f.seed_file} {f.mutator} {f.command}: "
                          f"{f.outcome.value}: {last[:160]}", markup=False)
    if args.json:
        doc = {"date": time.strftime("%Y-%m-%d"), "mutants": args.n, "seed": args.seed,
               "compile_every": args.compile_every, "seconds": round(elapsed, 1),
               "commands": args.commands,
               "families": {f: r.to_json() for f, r in reports.items()}}
        text = json.dumps(doc, indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            atomic_write_bytes(Path(args.json), text.encode())
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
