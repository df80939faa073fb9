"""Profile-based kernel and schedule search on this machine: Cha, Kwon and Lee (2023)'s
Tables 4-6 and convergence plots (Figs 9-11), and onnxruntime on the same models and threads.

For each target (the real cores, and 1 big + 1 LITTLE at 0.43 emulated on them) and model
(AlexNet, VGG16, MobileNetV2, GoogLeNet at 224x224, random weights):

1. *profile*: every point of every distinct layer's space (kernel x schedule) is measured
   once through ``LayerBench`` (warm-up, median of repeats; outputs checked against the
   reference runtime once per kernel). Resumable: one JSON per layer under ``--work``.
2. *search*: grid, random and TPE are replayed on those measurements with a budget of
   ``--trials`` per layer (the strategies' own ask/tell code; random and TPE over
   ``--seeds`` seeds). An online search with the same measurements would make the same
   choices; replaying lets every strategy see identical numbers and gives several seeds.
3. *tables*: whole-model latency (``compile_host`` + ``bench``) of
   Baseline = the ACL-like rules (default kernel, threads = smallest cluster's cores,
   unpinned, equal split); Schedule = default kernel, best schedule; Kernel = best kernel,
   default schedule; All = TPE's choice after ``--trials`` trials. Each row's best
   ``--refine-top`` candidates are measured again, longer, before it chooses (one noisy
   profile run must not pick a winner). Each row's choices are written to a tuning database
   that ``compile_host(schedule="tuned")`` reads, as in use; the rows are timed in
   interleaved rounds so that load changes on this shared machine hit them alike.
4. *onnxruntime*: ResNet-18 and MobileNetV2 with one thread, tuned edgenn vs ORT (and every
   model at the real core count, for context).

    .venv/bin/python benchmarks/host_tuning.py [--models alexnet,vgg16,mobilenet_v2,googlenet]
        [--targets real,1+1:0.43] [--trials 200] [--seeds 3] [--size 224]

Writes benchmarks/results/host_tuning.json and host_tuning_convergence_<target>.png.
Emulated results are labelled so everywhere: a LITTLE thread busy-waits (1/c - 1) x its
measured time per partition (docs/host.md).
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import json
import os
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgenn.cli.console import console, table
from edgenn.frontends import load
from edgenn.ir import Graph
from edgenn.tune.database import TuningDatabase
from edgenn.tune.measure import MeasureProtocol
from edgenn.tune.plot import COLORS
from edgenn.tune.session import LayerJob, plan_layers
from edgenn.tune.space import Point, point_key
from edgenn.tune.strategies import STRATEGIES, make_strategy
from edgenn.tune.target import HostTarget
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAPER_MODELS = ("alexnet", "vgg16", "mobilenet_v2", "googlenet")
ORT_MODELS = ("resnet18", "mobilenet_v2")
ROWS = ("baseline", "schedule", "kernel", "all")


def build_model(name: str, size: int, work: Path) -> Graph:
    from edgenn.models import imagenet_zoo, zoo

    builders: dict[str, Callable[..., onnx.ModelProto]] = {
        "alexnet": imagenet_zoo.alexnet, "vgg16": imagenet_zoo.vgg16,
        "googlenet": imagenet_zoo.googlenet, "mobilenet_v2": zoo.mobilenet_v2,
        "resnet18": zoo.resnet18}
    path = _model_path(work, name, size)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(builders[name](size=size), str(path))
    return load(path)


# -- 1. profile ----------------------------------------------------------------------------
@functools.cache
def code_version() -> str:
    """A digest of the host backend's sources (kernels, generator, pool) when this run
    started: cached profiles of another version are not reused."""
    h = hashlib.sha256()
    host = ROOT / "edgenn" / "backends" / "host"
    for path in sorted(p for p in host.rglob("*") if p.suffix in (".py", ".c", ".h")):
        h.update(str(path.relative_to(host)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def profile_dir(work: Path, target: HostTarget, protocol: MeasureProtocol) -> Path:
    tag = (f"w{protocol.warmup}r{protocol.repeats}m{protocol.max_ms or 0:g}"
           f"i{protocol.idle_ms:g}")
    return work / "profiles" / f"{target.fingerprint}-{code_version()}-{tag}"


def profile_layer(target: HostTarget, graph: Graph, job: LayerJob, protocol: MeasureProtocol,
                  work: Path) -> dict[str, Any]:
    """Every point of ``job``'s space measured once (cached in ``work``)."""
    digest = hashlib.sha256(job.key.encode()).hexdigest()[:20]
    path = profile_dir(work, target, protocol) / f"{digest}.json"
    if path.exists():
        cached = json.loads(path.read_text())
        if cached["key"] == job.key and cached["size"] == len(job.space):
            return dict(cached)
    measurer = target.measurer(job.node, graph, job.space, protocol, check="first")
    start = time.monotonic()
    points = []
    for point in job.space.points():
        result = measurer(point)
        points.append({"point": point, "ms": result.median_ms, "attrs": result.attrs})
    profile = {"key": job.key, "size": len(job.space), "fingerprint": target.fingerprint,
               "seconds": time.monotonic() - start, "points": points,
               # a profile taken on a busy machine misleads every row built on it: keep the
               # evidence beside the numbers
               "loadavg_after": list(os.getloadavg())}
    atomic_write_bytes(path, json.dumps(profile).encode())
    del measurer
    gc.collect()  # why: a layer's compiled variants hold packed weights (VGG's fc6: 400 MB)
    return profile


