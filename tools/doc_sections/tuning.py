"""docs/tuning.md's tables and README's tuning figures, from benchmarks/host_tuning.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from doc_sections.common import Section, run_of, span, table

NAMES = {"alexnet": "AlexNet", "vgg16": "VGG16", "mobilenet_v2": "MobileNetV2",
         "googlenet": "GoogLeNet", "resnet18": "ResNet-18"}
ROWS = ("baseline", "schedule", "kernel", "all")
STRATEGIES = ("grid", "random", "tpe")
REAL, EMULATED = "real", "1+1:0.43"
DEFAULT_MODELS = "alexnet,vgg16,mobilenet_v2,googlenet"  # host_tuning.py's --models default


def _name(model: str) -> str:
    return NAMES.get(model, model)


def _source(doc: dict[str, Any]) -> str:
    """The citation, with the models this run measured (the benchmark's ``--models``)."""
    models = doc["config"]["models"]
    flag = "" if models == DEFAULT_MODELS else f" --models {models}"
    return (f"`benchmarks/results/{TABLES.json}`, written by "
            f"`.venv/bin/python benchmarks/host_tuning.py{flag}`")


def _when(doc: dict[str, Any]) -> str:
    c = doc["config"]
    return (f"{run_of(doc)} ({c['size']}x{c['size']} inputs, random weights, float32, "
            f"{c['trials']} trials per layer, {c['seeds']} seeds): {_source(doc)}")


def _latency_table(target: dict[str, Any], head: str) -> list[str]:
    rows = []
    for model, e in target["models"].items():
        lat, gain, est = e["latency_ms"], e["gain_pct"], e["estimate_ms"]
        rows.append([_name(model), f"{lat['baseline']:.1f}",
                     *(f"{lat[r]:.1f} ({gain[r]:+.0f}%)" for r in ROWS[1:]),
                     f"{est['baseline']:.1f} -> {est['all']:.1f}"])
    return table([head, "Baseline ms", "Schedule", "Kernel", "All",
                  "estimate Baseline -> All"], rows)


def tables(doc: dict[str, Any]) -> str:
    out = [_when(doc) + ". Whole models are measured (`compile_host` + `bench`, median of "
           f"{doc['config']['bench_repeats']} interleaved rounds); \"estimate\" is the sum of "
           "the tuned layers' profiled medians; gains are over the Baseline row.", ""]
    for spec, target in doc["targets"].items():
        label = ("2 real cores" if spec == REAL
                 else str(target["target"]).replace("emulated", "**emulated**"))
        out += [*_latency_table(target, label), ""]
    return "\n".join(out).rstrip()


def _first_within(curves: dict[str, list[list[float]]], best: float, pct: float = 5.0
                  ) -> dict[str, int | None]:
    """Per strategy: the first trial count whose mean-over-seeds estimate is within ``pct``
    of ``best``."""
    out: dict[str, int | None] = {}
    for s in STRATEGIES:
        mean = np.mean(np.array(curves[s]), axis=0)
        hit = np.nonzero(mean <= best * (1 + pct / 100))[0]
        out[s] = int(hit[0]) + 1 if len(hit) else None
    return out


def convergence(doc: dict[str, Any]) -> str:
    trials = doc["config"]["trials"]
    marks = [m for m in (25, 50, trials) if m <= trials]
    rows = []
    for spec, target in doc["targets"].items():
        where = "real" if spec == REAL else "emulated"
        for model, e in target["models"].items():
            curves = e["convergence"]
            means = {s: np.mean(np.array(curves[s]), axis=0) for s in STRATEGIES}
            best = min(float(m[-1]) for m in means.values())
            at = _first_within(curves, best)
            rows.append([f"{where}, {_name(model)}",
                         *(" / ".join(f"{means[s][k - 1]:.1f}" for k in marks)
                           for s in STRATEGIES),
                         " / ".join("-" if at[s] is None else str(at[s]) for s in STRATEGIES)])
    mark_text = " / ".join(map(str, marks))
    spaces = []
    for spec, target in doc["targets"].items():
        sizes = [layer["space"] for e in target["models"].values() for layer in e["layers"]]
        where = "the real cores" if spec == REAL else "the emulated pair"
        spaces.append(f"{where}: {span(sizes)} points per layer")
    return "\n".join([
        f"{_source(doc)}: the sum of layer medians (ms) after N trials per layer, mean over "
        f"the seeds; \"5% at\" = the first trial count within 5% of the best any strategy "
        f"reached at {trials}. Search spaces: {'; '.join(spaces)}.", "",
        *table(["target, model", f"grid {mark_text} trials", "random", "TPE",
                "5% at: grid / random / TPE"], rows)])


def onnxruntime(doc: dict[str, Any]) -> str:
    ort = doc.get("onnxruntime") or {}
    one = [(m, e) for m, e in ort.items() if m != "all_cores"]
    lines = [f"{_source(doc)}; one thread each, timed in interleaved rounds:", ""]
    lines += table(["model", "edgenn tuned ms", "edgenn default ms", "onnxruntime ms",
                    "tuned / onnxruntime"],
                   [[_name(m), f"{e['edgenn_tuned_ms']:.1f}", f"{e['edgenn_default_ms']:.1f}",
                     f"{e['onnxruntime_ms']:.1f}", f"{e['ratio_tuned_over_ort']:.2f}x"]
                    for m, e in one])
    every = ort.get("all_cores")
    if every:
        lines += ["", f"On all {every['threads']} cores (edgenn tuned vs onnxruntime, ms): "
                  + "; ".join(f"{_name(m)} {every['edgenn_all_ms'][m]:.1f} vs {ms:.1f}"
                              for m, ms in every["onnxruntime_ms"].items()) + "."]
    return "\n".join(lines)


def emulated_gain(doc: dict[str, Any]) -> str:
    """README: the range of All's gain over the rule-based default on the emulated pair."""
    target = doc["targets"][EMULATED]
    gains = [e["gain_pct"]["all"] for e in target["models"].values()]
    models = ", ".join(_name(m) for m in target["models"])
    return (f"on an emulated 1 big + 1 LITTLE, {models} run {span(gains, '%')} faster than "
            f"with the ACL-like rule-based default ({_source(doc)})")


def ort_one_thread(doc: dict[str, Any]) -> str:
    """README: tuned edgenn vs onnxruntime on one thread."""
    ort = doc["onnxruntime"]
    parts = [f"{_name(m)} {e['edgenn_tuned_ms']:.1f} ms vs {e['onnxruntime_ms']:.1f} ms "
             f"({e['ratio_tuned_over_ort']:.2f}x)" for m, e in ort.items() if m != "all_cores"]
    return f"on one thread, tuned edgenn vs onnxruntime: {'; '.join(parts)}"


TABLES = Section("tuning-tables", "host_tuning", tables)
SECTIONS = (TABLES, Section("tuning-convergence", "host_tuning", convergence),
            Section("tuning-onnxruntime", "host_tuning", onnxruntime),
            Section("tuning-emulated-gain", "host_tuning", emulated_gain),
            Section("tuning-ort-one-thread", "host_tuning", ort_one_thread))
