"""Converter-made models with the operators of issue 14 on the emulated Cortex-M4: cycles,
memory beside TFLite Micro's, and bit-exactness against TFLite Micro.

For every .tflite in tests/fixtures/operators (written by tools/make_operator_fixtures.py with
TensorFlow's converter: TFLite Micro's mnist_lstm network, SEANet- and MobileNetV3-style
int8 / int16 blocks): build for cortex-m4, run one inference for per-layer cycles, flash and
arena; count output mismatches against TFLite Micro's Python interpreter on N seeded random
inputs on ref and on cortex-m4; put TFLite Micro's arena (its recording allocator) beside
edgenn's. Float models run on the M4's FPU (``-mfloat-abi=hard``, the cycle model prices the
VFP instructions) and compare within float tolerance (``_mismatches``).

Beside edgenn, in the same run and the same emulator: the peer, TFLite Micro + CMSIS-NN built
for the cycle model (``shared/baselines/tflm_cmsis_nn_m4/``, ``tflm_peer.py``), on the inputs
its README names (``default_rng(0)``, 3 samples, the median): cycles, arena, flash, the
speed-up, and per operator the peer's ``_opprof`` cycles beside edgenn's layer that writes the
same tensor (operators edgenn folds into a neighbour are counted with the layer after them).
A model with state (LSTM / SVDF variable tensors) also gets edgenn's median over 20
consecutive invocations carrying the state, as a streaming application runs it.

    .venv/bin/python benchmarks/operator_models.py [--n 8] [--json PATH] [--baselines DIR]

Writes benchmarks/results/operator_models.json; docs/operators.md shows its table
(tools/operators_doc.py renders it from the JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # tflm_peer.py beside this script

from tflm_peer import operator_outputs, run_peer  # noqa: E402

from edgenn.api import compile_model  # noqa: E402
from edgenn.cli.console import console, progress, table  # noqa: E402
from edgenn.frontends.tflite import load_tflite  # noqa: E402
from edgenn.ir import Graph  # noqa: E402
from edgenn.ir.sample import random_inputs  # noqa: E402
from edgenn.oracles.tflm import tflm_arena_bytes, tflm_run  # noqa: E402
from edgenn.utils import atomic_write_bytes  # noqa: E402
from edgenn.version import with_version  # noqa: E402

MODEL_DIR = ROOT / "tests" / "fixtures" / "operators"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "operator_models.json"
DEFAULT_BASELINES = ROOT.parent / "shared" / "baselines" / "tflm_cmsis_nn_m4"
PEER_SAMPLES = 3
STATEFUL_INVOCATIONS = 20
CORE = "cortex-m4"
CLOCK_MHZ = 64.0
CYCLE_MODEL = ("docs/cycle_model.md: Cortex-M4 TRM cycle rules, zero wait states "
               "(no flash wait states, caches or bus contention)")


def _mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> int:
    """Quantized outputs: values that differ; float outputs: values off by more than 1e-5
    relative (+1e-6 absolute)."""
    bad = 0
    for g, w in zip(got, want, strict=True):
        if w.dtype.kind == "f":
            bad += int((~np.isclose(g, w, rtol=1e-5, atol=1e-6)).sum())
        else:
            bad += int((g.astype(np.int64) != w.astype(np.int64)).sum())
    return bad


def peer_inputs(graph: Graph, samples: int = PEER_SAMPLES) -> np.ndarray:
    """The peer README's inputs: ``default_rng(0)``, 3 samples of the model's one input."""
    t = graph.tensor(graph.inputs[0])
    shape = (samples, *graph.external_shape(graph.inputs[0])[1:])
    rng = np.random.default_rng(0)
    dtype = np.dtype(t.dtype.numpy)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def per_operator(data: bytes, name: str, peer_ops: tuple[int, ...],
                 layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The peer's operators lined up with edgenn's layers by the tensor each writes."""
    ops = operator_outputs(data, name)
    if len(ops) != len(peer_ops):
        return []
    by_name = {layer["name"]: layer for layer in layers}
    rows: list[dict[str, Any]] = []
    pending: list[str] = []
    pending_cycles = 0
    for (op, tensor), cycles in zip(ops, peer_ops, strict=True):
        pending.append(op)
        pending_cycles += cycles
        layer = by_name.get(tensor)
        if layer is None or layer.get("cycles") is None:
            continue
        rows.append({"tflm_ops": pending, "tflm_cycles": pending_cycles,
                     "layer": layer["name"], "kernel": layer["kernel"],
                     "cycles": layer["cycles"],
                     "ratio": round(layer["cycles"] / pending_cycles, 3)
                     if pending_cycles else None})
        pending, pending_cycles = [], 0
    return rows