def profile_model(target: HostTarget, graph: Graph, protocol: MeasureProtocol,
                  work: Path) -> list[tuple[LayerJob, dict[str, Any]]]:
    jobs = plan_layers(graph, target)
    out = []
    for i, job in enumerate(jobs):
        t0 = time.monotonic()
        profile = profile_layer(target, graph, job, protocol, work)
        values = [p["ms"] for p in profile["points"] if p["ms"] is not None]
        console.print(f"  {graph.name} {i + 1}/{len(jobs)} {job.nodes[0]}: {len(values)}/"
                      f"{profile['size']} points ok, best {min(values, default=float('nan')):.3f}"
                      f" ms ({time.monotonic() - t0:.0f} s)")
        out.append((job, profile))
    return out


def table_of(profile: dict[str, Any]) -> dict[str, float | None]:
    return {point_key(p["point"]): p["ms"] for p in profile["points"]}


# -- 2. search (replayed) ----------------------------------------------------------------------
def replay(job: LayerJob, values: dict[str, float | None], strategy: str, seed: int,
           budget: int) -> list[tuple[Point, float | None]]:
    """The trials ``strategy`` makes on ``job`` with the profiled measurements."""
    s = make_strategy(strategy, job.space, seed=seed)
    trials: list[tuple[Point, float | None]] = []
    while len(trials) < budget and (point := s.ask()) is not None:
        value = values[point_key(point)]
        s.tell(point, value)
        trials.append((point, value))
    return trials


def best_so_far(trials: list[tuple[Point, float | None]], budget: int) -> list[float]:
    out: list[float] = []
    best = float("inf")
    for _, v in trials:
        if v is not None and v < best:
            best = v
        out.append(best)
    return out + [best] * (budget - len(out))


def layer_seed(key: str, seed: int) -> int:
    return (zlib.crc32(key.encode()) + seed * 1_000_003) % 2**32


def search_model(layers: list[tuple[LayerJob, dict[str, Any]]], budget: int, seeds: int
                 ) -> tuple[dict[str, list[list[float]]], dict[str, list[Point]]]:
    """Convergence curves per strategy (one per seed; model estimate = sum over layers of
    occurrences x best so far) and TPE's measured points per layer, best first (seed 0)."""
    curves: dict[str, list[list[float]]] = {}
    tpe_choice: dict[str, list[Point]] = {}
    for strategy in STRATEGIES:
        runs = 1 if strategy == "grid" else seeds
        curves[strategy] = []
        for seed in range(runs):
            total = np.zeros(budget)
            for job, profile in layers:
                trials = replay(job, table_of(profile), strategy,
                                layer_seed(job.key, seed), budget)
                total += np.array(best_so_far(trials, budget)) * len(job.nodes)
                if strategy == "tpe" and seed == 0:
                    done = sorted(((v, i, p) for i, (p, v) in enumerate(trials)
                                   if v is not None), key=lambda t: (t[0], t[1]))
                    tpe_choice[job.key] = [p for _, _, p in done]
            curves[strategy].append(total.tolist())
    return curves, tpe_choice


