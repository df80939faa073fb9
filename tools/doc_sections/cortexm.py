"""Figures of docs/cortexm.md and README.md: the emulator's speed
(benchmarks/emulator_throughput.py), the MLPerf Tiny ratio (benchmarks/mlperf_tiny.py), the
device SVM's accuracy gap (benchmarks/svm_cnn_device.py)."""

from __future__ import annotations

import statistics
from typing import Any

from doc_sections.common import Section


def throughput(doc: dict[str, Any]) -> str:
    rates = [m["instructions_per_second"] for m in doc["models"]]
    load = statistics.mean(doc["load_average_1min"])
    return (f"about {doc['median_instructions_per_second'] / 1e6:.1f} M instructions/s with "
            f"the cycle model on: the median over {len(rates)} models "
            f"({min(rates) / 1e6:.1f}-{max(rates) / 1e6:.1f} M), measured on "
            f"{doc['date']} on a {doc['host_cpus']}-CPU host at load average {load:.1f} "
            "(`benchmarks/results/emulator_throughput.json`, "
            "`benchmarks/emulator_throughput.py`)")




def mlperf_tflm_ratio(doc: dict[str, Any]) -> str:
    """How many times edgenn's cycles TFLite Micro + CMSIS-NN takes, over the models."""
    ratios = [m["tflm"]["speedup"] for m in doc["models"] if (m.get("tflm") or {}).get("speedup")]
    return (f"{min(ratios):.1f}-{max(ratios):.1f}x the cycles "
            "(`benchmarks/results/mlperf_tiny.json`, table below)")


def mlperf_missed(doc: dict[str, Any]) -> str:
    """The models whose cycle target (published / 1.3) is missed, with the margins."""
    parts = []
    for m in doc["models"]:
        g = m.get("targets") or {}
        if g.get("cycles_met") is not False:
            continue
        tflm = (m.get("tflm") or {}).get("speedup")
        parts.append(
            f"{m.get('task') or m['model']}: {m['cycles'] / 1e6:.2f} M cycles against "
            f"{g['cycles'] / 1e6:.2f} M; still {g['published_speedup']:.2f}x below the best "
            "published real-board figure"
            + (f" and {tflm:.2f}x below TFLite Micro + CMSIS-NN" if tflm else ""))
    return ("; ".join(parts) or "none") + " (`benchmarks/results/mlperf_tiny.json`)"


def svm_gap(doc: dict[str, Any]) -> str:
    """The largest gap between device and host-fed accuracy over the training steps."""
    return (f"within {100 * doc['summary']['max_accuracy_gap']:.2f} points of the host-fed "
            "accuracy at every step")


SECTIONS = (
    Section("emulator-throughput", "emulator_throughput", throughput),
    Section("mlperf-tflm-ratio", "mlperf_tiny", mlperf_tflm_ratio),
    Section("mlperf-missed", "mlperf_tiny", mlperf_missed),
    Section("svm-device-gap", "svm_cnn_device", svm_gap),
)
