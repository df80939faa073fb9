"""SMOClassifier on the host against scikit-learn's SVC(kernel="linear") (LIBSVM), and
continued training of the SVM layer batch after batch.

1. Raw MNIST pixels (pixels / 255, the house 8,000 / 2,000 split) and the int8 MNIST CNN's
   64 penultimate features (dequantized, as the SVM layer sees them), same C: accuracy, host
   training time (CPU and wall, best of --repeats, runs interleaved, one BLAS thread as LIBSVM
   has one), the ratio to LIBSVM, support vectors,
   SMO iterations and the largest per-pair difference of the dual objective, for the numpy
   solver and the native (C) one when a host compiler is available.
2. The SVM layer on the CNN features, trained batch after batch (a --capacity buffer) under
   each carry policy, on a shuffled stream and on a class-by-class stream (all 0s, then all
   1s, ...: the device meeting classes it never saw): test accuracy and SMO iterations per
   training step, with the full-data SVM as the ceiling (table, JSON, PNG).

    .venv/bin/python benchmarks/svm_host_vs_libsvm.py [--repeats 3] [--capacity 100]

Writes benchmarks/results/svm_host_vs_libsvm.json and svm_continued_training.png.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from edgenn.api import compile_model, load_model, quantize_model
from edgenn.cli.console import console, progress, table
from edgenn.data import mnist_split
from edgenn.evaluate import images_to_input
from edgenn.models import shipped_model_path
from edgenn.svm import CARRY_POLICIES, SMOClassifier, attach_svm_head, penultimate_features
from edgenn.svm.ovo import pair_objectives
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks/results"


def native_available() -> bool:
    try:
        from edgenn.svm import native
    except ImportError:
        return False
    return bool(native.available())


def compare(name: str, x: np.ndarray, y: np.ndarray, xt: np.ndarray, yt: np.ndarray, C: float,
            repeats: int, solvers: list[str]) -> dict[str, Any]:
    """Fit LIBSVM and each solver ``repeats`` times (interleaved); best time and figures."""
    fitters: dict[str, Any] = {"libsvm": lambda: SVC(kernel="linear", C=C).fit(x, y)}
    for s in solvers:
        fitters[s] = lambda s=s: SMOClassifier(C=C, solver=s).fit(x, y)
    if "native" in solvers:
        fitters["native"]()  # why: the first call compiles the C library; do not time that
    times: dict[str, list[float]] = {k: [] for k in fitters}
    cpu: dict[str, list[float]] = {k: [] for k in fitters}
    models: dict[str, Any] = {}
    # why: LIBSVM is single-threaded; one BLAS thread compares the algorithms, and CPU time
    # stays meaningful on a machine shared with other jobs (wall time is reported as well)
    with threadpool_limits(limits=1), progress(f"{name}: fits", repeats * len(fitters)) as adv:
        for _ in range(repeats):
            for key, fit in fitters.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                models[key] = fit()
                times[key].append(time.perf_counter() - start)
                cpu[key].append(time.process_time() - start_cpu)
                adv()
    _, class_index = np.unique(y, return_inverse=True)
    objectives = {k: pair_objectives(x, class_index, m.support_, m.n_support_, m.dual_coef_)
                  for k, m in models.items()}
    lib = models["libsvm"]
    out: dict[str, Any] = {"n_train": len(x), "n_test": len(xt), "n_features": x.shape[1],
                           "C": C, "solvers": {}}
    for key, model in models.items():
        rel = np.abs(objectives[key] - objectives["libsvm"]) / np.abs(objectives["libsvm"])
        out["solvers"][key] = {
            "accuracy": float(np.mean(model.predict(xt) == yt)),
            "cpu_seconds": min(cpu[key]),
            "cpu_ratio_to_libsvm": min(cpu[key]) / min(cpu["libsvm"]),
            "wall_seconds": min(times[key]),
            "wall_ratio_to_libsvm": min(times[key]) / min(times["libsvm"]),
            "cpu_seconds_all": cpu[key],
            "wall_seconds_all": times[key],
            "n_sv": int(model.n_support_.sum()),
            "n_sv_rel_diff": abs(int(model.n_support_.sum()) - int(lib.n_support_.sum()))
            / int(lib.n_support_.sum()),
            "iterations": int(np.sum(model.n_iter_)),
            "objective_max_rel_diff": float(rel.max()),
            "predictions_agree_with_libsvm": float(np.mean(model.predict(xt) == lib.predict(xt))),
        }
    return out


def cnn_features() -> dict[str, Any]:
    """The int8 CNN's penultimate features of the train and test digits, and the SVM head."""
    graph = load_model(shipped_model_path("mnist_cnn"))
    train, y = mnist_split("train")
    test, yt = mnist_split("test")
    q = quantize_model(graph, images_to_input(graph, train[::40]))
    feat = penultimate_features(q)
    probe = compile_model(attach_svm_head(q, feat, classes=range(10), capacity=2))
    out: dict[str, Any] = {"int8": q, "feature": feat, "y": y, "yt": yt}
    for key, images in (("x", train), ("xt", test)):
        parts = []
        with progress(f"CNN features ({key})", len(images)) as advance:
            for start in range(0, len(images), 500):
                probe.run(images_to_input(q, images[start:start + 500]), keep=True)
                parts.append(probe.values[feat])
                advance(len(parts[-1]))
        out[f"q{key}"] = np.concatenate(parts)  # int8, the layer's input
        out[key] = probe.layers[-1].features(out[f"q{key}"]).astype(np.float64)
    return out