def bench_peer(row: dict[str, Any], data: bytes, graph: Graph, exe: Any | None,
               baselines: Path) -> None:
    """Add the peer's figures (and edgenn's on the same inputs) to ``row``."""
    xs = peer_inputs(graph)
    out_dtype = np.dtype(graph.tensor(graph.outputs[0]).dtype.numpy)
    peer = run_peer(baselines, row["model"], xs, out_dtype)
    if peer is None:
        return
    entry: dict[str, Any] = {"elf": peer.elf, "failed": peer.failed}
    if peer.cycles:
        want = [w.ravel() for w in tflm_run(data, xs)]
        entry.update({"cycles": peer.cycles, "arena_bytes": peer.arena_bytes,
                      "flash_bytes": peer.flash_bytes,
                      "output_equals_tflm": bool(all(
                          _mismatches([o], [w[k * o.size:(k + 1) * o.size]]) == 0
                          for k, o in enumerate(peer.outputs) for w in want[:1]))})
        if exe is not None:
            cycles = [exe.emulate(x[None]).total_cycles for x in xs]
            entry["edgenn_cycles"] = int(np.median(cycles))
            entry["speedup"] = round(peer.cycles / entry["edgenn_cycles"], 3)
            if graph.state:
                # a streaming application: STATEFUL_INVOCATIONS consecutive invocations
                # carrying the state (the peer's firmware runs one from reset: its median)
                exe.reset_state()
                stream = [exe.emulate(x[None]).total_cycles
                          for x in peer_inputs(graph, STATEFUL_INVOCATIONS)]
                exe.reset_state()
                entry["edgenn_stateful_cycles"] = int(np.median(stream))
                entry["stateful_speedup"] = round(peer.cycles / int(np.median(stream)), 3)
            entry["operators"] = per_operator(data, row["file"], peer.op_cycles,
                                              row.get("layers", []))
    row["tflm_cmsis_nn"] = entry


def bench_model(path: Path, n: int, baselines: Path | None = None) -> dict[str, Any]:
    data = path.read_bytes()
    graph = load_tflite(data, path.name)
    xs = random_inputs(graph, n, seed=1)
    want = tflm_run(data, *xs)
    row: dict[str, Any] = {
        "model": path.stem, "file": path.name, "samples": n,
        "operators": sorted({node.op for node in graph.nodes}),
        "output_values": int(sum(w.size for w in want)),
        "ref_mismatches": _mismatches(compile_model(graph, "ref").run(*xs), want),
        "tflm_arena_bytes": tflm_arena_bytes(data),
    }
    exe = compile_model(graph, CORE)
    row["m4_mismatches"] = _mismatches(exe.run(*xs), want)
    result = exe.emulate(*[x[:1] for x in xs])
    macs = sum(layer.macs for layer in result.layers)
    row.update({
        "macs": macs, "cycles": result.total_cycles,
        "mac_per_cycle": round(macs / result.total_cycles, 4) if result.total_cycles else None,
        "ms_at_64mhz": round(result.total_cycles / (CLOCK_MHZ * 1e3), 3),
        "arena_bytes": result.arena_bytes, "flash_bytes": result.flash_bytes,
        "layers": [{"name": layer.name, "op": layer.op, "kernel": layer.kernel,
                    "macs": layer.macs, "cycles": layer.cycles} for layer in result.layers],
    })
    if baselines is not None:
        bench_peer(row, data, graph, exe, baselines)
    return row


