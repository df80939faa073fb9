"""docs/host_kernels.md's kernel table (benchmarks/host_kernel_layers.py) and docs/host.md's
schedule ratios (benchmarks/host_schedules.py)."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, run_of, table

NAMES = {"resnet18": "ResNet-18", "mobilenet_v2": "MobileNetV2", "alexnet": "AlexNet",
         "googlenet": "GoogLeNet", "vgg16": "VGG16"}
COLUMNS = (("default", "default (ACL-like)"), ("best", "best per layer"),
           ("winograd_4x4", "Winograd F(4x4)"), ("winograd_2x2", "F(2x2)"),
           ("direct", "direct"), ("im2col", "im2col"), ("indirect", "indirect"))


def _algorithms(model: dict[str, Any]) -> set[str]:
    """The algorithms measured on at least one layer (configurations are ``algo/tile``)."""
    return {key.split("/")[0] for row in model["layers"] for key in row["ms"]}


def kernel_layers(doc: dict[str, Any]) -> str:
    rows = []
    for name, m in doc["models"].items():
        ort_ms, totals, measured = m["ort_model_ms"], m["totals"], _algorithms(m)
        # why '-': an algorithm that applies to no layer of the model is not a result
        rows.append([NAMES.get(name, name), f"{ort_ms:.1f}",
                     *(f"{totals[k] / ort_ms:.2f}x" if k in ("default", "best") or k in measured
                       else "-" for k, _ in COLUMNS)])
    # why the test: runs before the benchmark recorded its onnxruntime version
    ort = f"onnxruntime {doc['onnxruntime']}" if "onnxruntime" in doc else "onnxruntime"
    return "\n".join([
        f"{run_of(doc)} on one thread ({doc['isa']}), {ort}: {HOST_KERNELS.source}. Ratio of "
        "edgenn's Conv / depthwise / dense layer total to onnxruntime's *whole model* (the "
        "calling thread's CPU time):", "",
        *table(["model", "ORT (ms)", *(h for _, h in COLUMNS)], rows)])


HOST_KERNELS = Section("host-kernel-layers", "host_kernel_layers", kernel_layers)


def schedules(doc: dict[str, Any]) -> str:
    """docs/host.md: the schedule ratios per model, wall clock and CPU critical path."""
    models = list(doc["models"])
    keys: list[str] = []
    for m in models:
        keys += [k for k in doc["models"][m]["ratios"] if k not in keys]
    rows = []
    for k in keys:
        cells = []
        for m in models:
            data = doc["models"][m]
            wall, cpu = data["ratios"].get(k), data["cpu_critical_ratios"].get(k)
            cells += ["-" if wall is None else f"{wall:.2f}", "-" if cpu is None else f"{cpu:.2f}"]
        rows.append([k, *cells])
    head = ["ratio", *(f"{NAMES.get(m, m)} {w}" for m in models for w in ("wall", "CPU"))]
    overhead = "; ".join(f"{k} {v:.1f} us" for k, v in doc["dispatch_overhead_us"].items())
    return "\n".join([
        f"{run_of(doc)}: {SCHEDULES.source}; {doc['size']}x{doc['size']} inputs, default kernel of "
        f"every layer, {doc['topology']}, emulated {doc['emulation']}. \"wall\": median "
        "latency; \"CPU\": the load-independent estimate (`cpu_critical_ms`).", "",
        *table(head, rows), "",
        f"Pool hand-over of an empty layer, Python call included: {overhead}."])


SCHEDULES = Section("host-schedules", "host_schedules", schedules)
SECTIONS = (HOST_KERNELS, SCHEDULES)
