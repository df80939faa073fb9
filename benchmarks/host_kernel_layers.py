"""Single-thread latency of the host kernels per model layer, per algorithm, vs onnxruntime.

For every distinct Conv2D / depthwise / FullyConnected layer shape of each model (times the
number of layers of that shape) it times every candidate configuration (algorithm x
micro-kernel) on one thread: median of ``--repeats`` runs after warm-up, whole layer through
the C entry point (``run_partition`` over all partitions, no Python per partition). Times
are the calling thread's CPU time (``time.thread_time``), for edgenn and onnxruntime alike
(one intra-op thread: ORT computes on the calling thread): on a machine shared with other
jobs, wall time mostly measures who else is running. Totals:

* ``default``: the ACL-like rule (``default_config``) for every layer;
* ``best``: the fastest configuration per layer (what kernel tuning can reach on one thread);
* ``<algorithm>``: that algorithm with its best micro-kernel where it applies, the default
  elsewhere (so e.g. ``winograd_4x4`` is a whole-network figure);
* onnxruntime in the same run, one thread: the whole model, and the sum of its Conv / Gemm
  node times from its profiler (the layers edgenn's kernels compute; ORT fuses the residual
  Add and ReLU into its convolutions, and its NCHWc reorders are excluded; wall time, as
  its profiler has no CPU clock).

Results print as a table and go to benchmarks/results/host_kernel_layers.json. The machine
is shared: compare ratios from one run, not absolute numbers across runs.

    .venv/bin/python benchmarks/host_kernel_layers.py [--models resnet18,mobilenet_v2,...]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from edgenn.backends.host.kernels import (
    ALGORITHMS,
    HostKernelConfig,
    HostOp,
    candidate_configs,
    default_config,
    host_isa,
    host_shape,
    prepare,
)
from edgenn.backends.ref import compile_ref
from edgenn.frontends.onnx import load_onnx
from edgenn.models.imagenet_zoo import alexnet, googlenet, vgg16
from edgenn.models.zoo import mobilenet_v2, resnet18
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

MODELS = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "alexnet": alexnet,
          "vgg16": vgg16, "googlenet": googlenet}
OUT = Path(__file__).resolve().parent / "results" / "host_kernel_layers.json"


def time_op(op: HostOp, x: np.ndarray, ref: np.ndarray, repeats: int) -> tuple[float, float]:
    """(median milliseconds of one whole-layer run, max error relative to the output scale)."""
    out = np.empty(op.out_shape, np.float32)
    buf = op.scratch()
    parts = op.plan.partition_count
    for _ in range(2):
        op.run_partition(x, out, 0, parts, buf)
    err = float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-30))
    times = []
    for _ in range(repeats):
        t0 = time.thread_time()
        op.run_partition(x, out, 0, parts, buf)
        times.append(time.thread_time() - t0)
    return float(np.median(times)) * 1e3, err


def ort_times(model: Any, repeats: int) -> tuple[float, float]:
    """(whole-model median ms, sum of Conv/Gemm node medians ms) on one thread."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    data = model.SerializeToString()
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 3, 224, 224), np.float32)
    for _ in range(3):
        sess.run(None, {"input": x})
    times = []
    for _ in range(repeats):
        t0 = time.thread_time()
        sess.run(None, {"input": x})
        times.append(time.thread_time() - t0)
    so.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        so.profile_file_prefix = str(Path(tmp) / "ort")
        prof = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        for _ in range(repeats):
            prof.run(None, {"input": x})
        events = json.loads(Path(prof.end_profiling()).read_text())
    per_node: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and \
                e["args"].get("op_name") in ("Conv", "Gemm", "FusedConv", "FusedGemm", "MatMul"):
            per_node[e["name"]].append(e["dur"])
    layers = sum(float(np.median(v)) for v in per_node.values()) / 1e3
    return float(np.median(times)) * 1e3, layers


def bench_model(name: str, repeats: int, cache: str | None) -> dict[str, Any]:
    model = MODELS[name]()
    graph = load_onnx(model.SerializeToString())
    exe = compile_ref(graph)
    exe.run(np.random.default_rng(0).random((1, 3, 224, 224), np.float32), keep=True)
    count: Counter[Any] = Counter()
    first: dict[Any, Any] = {}
    for node in graph.nodes:
        shape = host_shape(node, graph)
        if shape is not None:
            count[shape] += 1
            first.setdefault(shape, node)
    layers = []
    for shape, node in first.items():
        x, ref = exe.values[node.inputs[0]], exe.values[node.outputs[0]]
        row: dict[str, Any] = {"node": node.name, "count": count[shape],
                               "shape": repr(shape), "default": default_config(node, graph).label,
                               "ms": {}, "max_rel_error": {}}
        for cfg in candidate_configs(node, graph):
            op = prepare(node, graph, cfg, cache_dir=cache)
            row["ms"][cfg.label], row["max_rel_error"][cfg.label] = time_op(op, x, ref, repeats)
        layers.append(row)
        best = min(row["ms"], key=row["ms"].get)
        worst = max(row["max_rel_error"].values())
        print(f"  {name} {node.name:28s} x{count[shape]} default {row['default']:20s} "
              f"{row['ms'][row['default']]:8.3f} ms  best {best:20s} {row['ms'][best]:8.3f} ms"
              f"  max rel error {worst:.1e}", flush=True)
    ort_model, ort_layers = ort_times(model, max(repeats, 10))
    return {"layers": layers, "totals": totals(layers), "ort_model_ms": ort_model,
            "ort_layers_ms": ort_layers}


def totals(layers: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for row in layers:
        ms, n = row["ms"], row["count"]
        out["default"] += n * ms[row["default"]]
        out["best"] += n * min(ms.values())
        for algo in ALGORITHMS:
            mine = [v for k, v in ms.items() if HostKernelConfig(*k.split("/")).algorithm == algo]
            out[algo] += n * (min(mine) if mine else ms[row["default"]])
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,alexnet,googlenet,vgg16")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cache-dir", default=None, help="compiled-kernel cache directory")
    parser.add_argument("--json", default=str(OUT))
    args = parser.parse_args()
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "isa": host_isa().name,
                               "threads": 1, "onnxruntime": ort.__version__, "models": {}}
    for name in args.models.split(","):
        results["models"][name] = bench_model(name, args.repeats, args.cache_dir)
        report(name, results["models"][name])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.json, json.dumps(with_version(results), indent=1).encode())


def report(name: str, res: dict[str, Any]) -> None:
    """The per-model totals table (also for re-printing a saved JSON)."""
    t = res["totals"]
    print(f"\n{name}: onnxruntime whole model {res['ort_model_ms']:.2f} ms, "
          f"its Conv/Gemm layers {res['ort_layers_ms']:.2f} ms")
    print(f"  {'kernels':14s} {'layers ms':>9s}  {'/ORT model':>10s}  {'/ORT layers':>11s}")
    for key in ("default", "best", *ALGORITHMS):
        if key in t:
            print(f"  {key:14s} {t[key]:9.2f}  {t[key] / res['ort_model_ms']:9.2f}x  "
                  f"{t[key] / res['ort_layers_ms']:10.2f}x")


if __name__ == "__main__":
    main()