def run_benchmark(n: int, baselines: Path | None = DEFAULT_BASELINES) -> dict[str, Any]:
    paths = sorted(MODEL_DIR.glob("*.tflite"))
    models = []
    if baselines is not None and not baselines.is_dir():
        console.print(f"{baselines}: no such folder; the peer's columns stay empty")
        baselines = None
    with progress("operator models on cortex-m4", len(paths)) as advance:
        for path in paths:
            models.append(bench_model(path, n, baselines))
            advance(1)
    return {"benchmark": "operator_models", "core": CORE, "clock_hz": CLOCK_MHZ * 1e6,
            "cycle_model": CYCLE_MODEL, "model_dir": str(MODEL_DIR.relative_to(ROOT)),
            "peer": "TFLite Micro + CMSIS-NN firmware, shared/baselines/tflm_cmsis_nn_m4 "
                    "(its README: build flags, inputs, protocol)" if baselines else None,
            "models": models}


def print_table(doc: dict[str, Any]) -> None:
    rows = []
    for m in doc["models"]:
        rows.append([m["model"], f"{m.get('cycles', 0):,}" if "cycles" in m else "-",
                     f"{m['mac_per_cycle']:.3f}" if m.get("mac_per_cycle") else "-",
                     f"{m['arena_bytes']:,}" if "arena_bytes" in m else "-",
                     f"{m['tflm_arena_bytes']:,}",
                     f"{m['flash_bytes']:,}" if "flash_bytes" in m else "-",
                     f"{m['ref_mismatches']} / {m.get('m4_mismatches', '-')}"])
    console.print(table("Converter-made models on cortex-m4 (zero wait states)",
                        ["model", "cycles", "MAC/cycle", "arena B", "TFLM arena B", "flash B",
                         "mismatches ref / m4"], rows))
    peer_rows = []
    for m in doc["models"]:
        p = m.get("tflm_cmsis_nn")
        if not p:
            continue
        worst = max((o for o in p.get("operators", []) if o["ratio"] is not None),
                    key=lambda o: o["ratio"], default=None)
        peer_rows.append([
            m["model"], p["elf"] + (" (plain: " + "; ".join(p["failed"].values()) + ")"
                                    if p["failed"] and p.get("cycles") else ""),
            f"{p['cycles']:,}" if p.get("cycles") else "fails",
            f"{p['edgenn_cycles']:,}" if "edgenn_cycles" in p else "-",
            f"{p['speedup']:.2f}x" if "speedup" in p else "-",
            f"{p['stateful_speedup']:.2f}x" if "stateful_speedup" in p else "-",
            f"{p['arena_bytes']:,}" if p.get("cycles") else "-",
            f"{worst['ratio']:.2f}x {'+'.join(worst['tflm_ops'])}" if worst else "-"])
    if peer_rows:
        console.print(table("edgenn beside TFLite Micro + CMSIS-NN (same emulator, same inputs)",
                            ["model", "peer firmware", "peer cycles", "edgenn cycles",
                             "speed-up", f"over {STATEFUL_INVOCATIONS} stateful",
                             "peer arena B", "slowest op (edgenn / peer)"],
                            peer_rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="random inputs per model")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--baselines", type=Path, default=DEFAULT_BASELINES,
                    help="the TFLite Micro + CMSIS-NN firmware folder (default: %(default)s)")
    ap.add_argument("--no-peer", action="store_true", help="do not run the peer's firmware")
    args = ap.parse_args()
    doc = run_benchmark(args.n, None if args.no_peer else args.baselines)
    print_table(doc)
    atomic_write_bytes(args.json, (json.dumps(with_version(doc), indent=1) + "\n").encode())
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