def continued_training(cnn: dict[str, Any], order: np.ndarray, capacity: int, steps: int,
                       C: float, label: str) -> dict[str, Any]:
    """Stream the training samples in ``order`` into the SVM layer under each carry policy;
    test accuracy and SMO iterations after each training step (at most ``steps``)."""
    curves: dict[str, Any] = {}
    with progress(f"continued training ({label})", len(CARRY_POLICIES) * steps) as advance:
        for carry in CARRY_POLICIES:
            head = attach_svm_head(cnn["int8"], cnn["feature"], classes=range(10),
                                   capacity=capacity, C=C, carry=carry)
            layer = compile_model(head).layers[-1]
            acc, iters, seen, seconds, carried = [], [], [], [], []
            pos = 0
            while len(acc) < steps and pos < len(order):
                take = order[pos:pos + layer.buffer.room]
                pos += len(take)
                for report in layer.train(cnn["qx"][take], labels=cnn["y"][take]):
                    scores = layer.run(cnn["qxt"])[0]
                    acc.append(float(np.mean(scores.argmax(axis=1) == cnn["yt"])))
                    iters.append(int(report.iterations.sum()))
                    seconds.append(report.seconds)
                    carried.append(report.carried_in)
                    seen.append(pos)
                    advance()
            curves[carry] = {"accuracy": acc, "iterations": iters, "samples_seen": seen,
                             "carried_in": carried, "seconds": seconds}
    return curves


