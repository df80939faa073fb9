"""Layer fusion ablation on Cortex-M4 (cycle model): (a) layer by layer, (b) ring with modulo
addressing, (c) hoisted row pointers, (d) hoisted + 2-pixel SMLAD reuse; arena of each, and
CMSIS-NN's layer-by-layer figures (docs/cycle_model.md) beside A, B, C. Also the reference
runtime's memory plans (``plan_graph``) unfused and with every chain fused, with the rings
the code plans (``RING_ELEMENT_BYTES``). And the inverted-residual models (the zoo's
MobileNetV2 keyword model; MLPerf Tiny's ResNet-8 when ``--mlperf-dir`` has it): layer by
layer, every chain fused with its residual Add stopping before it (``residuals=False``), with
it, ``--fuse auto`` and ``--fuse auto --ram-budget`` the all-fused arena.

    .venv/bin/python benchmarks/fusion_variants.py [--clock-mhz 64] [--mlperf-dir DIR]

Writes benchmarks/results/fusion_variants.json; ``tools/results_doc.py`` renders docs/fusion.md's
tables and README's fusion figures from it. Cycles follow the project's Cortex-M4 cycle
model (docs/cycle_model.md: zero wait states; flash wait states, caches and bus contention
ignored).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.api import compile_model, load_model
from edgenn.backends.cortexm.executable import _bench_inputs
from edgenn.cli.console import console, table
from edgenn.datasets import dataset_split
from edgenn.evaluate import images_to_input
from edgenn.fusion import FUSION_VARIANTS, LAYER_BY_LAYER
from edgenn.memory import plan_graph
from edgenn.passes.fusion.chains import find_chains
from edgenn.passes.fusion.rewrite import RING_ELEMENT_BYTES, apply_fusion
from edgenn.passes.fusion.ring import ring_bytes
from edgenn.utils import atomic_write_bytes
from edgenn.version import with_version

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tflite"
MODELS = ("model_a_int8", "model_b_int8", "model_c_int8", "conv2_int8", "dwsep_int8",
          "resnet_int8")
# the results' keys are the ablation table's row labels (a)-(d), in FUSION_VARIANTS' order:
# a = layer_by_layer (None: unfused), b = ring_modulo, c = ring_hoisted, d = ring_hoisted_pair
VARIANTS = {label: None if name == LAYER_BY_LAYER else name
            for label, name in zip("abcd", FUSION_VARIANTS, strict=True)}
# docs/cycle_model.md (the baseline recorded under the same cycle rules): CMSIS-NN -O3 total
# cycles and layer-by-layer peak RAM
CMSIS_NN = {"model_a_int8": (8_269_856, 29_824), "model_b_int8": (14_571_584, 41_216),
            "model_c_int8": (4_360_151, 19_104)}


def measure(model: str) -> dict[str, Any]:
    g = load_model(FIXTURES / f"{model}.tflite")
    images, _ = dataset_split("mnist", "test")
    x = np.asarray(images_to_input(g, images[:1]))
    chains = find_chains(g)
    row: dict[str, Any] = {"model": model, "chains": [list(c.names) for c in chains]}
    for key, variant in VARIANTS.items():
        graph = g if variant is None or not chains else apply_fusion(g, chains, variant)
        r = compile_model(graph, target="cortex-m4").bench(x)
        row[key] = {"cycles": r.total_cycles, "arena_bytes": r.arena_bytes,
                    "flash_bytes": r.flash_bytes, "kernels": [layer.kernel for layer in r.layers]}
    if model in CMSIS_NN:
        row["cmsis_nn"] = {"cycles": CMSIS_NN[model][0], "arena_bytes": CMSIS_NN[model][1]}
    return row


# models with identity-shortcut blocks (chains that take their Add: chains.residual_add)
RESIDUAL_MODELS = (ROOT / "zoo" / "keras" / "mbv2_kws_int8.tflite",)
RESIDUAL_MLPERF = ("pretrainedResnet_quant.tflite",)  # MLPerf Tiny IC (ResNet-8)


def _figures(exe: Any, x: tuple[np.ndarray, ...]) -> dict[str, Any]:
    r = exe.emulate(*x)
    exe.release_emulator()
    fused = [n for n in exe.graph.nodes if n.op == "FusedConvChain"]
    return {"cycles": int(r.total_cycles or 0), "arena_bytes": r.arena_bytes,
            "flash_bytes": r.flash_bytes, "fused_chains": len(fused),
            "fused_adds": sum(n.attr("residual", None) is not None for n in fused)}


def measure_residual(path: Path) -> dict[str, Any]:
    """One model with residual blocks, on the seeded bench input of ``edgenn bench``."""
    g = load_model(path)
    x = tuple(_bench_inputs(g))
    chains, plain = find_chains(g), find_chains(g, residuals=False)
    row: dict[str, Any] = {"model": path.stem, "file": str(path.relative_to(path.parents[1])),
                           "chains": len(chains),
                           "residual_chains": sum(c.residual is not None for c in chains)}
    for key, graph in (("layer_by_layer", g), ("fused_without_adds", apply_fusion(g, plain)),
                       ("fused", apply_fusion(g, chains))):
        row[key] = _figures(compile_model(graph, target="cortex-m4"), x)
    auto = compile_model(g, target="cortex-m4", fuse="auto")
    row["auto"] = {**_figures(auto, x), "builds": auto.fusion_report.builds}
    budget = row["fused"]["arena_bytes"]
    auto = compile_model(g, target="cortex-m4", fuse="auto", ram_budget=budget)
    row["auto_ram_budget"] = {**_figures(auto, x), "builds": auto.fusion_report.builds,
                              "ram_budget": budget}
    return row


def reference_plan(model: str, variant: str = "ring_hoisted_pair") -> dict[str, Any]:
    """The reference runtime's arena (greedy plan, 16-byte alignment) unfused and with every
    maximal chain fused as ``variant`` (rings of ``RING_ELEMENT_BYTES[variant]`` per value)."""
    g = load_model(FIXTURES / f"{model}.tflite")
    chains = find_chains(g)
    fused = apply_fusion(g, chains, variant) if chains else g
    element = RING_ELEMENT_BYTES[variant]
    return {"model": model, "variant": variant, "ring_element_bytes": element,
            "unfused_bytes": plan_graph(g).peak_bytes, "fused_bytes": plan_graph(fused).peak_bytes,
            "ring_bytes": [ring_bytes(c, element) for c in chains]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clock-mhz", type=float, default=64.0)
    ap.add_argument("--mlperf-dir", type=Path,
                    default=ROOT.parent / "shared" / "models" / "mlperf_tiny",
                    help="MLPerf Tiny models (its ResNet-8 is measured when found)")
    args = ap.parse_args()
    rows = [measure(m) for m in MODELS]
    residual_paths = [*RESIDUAL_MODELS, *(args.mlperf_dir / f for f in RESIDUAL_MLPERF
                                          if (args.mlperf_dir / f).is_file())]
    residual_rows = [measure_residual(p) for p in residual_paths]
    cycles_rows, ms_rows, ram_rows = [], [], []
    for r in rows:
        cyc = {k: r[k]["cycles"] for k in VARIANTS}
        cm = r.get("cmsis_nn", {}).get("cycles")
        cm_ram = r.get("cmsis_nn", {}).get("arena_bytes")
        cycles_rows.append([
            r["model"], f"{cm:,}" if cm else "-", *(f"{cyc[k]:,}" for k in VARIANTS),
            f"{100 * (cyc['d'] / cyc['a'] - 1):+.1f}%",
            f"{100 * (cyc['d'] / cm - 1):+.1f}% ({cm / cyc['d']:.2f}x)" if cm else "-",
            f"{100 * (cyc['b'] / cyc['c'] - 1):+.1f}%",
        ])
        per_ms = 1e3 * args.clock_mhz
        ms_rows.append([r["model"], f"{cm / per_ms:.1f}" if cm else "-",
                        *(f"{cyc[k] / per_ms:.1f}" for k in VARIANTS)])
        ram_rows.append([
            r["model"], f"{cm_ram:,}" if cm_ram else "-",
            *(f"{r[k]['arena_bytes']:,}" for k in VARIANTS),
            f"{100 * (r['d']['arena_bytes'] / r['a']['arena_bytes'] - 1):+.1f}%",
        ])
    title = f"Cortex-M4, cycle model (zero wait states), {args.clock_mhz:g} MHz"
    console.print(table(f"cycles: {title}", ["model", "CMSIS-NN", "(a) layer", "(b) modulo",
                        "(c) hoisted", "(d) pairs", "(d) vs (a)", "(d) vs CMSIS-NN",
                        "(b) vs (c)"], cycles_rows))
    console.print(table(f"ms: {title}", ["model", "CMSIS-NN", "(a)", "(b)", "(c)", "(d)"],
                        ms_rows))
    console.print(table("peak RAM (arena incl. scratch and rings, bytes)",
                        ["model", "CMSIS-NN layer by layer", "(a)", "(b)", "(c)", "(d)",
                         "(d) vs (a)"], ram_rows))
    keys = ("layer_by_layer", "fused_without_adds", "fused", "auto", "auto_ram_budget")
    console.print(table("inverted residuals: cycles / arena B", ["model", *keys],
                        [[r["model"], *(f"{r[k]['cycles']:,} / {r[k]['arena_bytes']:,}"
                                        for k in keys)] for r in residual_rows]))
    out = ROOT / "benchmarks" / "results" / "fusion_variants.json"
    payload = {"benchmark": "fusion_variants", "date": dt.date.today().isoformat(),
               "clock_mhz": args.clock_mhz, "cycle_model": "cortex-m4-trm-zero-wait-state",
               "results": rows, "reference_plans": [reference_plan(m) for m in MODELS],
               "inverted_residual": residual_rows}
    atomic_write_bytes(out, (json.dumps(with_version(payload), indent=1) + "\n").encode())
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
