"""A fuzzing campaign: mutate seed files, run ``edgenn`` commands on every mutant, count how
each command ended (``tools.fuzzing.outcome``).

``run_campaign(files, mutators, n, commands)`` is the whole API: ``tools/fuzz.py`` runs long
campaigns with it and ``tests/test_fuzz.py`` short ones. Mutant ``i`` of a campaign with seed
``s`` is a pure function of ``(s, i)``, the seed files and the mutator list, so any finding is
reproduced by re-running that one index (``mutant(...)``), and ``keep_dir`` saves the files
that gave findings.

The commands run in worker processes (``tools.fuzzing.worker``), one per core: in-process
``edgenn.cli.main.main`` calls, so a mutant costs milliseconds, with the time limit enforced
from outside (a hung worker is killed and replaced).
"""

from __future__ import annotations

import json
import os
import queue
import random
import select
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.fuzzing.outcome import FINDINGS, Outcome, classify

Mutator = Callable[[bytes, random.Random], bytes]
_ROOT = Path(__file__).resolve().parents[2]  # the checkout holding tools/ and edgenn/

COMMANDS = ("inspect", "run", "quantize", "compile")
# Seconds per command before it counts as a hang; compile builds firmware, so it gets more.
TIMEOUTS = {"inspect": 20.0, "run": 30.0, "quantize": 30.0, "compile": 180.0}


@dataclass(frozen=True)
class Finding:
    """One command that did not end in ``ok`` or a clean one-line error."""

    index: int
    seed_file: str
    mutator: str
    command: str
    outcome: Outcome
    stderr_tail: str
    kept: str | None = None


@dataclass
class Report:
    """Outcome counts per command, the findings, and what the campaign ran."""

    seed: int
    mutants: int
    counts: dict[str, Counter[Outcome]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def total(self, outcome: Outcome) -> int:
        return sum(c[outcome] for c in self.counts.values())

    @property
    def n_findings(self) -> int:
        return sum(self.total(o) for o in FINDINGS)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "mutants": self.mutants,
            "counts": {cmd: {o.value: c[o] for o in Outcome} for cmd, c in self.counts.items()},
            "totals": {o.value: self.total(o) for o in Outcome},
            "findings": [{"index": f.index, "seed_file": f.seed_file, "mutator": f.mutator,
                          "command": f.command, "outcome": f.outcome.value,
                          "stderr_tail": f.stderr_tail, "kept": f.kept}
                         for f in self.findings],
        }


def mutant(files: Sequence[Path], mutators: Sequence[Mutator], seed: int,
           index: int) -> tuple[Path, Mutator, bytes]:
    """Mutant ``index`` of the campaign ``seed``: (seed file, mutator, mutated bytes)."""
    # why a string seed: random.Random hashes it with SHA-512, stable across processes and
    # Python versions (hash() of a tuple is not)
    rng = random.Random(f"edgenn-fuzz:{seed}:{index}")
    path = rng.choice(list(files))
    fn = rng.choice(list(mutators))
    data = path.read_bytes()
    for _ in range(10):  # why: a mutator may return the file unchanged (nothing to change)
        out = fn(data, rng)
        if out != data:
            return path, fn, out
    return path, fn, out


class _Worker:
    """One ``tools.fuzzing.worker`` process, restarted after a hang or a crash."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        # why PYTHONPATH: the worker is a module of this checkout's tools/, found from any cwd
        path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
        return subprocess.Popen([sys.executable, "-m", "tools.fuzzing.worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)

    def call(self, request: dict[str, Any], timeout: float) -> tuple[int | None, str, bool]:
        """(exit code or None if the worker died, stderr, timed out)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return None, "", False
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return None, "", True
        line = self.proc.stdout.readline()
        if not line:  # the worker died: a signal, or the kernel's OOM killer
            code = self.proc.wait()
            self.proc = None
            return None, f"worker died with status {code}", False
        reply = json.loads(line)
        return int(reply["returncode"]), str(reply["stderr"]), False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()  # only this worker, which we started
            self.proc.wait()
            self.proc = None


def _commands_for(index: int, commands: Sequence[str], compile_every: int) -> list[str]:
    # why a sample: compile builds and links firmware (seconds per mutant)
    return [c for c in commands if c != "compile" or index % compile_every == 0]


def run_campaign(files: Sequence[Path], mutators: Sequence[Mutator], n: int,
                 commands: Sequence[str] = ("inspect", "run"), *, seed: int = 0,
                 workers: int | None = None, compile_every: int = 50,
                 keep_dir: Path | None = None, start: int = 0,
                 timeouts: dict[str, float] | None = None,
                 on_result: Callable[[int, str, Outcome], None] | None = None) -> Report:
    """Run ``n`` mutants (indices ``start .. start+n-1``) of ``files`` made by ``mutators``
    through ``commands`` (any of ``inspect``, ``run``, ``quantize``, ``compile``; compile only
    on every ``compile_every``-th mutant). Findings' files are copied to ``keep_dir``."""
    unknown = set(commands) - set(COMMANDS)
    if unknown or not files or not mutators:
        raise ValueError(f"bad campaign: commands {sorted(unknown)} unknown, "
                         f"{len(files)} files, {len(mutators)} mutators")
    limits = {**TIMEOUTS, **(timeouts or {})}
    report = Report(seed=seed, mutants=n, counts={c: Counter() for c in commands})
    jobs: queue.Queue[int] = queue.Queue()
    for i in range(start, start + n):
        jobs.put(i)
    lock = threading.Lock()
    if keep_dir is not None:
        keep_dir.mkdir(parents=True, exist_ok=True)

    def drive(worker: _Worker) -> None:
        while True:
            try:
                i = jobs.get_nowait()
            except queue.Empty:
                return
            path, fn, data = mutant(files, mutators, seed, i)
            with tempfile.TemporaryDirectory(prefix="edgenn-fuzz-") as tmp:
                model = Path(tmp) / f"mutant{i}{path.suffix}"
                model.write_bytes(data)
                for cmd in _commands_for(i, commands, compile_every):
                    workdir = Path(tmp) / cmd
                    workdir.mkdir()
                    rc, err, hung = worker.call({"command": cmd, "model": str(model),
                                                 "workdir": str(workdir), "seed": i},
                                                limits[cmd])
                    outcome = classify(rc, err, hung)
                    with lock:
                        report.counts[cmd][outcome] += 1
                        if outcome in FINDINGS:
                            kept = None
                            if keep_dir is not None:
                                kept_path = keep_dir / f"{seed}_{i}_{fn.__name__}{path.suffix}"
                                kept_path.write_bytes(data)
                                kept = str(kept_path)
                            report.findings.append(Finding(
                                i, path.name, fn.__name__, cmd, outcome,
                                "\n".join(err.strip().splitlines()[-4:]), kept))
                    if on_result is not None:
                        on_result(i, cmd, outcome)

    pool = [_Worker() for _ in range(workers or min(2, os.cpu_count() or 1))]
    threads = [threading.Thread(target=drive, args=(w,), daemon=True) for w in pool]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for w in pool:
            w.stop()
    report.findings.sort(key=lambda f: (f.index, f.command))
    return report