def row_candidates(job: LayerJob, profile: dict[str, Any], tpe_points: list[Point], top: int
                   ) -> dict[str, list[dict[str, Any]]]:
    """Per table row, its ``top`` best profiled points for this layer (fastest first):
    Schedule = default kernel, any schedule; Kernel = any kernel, default schedule;
    All = the best points TPE measured in its budget; plus the exhaustive best and the best
    with one thread (for onnxruntime)."""
    space = job.space
    default_kernel = space.default_point["algorithm"], space.default_point.get(
        f"variant[{space.default_point['algorithm']}]")
    ok = sorted((p for p in profile["points"] if p["ms"] is not None), key=lambda p: p["ms"])
    by_key = {point_key(p["point"]): p for p in ok}

    def best(pred: Callable[[Point], bool]) -> list[dict[str, Any]]:
        return [p for p in ok if pred(p["point"])][:top]

    def is_default_kernel(pt: Point) -> bool:
        return (pt["algorithm"], pt.get(f"variant[{pt['algorithm']}]")) == default_kernel

    return {
        "schedule": best(is_default_kernel),
        "kernel": best(lambda pt: pt["clusters"] == "default"),
        "all": [by_key[point_key(p)] for p in tpe_points if point_key(p) in by_key][:top],
        "exhaustive": best(lambda pt: True),
        "all_1thread": best(lambda pt: pt["clusters"] != "default" and sum(
            v for k, v in pt.items() if k.startswith("threads[")) == 1),
    }


def refine(target: HostTarget, graph: Graph, job: LayerJob, points: list[Point],
           protocol: MeasureProtocol, work: Path) -> dict[str, dict[str, Any]]:
    """``points`` measured again, longer: a single noisy profile run must not pick a row's
    winner (the winner's curse of taking the minimum of many noisy medians)."""
    digest = hashlib.sha256(job.key.encode()).hexdigest()[:20]
    path = profile_dir(work, target, protocol) / f"{digest}-refined.json"
    cache: dict[str, dict[str, Any]] = json.loads(path.read_text()) if path.exists() else {}
    todo = [p for p in points if point_key(p) not in cache]
    if todo:
        measurer = target.measurer(job.node, graph, job.space, protocol, check="never")
        for point in todo:
            result = measurer(point)
            cache[point_key(point)] = {"point": point, "ms": result.median_ms,
                                       "attrs": result.attrs,
                                       "loadavg": list(os.getloadavg())}
        atomic_write_bytes(path, json.dumps(cache).encode())
        del measurer
        gc.collect()
    return cache


def row_choices(target: HostTarget, graph: Graph, job: LayerJob, profile: dict[str, Any],
                tpe_points: list[Point], protocol: MeasureProtocol, work: Path, top: int
                ) -> tuple[dict[str, dict[str, Any] | None], float | None]:
    """Each row's point for this layer (the best of its candidates re-measured), and the
    baseline's re-measured median."""
    cands = row_candidates(job, profile, tpe_points, top)
    wanted = [job.space.default_point] + [c["point"] for row in cands.values() for c in row]
    unique = list({point_key(p): p for p in wanted}.values())
    refined = refine(target, graph, job, unique, protocol, work)

    def pick(row: list[dict[str, Any]]) -> dict[str, Any] | None:
        measured = [refined[point_key(c["point"])] for c in row]
        measured = [m for m in measured if m["ms"] is not None]
        return min(measured, key=lambda m: m["ms"]) if measured else None

    return ({row: pick(c) for row, c in cands.items()},
            refined[point_key(job.space.default_point)]["ms"])


# -- 3. whole-model latency ------------------------------------------------------------------------
def write_row_db(path: Path, fingerprint: str, picks: dict[str, dict[str, Any]]) -> str:
    """A tuning database holding exactly one record per workload: the row's choices."""
    import datetime

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = TuningDatabase(f"sqlite:///{path}")
    for key, pick in picks.items():
        study = db.study(key, fingerprint)
        db.record(study, pick["point"], pick["ms"], pick["attrs"], datetime.datetime.now())
    return db.url


def wait_for_quiet(max_load: float, timeout_s: float) -> dict[str, float]:
    """Wait (up to ``timeout_s``) until the 1-minute load average is below ``max_load``:
    pinned threads suffer far more than unpinned ones when other jobs share the cores, so
    tables timed under load compare the machine's business, not the schedules."""
    start = time.monotonic()
    while os.getloadavg()[0] >= max_load and time.monotonic() - start < timeout_s:
        time.sleep(5)
    return {"waited_s": round(time.monotonic() - start, 1), "load1": os.getloadavg()[0]}


