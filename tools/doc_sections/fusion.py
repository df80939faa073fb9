"""docs/fusion.md's tables and README's fusion figures, from benchmarks/fusion_variants.py."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, n, pct, span, table

VARIANTS = ("a", "b", "c", "d")
SHARED = ("model_a_int8", "model_b_int8", "model_c_int8")  # the models with CMSIS-NN figures


def _label(model: str) -> str:
    """model_a_int8 -> A; conv2_int8 -> conv2."""
    base = model.removesuffix("_int8")
    return base.removeprefix("model_").upper() if base.startswith("model_") else base


def _by(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["model"]: r for r in doc["results"]}


def _src(name: str) -> str:
    return f"`benchmarks/results/fusion_variants.json`, `benchmarks/{name}.py`"


def _more_fewer(change: list[float]) -> str:
    """'1.7-3.0% more' / '2-5% fewer' / 'between 1% fewer and 2% more' for percent changes."""
    if min(change) >= 0:
        return f"{span(change, '%')} more"
    if max(change) < 0:
        return f"{span([-c for c in change], '%')} fewer"
    return f"between {-min(change):.1f}% fewer and {max(change):.1f}% more"


def variants(doc: dict[str, Any]) -> str:
    rows = []
    for r in doc["results"]:
        cyc = {k: r[k]["cycles"] for k in VARIANTS}
        cm = (r.get("cmsis_nn") or {}).get("cycles")
        rows.append([_label(r["model"]), n(cm), *(n(cyc[k]) for k in VARIANTS),
                     pct(cyc["d"] / cyc["a"]), f"{cm / cyc['d']:.2f}x" if cm else "-",
                     n(r["a"]["arena_bytes"]), n(r["d"]["arena_bytes"]),
                     n(r["a"].get("flash_bytes")), n(r["d"].get("flash_bytes"))])
    shared = [r for r in doc["results"] if r["model"] in SHARED]
    slower = [100 * (r["d"]["cycles"] / r["a"]["cycles"] - 1) for r in shared]
    ram = [100 * (1 - r["d"]["arena_bytes"] / r["a"]["arena_bytes"]) for r in shared]
    b_vs_c = [100 * (r["b"]["cycles"] / r["c"]["cycles"] - 1) for r in doc["results"]
              if r["chains"]]
    more_ram = [_label(r["model"]) for r in doc["results"]
                if r["d"]["arena_bytes"] > r["a"]["arena_bytes"]]
    lines = [
        f"Measured on {doc['date']} by `benchmarks/fusion_variants.py` "
        f"(`benchmarks/results/fusion_variants.json`): cycles of one inference on the "
        "Cortex-M4 cycle model (`docs/cycle_model.md`, zero wait states) and the firmware's "
        "arena in bytes (tensors, kernel scratch and rings). CMSIS-NN: its layer-by-layer "
        "figures recorded under the same cycle rules (`docs/cycle_model.md`).", "",
        *table(["model", "CMSIS-NN", "(a)", "(b)", "(c)", "(d)", "(d) vs (a)",
                "CMSIS-NN / (d)", "RAM (a)", "RAM (d)", "flash (a)", "flash (d)"], rows), "",
        f"- on A, B and C, (d) takes {_more_fewer(slower)} cycles than (a) and needs "
        f"{span(ram, '%')} less RAM"
        + (f"; {', '.join(more_ram)} {'needs' if len(more_ram) == 1 else 'need'} more RAM "
           "fused than layer by layer"
           if more_ram else "") + ";",
        f"- (b) takes {span(b_vs_c, '%')} more cycles than (c): the hoisting is what pays.",
    ]
    return "\n".join(lines)


def plans(doc: dict[str, Any]) -> str:
    rows = []
    for p in doc["reference_plans"]:
        rings = " + ".join(n(b) for b in p["ring_bytes"]) or "-"
        rows.append([_label(p["model"]), n(p["unfused_bytes"]), n(p["fused_bytes"]), rings,
                     pct(p["fused_bytes"] / p["unfused_bytes"])])
    element = {p["ring_element_bytes"] for p in doc["reference_plans"]}
    width = "/".join(f"int{8 * e}" for e in sorted(element))
    return "\n".join([
        f"Reference-runtime plans (`plan_graph`, greedy, 16-byte alignment, {width} rings as "
        "the code plans them; no kernel scratch, so these differ from the firmware arenas "
        f"above), bytes; {_src('fusion_variants')}:", "",
        *table(["model", "unfused", "fused (all chains)", "rings", "change"], rows)])


RESIDUAL_BUILDS = (
    ("layer_by_layer", "layer by layer"),
    ("fused_without_adds", "every chain fused, Adds as layers"),
    ("fused", "every chain fused with its Add"),
    ("auto", "`--fuse auto`"),
    ("auto_ram_budget", "`--fuse auto --ram-budget` (the fused arena)"),
)


def residual(doc: dict[str, Any]) -> str:
    rows = []
    for r in doc.get("inverted_residual", []):
        base = r["layer_by_layer"]
        for key, label in RESIDUAL_BUILDS:
            f = r[key]
            rows.append([f"{r['model']} ({r['residual_chains']} of {r['chains']} chains "
                         "with an Add)" if key == "layer_by_layer" else "", label,
                         n(f["cycles"]), pct(f["cycles"] / base["cycles"]), n(f["arena_bytes"]),
                         pct(f["arena_bytes"] / base["arena_bytes"]), n(f["flash_bytes"]),
                         f"{f['fused_chains']} ({f['fused_adds']})"])
    return "\n".join([
        f"Measured on {doc['date']} by `benchmarks/fusion_variants.py` "
        f"(`benchmarks/results/fusion_variants.json`): one inference on the Cortex-M4 cycle "
        "model (zero wait states) of the seeded `edgenn bench` input; arena of the firmware "
        "(tensors, kernel scratch, windows), bytes.", "",
        *table(["model", "build", "cycles", "vs layer by layer", "arena B",
                "vs layer by layer", "flash B", "fused chains (with Add)"], rows, left=2)])


def cmsis_ratios(doc: dict[str, Any]) -> str:
    by = _by(doc)
    ratios = " / ".join(f"{by[m]['cmsis_nn']['cycles'] / by[m]['a']['cycles']:.2f}x"
                        for m in SHARED)
    return (f"on the shared models A/B/C, CMSIS-NN's recorded figures are {ratios} our "
            f"layer-by-layer cycles ({_src('fusion_variants')})")


def summary(doc: dict[str, Any]) -> str:
    by = _by(doc)
    ab = [by["model_a_int8"], by["model_b_int8"]]
    ram = [100 * (1 - r["d"]["arena_bytes"] / r["a"]["arena_bytes"]) for r in ab]
    cm = [r["cmsis_nn"]["cycles"] / r["d"]["cycles"] for r in ab]
    cm_text = (f"{min(cm):.1f}x" if f"{min(cm):.1f}" == f"{max(cm):.1f}"
               else f"{min(cm):.1f}-{max(cm):.1f}x")
    slower = [100 * (by[m]["d"]["cycles"] / by[m]["a"]["cycles"] - 1) for m in SHARED]
    verdict = ("so fusion trades cycles for RAM" if min(slower) > 0 else
               "so fusion saves RAM and cycles" if max(slower) < 0 else
               "so fusion saves RAM at about the same cycles")
    return (f"on the shared models A and B, {span(ram, '%')} less RAM than layer by layer, "
            f"CMSIS-NN takes {cm_text} the cycles; against the unfused build (the same "
            f"commit's per-layer kernels, int8 weights) the fused one takes {_more_fewer(slower)} "
            f"cycles on A, B and C, {verdict} ({_src('fusion_variants')})")


SECTIONS = (
    Section("fusion-variants", "fusion_variants", variants),
    Section("fusion-plans", "fusion_variants", plans),
    Section("fusion-cmsis-ratios", "fusion_variants", cmsis_ratios),
    Section("fusion-residual", "fusion_variants", residual),
    Section("fusion-summary", "fusion_variants", summary),
)
