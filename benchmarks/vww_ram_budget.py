"""VWW (MLPerf Tiny's MobileNetV1 0.25, 96x96x3 int8) under a RAM budget on the Cortex-M4.

Builds and emulates: layer by layer with the input in the arena (the default) and in the
caller's buffer (``--input-buffer caller``); ``--fuse auto`` at the smallest arena any plan
reaches with the input in the arena; and ``--fuse auto --ram-budget`` half the layer-by-layer
arena with the input in the caller's buffer (with the input in the arena that budget is
refused: its one-line error is recorded). The half-budget build is checked bit-exact against
TFLite Micro on random inputs, and its input buffer unchanged after them. Beside the builds,
the planned arena of every prefix of the chain fused (the rest layer by layer, the planner's
candidates for a budget) in both modes: what is reachable and why.

    .venv/bin/python benchmarks/vww_ram_budget.py [--model PATH] [--samples 4]

Writes benchmarks/results/vww_ram_budget.json. Cycles follow the project's Cortex-M4 cycle
model (docs/cycle_model.md: zero wait states), on the seeded bench input the planner
measures with (``executable._bench_inputs``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.codegen.memory import firmware_arena_bytes
from edgenn.backends.cortexm.executable import CortexMExecutable, _bench_inputs
from edgenn.backends.cortexm.targets import get_core
from edgenn.cli.console import console, table
from edgenn.errors import PlanError
from edgenn.ir import Graph
from edgenn.oracles.tflm import tflm_run
from edgenn.passes.fusion import apply_fusion, find_chains, fused_names
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
VWW = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "vww_96_int8.tflite"
CORE = "cortex-m4"


def measured(g: Graph, exe: CortexMExecutable, label: str) -> dict[str, Any]:
    """One build's figures: cycles on the bench input, arena, caller's input, flash, RAM."""
    bench = exe.emulate(*_bench_inputs(g))
    exe.release_emulator()
    index = {n.name: i for i, n in enumerate(g.nodes)}
    fused = [[index[m] for m in fused_names(n)] for n in exe.graph.nodes
             if n.op == "FusedConvChain"]
    report = exe.fusion_report
    return {"build": label, "cycles": int(bench.total_cycles or 0),
            "arena_bytes": bench.arena_bytes, "caller_input_bytes": bench.caller_input_bytes,
            "flash_bytes": bench.flash_bytes, "ram_bytes": bench.ram_bytes,
            "fused_layers": [[f[0], f[-1]] for f in fused if f],
            "fusion": None if report is None else report.summary()}


def prefix_arenas(g: Graph) -> list[dict[str, Any]]:
    """The planned arena of layers 0..k-1 fused (the rest layer by layer), both modes."""
    core = get_core(CORE)
    (chain,) = find_chains(g)
    cache: dict[object, tuple[int, bool, bool]] = {}
    rows = []
    for k in range(2, len(chain.names) + 1):
        fg = apply_fusion(g, [chain.sub(0, k)])
        rows.append({"fused_layers": [0, k - 1],
                     "arena_bytes": firmware_arena_bytes(fg, core, cache),
                     "caller_arena_bytes": firmware_arena_bytes(fg, core, cache,
                                                                input_buffer="caller")})
    return rows


def exactness(model: Path, exe: CortexMExecutable, samples: int) -> dict[str, Any]:
    """Mismatches against TFLite Micro, and whether the caller's input buffer kept its bytes."""
    x = np.random.default_rng(3).integers(-128, 128, size=(samples, 96, 96, 3), dtype=np.int8)
    (got,) = exe.run(x)
    (want,) = tflm_run(model.read_bytes(), x)
    spec = exe.manifest["inputs"][0]
    after = exe.machine.read(str(spec["symbol"]), int(spec["bytes"]))
    return {"samples": samples, "mismatches": int(np.count_nonzero(got != want.reshape(
        got.shape))), "input_unchanged": after == x[-1].tobytes()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=VWW)
    ap.add_argument("--samples", type=int, default=4, help="random inputs checked vs TFLM")
    args = ap.parse_args()
    g = load_model(args.model)
    input_bytes = sum(g.tensor(t).nbytes for t in g.inputs)
    lbl = measured(g, compile_model(g, target=CORE, fuse="none"), "layer by layer")
    lbl_caller = measured(g, compile_model(g, target=CORE, fuse="none", input_buffer="caller"),
                          "layer by layer, caller's input")
    half = lbl["arena_bytes"] // 2
    prefixes = prefix_arenas(g)
    smallest = min(lbl["arena_bytes"], *(r["arena_bytes"] for r in prefixes))
    smallest_caller = min(lbl_caller["arena_bytes"],
                          *(r["caller_arena_bytes"] for r in prefixes))
    in_arena = measured(g, compile_model(g, target=CORE, fuse="auto", ram_budget=smallest),
                        f"fuse auto, --ram-budget {smallest}")
    try:
        compile_model(g, target=CORE, fuse="auto", ram_budget=half)
        refused = ""
    except PlanError as err:
        refused = str(err)
    exe = compile_model(g, target=CORE, fuse="auto", ram_budget=half, input_buffer="caller")
    chosen = measured(g, exe, f"fuse auto, --ram-budget {half}, caller's input")
    chosen["exactness"] = exactness(args.model, exe, args.samples)
    builds = [lbl, lbl_caller, in_arena, chosen]
    base = lbl["cycles"]
    rows = [[b["build"], f"{b['cycles']:,}", f"{100 * (b['cycles'] / base - 1):+.1f}%",
             f"{b['arena_bytes']:,}",
             f"{b['caller_input_bytes']:,}" if b["caller_input_bytes"] else "-",
             ", ".join(f"{a}-{z}" for a, z in b["fused_layers"]) or "-"] for b in builds]
    console.print(table(f"VWW on {CORE} (cycle model, bench input): half the layer-by-layer "
                        f"arena is {half:,} B",
                        ["build", "cycles", "vs layer by layer", "arena B",
                         "caller's input B", "fused layers"], rows))
    console.print(table("planned arena, layers 0..k fused (the rest layer by layer)",
                        ["fused", "input in arena", "caller's input"],
                        [[f"{r['fused_layers'][0]}-{r['fused_layers'][1]}",
                          f"{r['arena_bytes']:,}", f"{r['caller_arena_bytes']:,}"]
                         for r in prefixes]))
    console.print(f"input in the arena, --ram-budget {half}: {refused or 'built'}")
    console.print(f"half-budget build vs TFLite Micro: {chosen['exactness']}")
    out = ROOT / "benchmarks" / "results" / "vww_ram_budget.json"
    payload = {"benchmark": "vww_ram_budget", "date": dt.date.today().isoformat(),
               "model": args.model.name, "core": CORE,
               "cycle_model": "cortex-m4-trm-zero-wait-state", "input_bytes": input_bytes,
               "half_budget_bytes": half, "builds": builds,
               "smallest_arena_input_in_arena": smallest,
               "smallest_arena_caller_input": smallest_caller,
               "half_budget_input_in_arena_error": refused, "prefix_arenas": prefixes}
    atomic_write_bytes(out, (json.dumps(with_version(payload), indent=1) + "\n").encode())
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