def interleaved_ms(runners: dict[str, Callable[[], object]], rounds: int, warmup: int = 2
                   ) -> dict[str, float]:
    """Median ms of each runner, timed in interleaved rounds (A B C A B C ...) so that a
    load change on this shared machine hits every variant alike."""
    for run in runners.values():
        for _ in range(warmup):
            run()
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            t0 = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: float(statistics.median(t)) for name, t in times.items()}


def host_runner(graph: Graph, emulate: str | None, *, schedule: str, db: str | None = None,
                threads: int | None = None) -> tuple[Callable[[], object], list[str]]:
    """One inference of ``compile_host(...)`` as a callable, and the layers that fell back
    to the default although ``schedule="tuned"``."""
    from edgenn.backends.host.executable import compile_host

    exe = compile_host(graph, threads=threads, schedule=schedule, db=db,
                       emulate_hetero=emulate)
    fallbacks = [p["name"] for p in exe.placement()
                 if p["where"] == "host" and schedule == "tuned" and p["source"] != "tuned"]
    x = exe.example_inputs()
    return (lambda: exe.run(*x)), fallbacks


def ort_runner(graph_path: Path, threads: int) -> Callable[[], object]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(graph_path), opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    x = np.random.default_rng(0).random([int(d) for d in inp.shape], dtype=np.float32)
    return lambda: sess.run(None, {inp.name: x})


