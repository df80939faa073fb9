"""docs/vta.md's GEMM tables (benchmarks/vta_gemm_table.py) and docs/vta_network.md's
ResNet-18 tables (benchmarks/vta_resnet18.py)."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, table


def _fast(doc: dict[str, Any]) -> str:
    """The pipelined schedule's name as the JSON records it (the last schedule)."""
    return str(doc.get("fast_schedule") or doc["schedules"][-1])


def _per_shape(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(shape, published figures, tiled2 row, optimized row, pipelined row) per GEMM shape."""
    fast = _fast(doc)
    by = {(tuple(r["shape"]), r["schedule"]): r for r in doc["rows"]}
    shapes = list(dict.fromkeys(tuple(r["shape"]) for r in doc["rows"]))
    return [(s, doc["paper"]["x".join(map(str, s))], by[s, "tiled2"], by[s, "optimized"],
             by[s, fast]) for s in shapes]


def gemm_table(doc: dict[str, Any]) -> str:
    fast = _fast(doc)
    rows = []
    for s, paper, t2, op, fa in _per_shape(doc):
        rows.append([", ".join(map(str, s)), f"{paper[0]:.1f}",
                     f"{t2['time_ms']:.3f} ({paper[1]:.1f})", f"{t2['gops']:.1f}",
                     f"{t2['percent_of_peak']:.1f}", f"{op['time_ms']:.3f} ({paper[2]:.1f})",
                     f"{op['gops']:.1f}", f"{op['percent_of_peak']:.1f}", f"{fa['time_ms']:.3f}",
                     f"{fa['gops']:.1f}", f"{fa['percent_of_peak']:.1f}"])
    sm = doc["summary"]
    o2, fo = sm["optimized_over_tiled2"], sm["tall_pipelined_over_optimized"]
    big = next(fa for shape, _, _, _, fa in _per_shape(doc) if shape == (1024, 1024, 1024))
    lines = [
        f"Run of {doc['date']}: `benchmarks/results/vta_gemm_table.json`, written by "
        "`.venv/bin/python benchmarks/vta_gemm_table.py --check --sensitivity`. Simulated "
        "accelerator time (int8 output, no bias); the ZCU102 GEMM study's columns are its "
        "measured wall time on the board, which includes host work. GOPS = 2MKN / time; peak "
        f"{doc['config']['peak_gops']:.1f} GOPS.", "",
        *table(["M, K, N", "paper CPU ms", "tiled2 ms (paper)", "GOPS", "% peak",
                "optimized ms (paper)", "GOPS", "% peak", f"{fast} ms", "GOPS", "% peak"], rows),
        "",
        f"* optimized / tiled2: **{o2['mean']:.2f}x** on average (per shape "
        f"{min(o2['per_shape']):.2f}-{max(o2['per_shape']):.2f}x); the study: "
        f"{o2['paper_mean']:.2f}x.",
        f"* {fast} / optimized: **{fo['mean']:.2f}x** on average, "
        f"**{fo['resnet18_mean']:.2f}x** on the six ResNet-18 shapes "
        f"(min {fo['resnet18_min']:.2f}x).",
        f"* {fast} at 1024^3: **{big['gops']:.1f} GOPS, {big['percent_of_peak']:.1f}% of "
        "peak**.",
    ]
    checked = [r for r in doc["rows"] if "bit_exact" in r]
    if checked:
        ok = sum(bool(r["bit_exact"]) for r in checked)
        lines.append(f"* `--check` ran {len(checked)} GEMMs functionally on random data: "
                     f"{ok} of them bit-exact with numpy.")
    return "\n".join(lines)


def sensitivity(doc: dict[str, Any]) -> str:
    rows = [[s["read_latency"], s["bus_bits"], f"{s['optimized_over_tiled2_mean']:.2f}x",
             f"{s['fast_over_optimized_resnet18_mean']:.2f}x",
             f"{s['fast_percent_of_peak_1024']:.1f}%"] for s in doc["sensitivity"]]
    fast = _fast(doc)
    return "\n".join([
        "Sensitivity to the assumed read latency and the bus width (`--sensitivity`, "
        "`benchmarks/results/vta_gemm_table.json`):", "",
        *table(["read latency (assumed)", "bus", "optimized / tiled2",
                f"{fast} / optimized (ResNet-18 shapes)", f"{fast} % peak at 1024^3"],
               rows, left=0)])


def wall(doc: dict[str, Any]) -> str:
    fast = _fast(doc)
    rows = []
    for s, paper, t2, op, fa in _per_shape(doc):
        rows.append([", ".join(map(str, s)), f"{t2['wall_ms']:.2f} ({paper[1]:.1f})",
                     f"{op['wall_ms']:.2f} ({paper[2]:.1f})", f"{fa['wall_ms']:.2f}",
                     f"{t2['wall_ms'] / op['wall_ms']:.2f}x ({paper[1] / paper[2]:.2f}x)"])
    w = doc["summary"]["wall"]
    return "\n".join([
        "Wall time on the board (model): device time + the board CPU's work "
        "(`benchmarks/results/vta_gemm_table.json`; the instruction cost refitted this run: "
        f"{doc['summary']['insn_ns_fit']:.0f} ns):", "",
        *table(["M, K, N", "tiled2 wall ms (paper)", "optimized wall ms (paper)",
                f"{fast} wall ms", "opt / tiled2 (paper)"], rows), "",
        f"Mean optimized / tiled2 in wall time: **{w['optimized_over_tiled2']['mean']:.2f}x**; "
        f"{fast} / optimized on the ResNet-18 shapes: "
        f"{w['tall_pipelined_over_optimized']['resnet18_mean']:.2f}x in wall time."])


def peak_1024(doc: dict[str, Any]) -> str:
    big = next(r for r in doc["rows"] if r["shape"] == [1024, 1024, 1024]
               and r["schedule"] == _fast(doc))
    return (f"{big['percent_of_peak']:.0f}% of the {doc['config']['peak_gops']:.1f} GOPS peak "
            "on 1024^3, `benchmarks/results/vta_gemm_table.json`")


def _mb(r: dict[str, Any]) -> str:
    return f"{sum(r['dram_bytes'].values()) / 1e6:.1f}"


def resnet_totals(doc: dict[str, Any]) -> str:
    ref = doc["ref_runtime_ms"]
    rows = [["reference runtime (host, numpy)", "", "", f"{ref:.1f}", f"{ref:.1f}", "1.00x",
             "", "", "(oracle)", "", ""]]
    for name, t in doc["totals"].items():
        rows.append([name, f"{t['vta_ms']:.1f}", f"{t['vta_gops']:.1f}", f"{t['host_ms']:.1f}",
                     f"{t['total_ms']:.1f}", f"{t['speedup_vs_ref_runtime']:.2f}x",
                     f"{t['vta_only_speedup_vs_ref_runtime']:.2f}x", _mb(t),
                     "yes" if t["bit_exact"] else "**no**", f"{t['board_control_ms']:.1f}",
                     f"{ref / t['total_with_board_control_ms']:.2f}x"])
    h = doc["host"]
    load = doc.get("load_average_at_end")
    fast = _fast_resnet(doc)
    f, t2 = doc["totals"][fast], doc["totals"]["tiled2"]
    offloaded = sum(1 for layer in doc["layers"] if layer[fast].get("where") == "vta")
    insns = {k: sum(layer[k].get("instructions", 0) for layer in doc["layers"])
             for k in doc["totals"]}
    return "\n".join([
        "`benchmarks/results/vta_resnet18.json`, written by `.venv/bin/python "
        "benchmarks/vta_resnet18.py`" + (f" on {doc['date']}" if "date" in doc else "")
        + f" ({doc['preset']} preset, {doc['clock_mhz']:.2f} MHz, {doc['bus_bits']}-bit AXI; "
        f"host times measured with BLAS on {doc['blas_threads']} thread, minimum of "
        f"{doc['repeats']} runs"
        + (f", load average {load[0]:.1f} at the end" if load else "") + "):", "",
        *table(["run", "VTA ms (simulated)", "VTA GOPS", "host ms (measured)", "total ms",
                "vs reference runtime", "VTA alone vs reference", "DRAM MB", "bit-exact",
                "+ board control ms (model)", "total with it, vs reference"], rows), "",
        f"The host side is the same for every schedule: {h['offloaded_layers_ms']:.1f} ms of "
        f"im2col and requantization around the {offloaded} offloaded layers plus "
        f"{h['cpu_layers_ms']:.1f} ms for the layers that stay on the CPU. The reference "
        f"runtime runs the whole network in {ref:.1f} ms, so with `{fast}` the accelerator path "
        f"is {f['speedup_vs_ref_runtime']:.1f}x faster end to end and the accelerator alone "
        f"{f['vta_only_speedup_vs_ref_runtime']:.1f}x (the ZCU102 study reports "
        f"{doc['paper']['speedup_vs_cpu']}x against its board's ARM cores; our host is an x86 "
        "with BLAS, so the ratio is not the board's, and host times vary with the machine's "
        f"load). Board control: {f['board_control_ms']:.1f} ms for `{fast}`'s "
        f"{insns[fast]:,} instructions, {t2['board_control_ms']:.0f} ms for tiled2's "
        f"{insns['tiled2']:,}."])


def resnet_notes(doc: dict[str, Any]) -> str:
    """The figures of the per-layer discussion: GOPS ranges, ratios, the int32 read-back."""
    fast = _fast_resnet(doc)
    vta = [layer for layer in doc["layers"] if layer[fast].get("where") == "vta"]
    three = [layer for layer in vta if layer[fast]["k"] % 9 == 0 and layer[fast]["k"] >= 576]
    stem = vta[0]
    down = [layer for layer in vta if layer[fast]["k"] in (64, 128, 256)]
    gops = [layer[fast]["gops"] for layer in three]
    util = [100 * layer[fast]["gemm_utilization"] for layer in three]
    lead = [layer["optimized"]["vta_ms"] / layer[fast]["vta_ms"] for layer in three + [stem]]
    opt_gops = [layer["optimized"]["gops"] for layer in vta if layer[fast]["m"] > 1]
    dgops = [layer[fast]["gops"] for layer in down]
    dlead = [layer["optimized"]["vta_ms"] / layer[fast]["vta_ms"] for layer in down]
    t = doc["totals"]
    paper = doc["paper"]["layer_gops"]
    names = ", ".join(f"#{d['index']}" for d in down)
    return "\n".join([
        f"- `{fast}` runs the 3x3 layers at {min(gops):.0f}-{max(gops):.0f} GOPS "
        f"({min(util):.0f}-{max(util):.0f}% GEMM utilisation) and the 7x7 stem at "
        f"{stem[fast]['gops']:.0f} GOPS, {min(lead):.1f}-{max(lead):.1f}x faster than "
        f"`optimized` on those; `optimized` runs the convolutions at "
        f"{min(opt_gops):.0f}-{max(opt_gops):.0f} GOPS (the ZCU102 study: "
        f"{paper[0]:.0f}-{paper[1]:.0f} per layer). `tiled2` takes "
        f"{t['tiled2']['vta_ms'] / t['optimized']['vta_ms']:.1f}x `optimized`'s time in total "
        f"({t['tiled2']['vta_ms']:.0f} vs {t['optimized']['vta_ms']:.0f} ms).",
        f"- The 1x1 stride-2 downsampling convolutions ({names}"
        f": {min(dgops):.0f}-{max(dgops):.0f} GOPS, {min(dlead):.1f}-{max(dlead):.1f}x over "
        f"`optimized`) and the FullyConnected (M = 1: {vta[-1][fast]['gops']:.0f} GOPS) have "
        "little work per byte moved and stay far from the peak.",
        "- **Cost of the int32 read-back** (bit-exact requantization on the CPU), extra "
        "accelerator cycles over the whole network against an int8 store: "
        + ", ".join(f"{t[k]['int32_readback_extra_cycles_pct']:.1f}% with `{k}`"
                    for k in reversed(list(t))) + ".",
        "",
        "Source: `benchmarks/results/vta_resnet18.json` (`benchmarks/vta_resnet18.py`).",
    ])


def resnet_layers(doc: dict[str, Any]) -> str:
    fast = _fast_resnet(doc)
    rows = []
    for layer in doc["layers"]:
        f = layer[fast]
        if f.get("where") != "vta":
            continue
        cost = 100 * (f["cycles"] / f["int8_store"]["cycles"] - 1)
        rows.append([layer["index"], f"{f['m']} x {f['k']} x {f['n']}", f"{layer['ref_ms']:.2f}",
                     f"{layer['host_ms']:.2f}", f"{layer['tiled2']['vta_ms']:.2f}",
                     f"{layer['optimized']['vta_ms']:.2f}", f"{f['vta_ms']:.2f}",
                     f"{f['gops']:.1f}", f"{100 * f['gemm_utilization']:.0f}%",
                     f"{layer['optimized']['vta_ms'] / f['vta_ms']:.2f}x", f"{cost:+.0f}%"])
    return "\n".join([
        "Per offloaded layer (`benchmarks/results/vta_resnet18.json`):", "",
        *table(["#", "GEMM M x K x N", "ref runtime ms", "host ms", "tiled2 ms", "optimized ms",
                f"{fast} ms", f"{fast} GOPS", f"{fast} util", f"optimized / {fast}",
                "int32 out cost"], rows, left=2)])


def resnet_log(doc: dict[str, Any]) -> str:
    """The first three and last lines of the fast schedule's DarkNet-style log, as printed."""
    log = doc["log"][_fast_resnet(doc)]
    layers = [line for line in log if " : " in line]
    tail = [line for line in log if " : " not in line]
    return "\n".join(["```", *layers[:3], "...", *layers[-2:], *tail, "```",
                      "(from `benchmarks/results/vta_resnet18.json`: ResNet-18 at 224x224, "
                      "one run.)"])


def _fast_resnet(doc: dict[str, Any]) -> str:
    return list(doc["totals"])[-1]


SECTIONS = (
    Section("vta-gemm-table", "vta_gemm_table", gemm_table),
    Section("vta-gemm-sensitivity", "vta_gemm_table", sensitivity),
    Section("vta-gemm-wall", "vta_gemm_table", wall),
    Section("vta-peak-1024", "vta_gemm_table", peak_1024),
    Section("vta-resnet-totals", "vta_resnet18", resnet_totals),
    Section("vta-resnet-layers", "vta_resnet18", resnet_layers),
    Section("vta-resnet-notes", "vta_resnet18", resnet_notes),
    Section("vta-resnet-log", "vta_resnet18", resnet_log),
)