def plot(streams: dict[str, Any], ceiling: float, capacity: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    titles = {"shuffled": "shuffled stream", "class_by_class": "class by class (0, 1, ..., 9)"}
    for ax, (stream, curves) in zip(axes[:2], streams.items(), strict=True):
        for carry, c in curves.items():
            ax.plot(c["samples_seen"], 100 * np.array(c["accuracy"]), marker=".", ms=3,
                    label=carry)
        ax.axhline(100 * ceiling, color="gray", ls="--", label="all 8,000 at once")
        ax.set(xlabel="training samples streamed", ylabel="test accuracy (%)",
               title=f"{titles[stream]}, buffer {capacity}")
    for carry, c in streams["shuffled"].items():
        axes[2].plot(np.arange(1, len(c["iterations"]) + 1), c["iterations"], marker=".",
                     ms=3, label=carry)
    axes[2].set(xlabel="training step (shuffled stream)", ylabel="SMO iterations, 45 pairs",
                title="work per training step")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("SVM head on the int8 MNIST CNN's 64 features: continued training")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed fits per solver (best kept)")
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--capacity", type=int, default=100, help="SVM layer buffer (samples)")
    ap.add_argument("--batches", type=int, default=40,
                    help="training steps per carry policy on the shuffled stream")
    ap.add_argument("--per-class", type=int, default=300,
                    help="samples per class in the class-by-class stream")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    solvers = ["numpy", "native"] if native_available() else ["numpy"]
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(),
                                           "load_average": os.getloadavg()}}

    x, y = mnist_split("train")
    xt, yt = mnist_split("test")
    pixels = (x.reshape(len(x), -1) / 255.0, y, xt.reshape(len(xt), -1) / 255.0, yt)
    results["raw_pixels"] = compare("raw pixels", *pixels, args.C, args.repeats, solvers)
    cnn = cnn_features()
    results["cnn_features"] = compare("CNN features", cnn["x"], cnn["y"], cnn["xt"], cnn["yt"],
                                      args.C, args.repeats, solvers)
    rows = []
    for data in ("raw_pixels", "cnn_features"):
        for key, r in results[data]["solvers"].items():
            rows.append((data, key, f"{100 * r['accuracy']:.2f}%", f"{r['cpu_seconds']:.2f}",
                         f"{r['cpu_ratio_to_libsvm']:.2f}x", f"{r['wall_seconds']:.2f}",
                         f"{r['wall_ratio_to_libsvm']:.2f}x", f"{r['n_sv']:,}",
                         f"{100 * r['n_sv_rel_diff']:.2f}%", f"{r['iterations']:,}",
                         f"{r['objective_max_rel_diff']:.1e}"))
    console.print(table(f"Linear SVM, C={args.C:g}, 8,000 train / 2,000 test digits (one thread; "
                        f"time: best of {args.repeats})",
                        ["features", "solver", "accuracy", "CPU s", "vs LIBSVM", "wall s",
                         "vs LIBSVM", "SVs", "SV diff", "SMO iters", "max obj. rel diff"], rows))

    rng = np.random.default_rng(args.seed)
    y_train = cnn["y"]
    orders = {
        "shuffled": rng.permutation(len(y_train)),
        "class_by_class": np.concatenate([rng.permutation(np.flatnonzero(y_train == c))
                                          [: args.per_class] for c in range(10)]),
    }
    streams = {name: continued_training(cnn, order, args.capacity, args.batches
                                        if name == "shuffled" else len(order), args.C, name)
               for name, order in orders.items()}
    ceiling = results["cnn_features"]["solvers"]["libsvm"]["accuracy"]
    results["continued_training"] = {"capacity": args.capacity, "C": args.C, "seed": args.seed,
                                     "per_class": args.per_class,
                                     "full_data_accuracy": ceiling, "streams": streams}
    rows = []
    for stream, curves in streams.items():
        for carry, c in curves.items():
            acc = np.array(c["accuracy"])
            rows.append((stream, carry, len(acc), f"{100 * acc[0]:.2f}%",
                         f"{100 * acc[-5:].mean():.2f}%", f"{100 * acc[-1]:.2f}%",
                         f"{np.mean(c['iterations'][1:]):,.0f}",
                         f"{np.mean(c['carried_in'][1:]):.0f}", f"{c['samples_seen'][-1]:,}"))
    console.print(table(f"Continued training: SVM layer, buffer {args.capacity}, int8 CNN "
                        f"features (all data at once: {100 * ceiling:.2f}%)",
                        ["stream", "carry", "steps", "first", "mean last 5", "last",
                         "SMO iters/step", "carried in", "samples seen"], rows))
    png = RESULTS / "svm_continued_training.png"
    plot(streams, ceiling, args.capacity, png)
    atomic_write_bytes(RESULTS / "svm_host_vs_libsvm.json",
                       json.dumps(with_version(results), indent=2).encode())
    console.print(f"wrote {RESULTS / 'svm_host_vs_libsvm.json'} and {png}")


if __name__ == "__main__":
    main()