# -- plots ---------------------------------------------------------------------------------------
def plot_panels(results: dict[str, Any], target_label: str, path: Path, budget: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(results)
    cols = min(2, len(models))
    rows = -(-len(models) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.8 * rows), squeeze=False)
    for ax, model in zip(axes.flat, models, strict=False):
        curves = results[model]["convergence"]
        x = np.arange(1, budget + 1)
        for name, runs in curves.items():
            grid = np.array(runs)
            label = name if len(runs) == 1 else f"{name} (mean of {len(runs)} seeds)"
            ax.plot(x, grid.mean(axis=0), label=label, color=COLORS.get(name), linewidth=1.5)
            if len(runs) > 1:
                ax.fill_between(x, grid.min(axis=0), grid.max(axis=0), alpha=0.15,
                                color=COLORS.get(name), linewidth=0)
        # the curves' own first trial: every strategy measures the rule-based default first
        base = curves["grid"][0][0]
        ax.axhline(base, color="grey", linestyle="--", linewidth=1, label="baseline (ACL-like)")
        ax.set_title(f"{model}", fontsize=10)
        ax.set_xlabel("trials per layer")
        ax.set_ylabel("sum of layer medians (ms)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(models):]:
        ax.axis("off")
    fig.suptitle(f"Best latency found vs trials: {target_label}", fontsize=11)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


# -- main ----------------------------------------------------------------------------------------
def run_target(spec: str, models: list[str], args: argparse.Namespace, work: Path,
               protocol: MeasureProtocol, refine_protocol: MeasureProtocol) -> dict[str, Any]:
    emulate = None if spec == "real" else spec
    target = HostTarget(emulate_hetero=emulate)
    label = target.describe()
    console.print(f"[bold]{label}[/bold]: fingerprint {target.fingerprint}")
    out: dict[str, Any] = {"target": label, "emulated": bool(target.topology.emulated),
                           "fingerprint": target.fingerprint, "models": {}}
    earlier = _STATE.get("targets", {}).get(spec)
    if earlier is not None and earlier.get("fingerprint") == target.fingerprint:
        out["models"].update(earlier["models"])  # --merge: keep the models not rerun
    for name in models:
        graph = build_model(name, args.size, work)
        t0 = time.monotonic()
        layers = profile_model(target, graph, protocol, work)
        curves, tpe_choice = search_model(layers, args.trials, args.seeds)
        picks: dict[str, dict[str, dict[str, Any]]] = {r: {} for r in
                                                        (*ROWS[1:], "exhaustive", "all_1thread")}
        estimate = {r: 0.0 for r in (*ROWS, "exhaustive")}
        quiet = wait_for_quiet(args.max_load, args.quiet_timeout)
        chosen = []
        for job, profile in layers:
            choices, base_ms = row_choices(target, graph, job, profile,
                                           tpe_choice.get(job.key, []), refine_protocol, work,
                                           args.refine_top)
            chosen.append((job, profile, choices, base_ms))
            estimate["baseline"] += (base_ms or float("nan")) * len(job.nodes)
            for row, pick in choices.items():
                if pick is None:
                    continue
                picks[row][job.key] = pick
                if row in estimate:
                    estimate[row] += pick["ms"] * len(job.nodes)
        fallbacks: dict[str, list[str]] = {}
        runners: dict[str, Callable[[], object]] = {}
        runners["baseline"], _ = host_runner(graph, emulate, schedule="default")
        for row in ROWS[1:]:
            db = write_row_db(work / "rows" / f"{target.fingerprint}-{name}-{row}.db",
                              target.fingerprint, picks[row])
            runners[row], fallbacks[row] = host_runner(graph, emulate, schedule="tuned", db=db)
        load_before = os.getloadavg()
        latency = interleaved_ms(runners, args.bench_repeats)
        load = {"before": load_before, "after": os.getloadavg()}
        del runners
        gc.collect()
        entry: dict[str, Any] = {
            "latency_ms": latency,
            "gain_pct": {r: (latency["baseline"] / latency[r] - 1) * 100 for r in ROWS},
            "estimate_ms": estimate, "convergence": curves, "fallbacks": fallbacks,
            "loadavg_during_timing": load, "quiet_wait": quiet,
            "layers": [{"workload": job.key, "nodes": job.nodes, "space": len(job.space),
                        "profile_s": profile["seconds"],
                        "baseline_profiled_ms": table_of(profile)[
                            point_key(job.space.default_point)],
                        "baseline_ms": base_ms,
                        "choices": {row: (None if p is None else {
                            "ms": p["ms"], "kernel": p["attrs"].get("kernel"),
                            "schedule": p["attrs"].get("schedule_text")})
                            for row, p in choices.items()}}
                       for job, profile, choices, base_ms in chosen],
            "minutes": (time.monotonic() - t0) / 60,
        }
        if not target.topology.emulated and name in ORT_MODELS:
            entry["one_thread_db"] = write_row_db(
                work / "rows" / f"{target.fingerprint}-{name}-1thread.db", target.fingerprint,
                picks["all_1thread"])
        out["models"][name] = entry
        console.print(f"  {name}: baseline {latency['baseline']:.1f} ms, all "
                      f"{latency['all']:.1f} ms ({entry['gain_pct']['all']:+.0f}%)")
        save(args, out, spec)
    return out


_STATE: dict[str, Any] = {}


def save(args: argparse.Namespace, target_result: dict[str, Any], spec: str) -> None:
    _STATE.setdefault("targets", {})[spec] = target_result
    result = {"date": time.strftime("%Y-%m-%d"),
              "config": {k: v for k, v in vars(args).items() if k != "work"},
              "host_backend_version": code_version(),
              "machine_note": "2-core AMD EPYC VM shared with other jobs: timings are noisy; "
                              "compare ratios", **_STATE}
    atomic_write_bytes(Path(args.results) / "host_tuning.json",
                       json.dumps(with_version(result), indent=1).encode())


def onnxruntime_comparison(args: argparse.Namespace, work: Path,
                           real: dict[str, Any]) -> dict[str, Any]:
    """Tuned edgenn (best one-thread records), the rule-based default and onnxruntime, one
    thread each, interleaved; and onnxruntime on every core, for context."""
    out: dict[str, Any] = {}
    for name in ORT_MODELS:
        entry = real["models"].get(name)
        if entry is None or "one_thread_db" not in entry:
            continue
        graph = build_model(name, args.size, work)
        tuned, fb = host_runner(graph, None, schedule="tuned", db=entry["one_thread_db"],
                                threads=1)
        default, _ = host_runner(graph, None, schedule="default", threads=1)
        wait_for_quiet(args.max_load, args.quiet_timeout)
        ms = interleaved_ms({"edgenn_tuned": tuned, "edgenn_default": default,
                             "onnxruntime": ort_runner(_model_path(work, name, args.size), 1)},
                            args.bench_repeats * 2)
        out[name] = {"threads": 1, **{f"{k}_ms": v for k, v in ms.items()},
                     "ratio_tuned_over_ort": ms["edgenn_tuned"] / ms["onnxruntime"],
                     "fallbacks": fb}
        console.print(f"  {name} 1 thread: edgenn tuned {ms['edgenn_tuned']:.2f} ms, default "
                      f"{ms['edgenn_default']:.2f} ms, onnxruntime {ms['onnxruntime']:.2f} ms: "
                      f"tuned / ORT = {ms['edgenn_tuned'] / ms['onnxruntime']:.2f}")
    cores = len(HostTarget().topology.cpus)
    out["all_cores"] = {"threads": cores, "onnxruntime_ms": {}}
    for name, entry in real["models"].items():
        ms = interleaved_ms({"ort": ort_runner(_model_path(work, name, args.size), cores)},
                            args.bench_repeats)
        out["all_cores"]["onnxruntime_ms"][name] = ms["ort"]
        out["all_cores"].setdefault("edgenn_all_ms", {})[name] = entry["latency_ms"]["all"]
    return out


def _model_path(work: Path, name: str, size: int) -> Path:
    return work / "models" / f"{name}_{size}.onnx"


def print_tables(result: dict[str, Any]) -> None:
    for target in result["targets"].values():
        rows = []
        for model, entry in target["models"].items():
            lat, gain = entry["latency_ms"], entry["gain_pct"]
            rows.append((model, *(f"{lat[r]:.1f}" for r in ROWS),
                         *(f"{gain[r]:+.0f}%" for r in ROWS[1:])))
        console.print(table(
            f"{target['target']}: whole-model latency (ms) and gain over the baseline",
            ["model", "Baseline", "Schedule", "Kernel", "All", "Schedule %", "Kernel %",
             "All %"], rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(PAPER_MODELS))
    ap.add_argument("--targets", default="real,1+1:0.43")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-ms", type=float, default=200.0)
    ap.add_argument("--idle-ms", type=float, default=1.0,
                    help="pool idle time before each timed run (edgenn.tune.measure)")
    ap.add_argument("--bench-repeats", type=int, default=10)
    ap.add_argument("--refine-top", type=int, default=3,
                    help="re-measure each row's best N profiled points before choosing")
    ap.add_argument("--work", default=str(ROOT / "out" / "host_tuning"))
    ap.add_argument("--skip-ort", action="store_true")
    ap.add_argument("--max-load", type=float, default=0.3,
                    help="before re-measuring and timing a model, wait for the 1-minute load "
                         "average to drop below this")
    ap.add_argument("--quiet-timeout", type=float, default=900.0,
                    help="... but at most this many seconds")
    ap.add_argument("--results", default=str(RESULTS), help="where the JSON and PNGs go")
    ap.add_argument("--merge", action="store_true",
                    help="keep the targets and models of the previous JSON that this run does "
                         "not redo (e.g. add the emulated target's remaining models)")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the convergence PNGs from the JSON of a previous run")
    args = ap.parse_args()
    if args.replot:
        return replot(args)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    work = Path(args.work)
    protocol = MeasureProtocol(args.warmup, args.repeats, max_ms=args.max_ms,
                               idle_ms=args.idle_ms)
    refine_protocol = MeasureProtocol(2, 11, max_ms=4 * args.max_ms, idle_ms=args.idle_ms)
    saved_path = Path(args.results) / "host_tuning.json"
    if args.merge and saved_path.exists():
        saved = json.loads(saved_path.read_text())
        _STATE["targets"] = saved.get("targets", {})
        if saved.get("onnxruntime"):
            _STATE["onnxruntime"] = saved["onnxruntime"]
    models = [m for m in args.models.split(",") if m]
    specs = [s for s in args.targets.split(",") if s]
    for spec in specs:
        extra = [m for m in ORT_MODELS if spec == "real" and not args.skip_ort
                 and m not in models]
        result = run_target(spec, models + extra, args, work, protocol, refine_protocol)
        plot_panels({m: e for m, e in result["models"].items() if m in PAPER_MODELS},
                    result["target"],
                    Path(args.results) / f"host_tuning_convergence_{_slug(spec)}.png",
                    args.trials)
    if "real" in _STATE.get("targets", {}) and not args.skip_ort:
        _STATE["onnxruntime"] = onnxruntime_comparison(args, work, _STATE["targets"]["real"])
        save(args, _STATE["targets"]["real"], "real")
    print_tables(_STATE)
    console.print(f"wrote {Path(args.results) / 'host_tuning.json'}")
    return 0


def replot(args: argparse.Namespace) -> int:
    saved = json.loads((Path(args.results) / "host_tuning.json").read_text())
    for spec, target in saved["targets"].items():
        models = {m: e for m, e in target["models"].items() if m in PAPER_MODELS}
        plot_panels(models, target["target"],
                    Path(args.results) / f"host_tuning_convergence_{_slug(spec)}.png",
                    saved["config"]["trials"])
    return 0


def _slug(spec: str) -> str:
    return spec.replace("+", "p").replace(":", "_")


if __name__ == "__main__":
    sys.exit(main())
