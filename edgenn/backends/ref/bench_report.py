"""Per-layer timings of the numpy reference runtime as the common ``BenchReport``."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from edgenn.analysis import node_macs
from edgenn.backends.bench_report import BenchReport, BenchSettings, Column, LayerReport
from edgenn.ir import Graph, Node


def ref_report(graph: Graph, nodes: Sequence[Node], runs: Sequence[Sequence[float]],
               settings: BenchSettings, arena_bytes: int) -> BenchReport[None]:
    """``runs[r][i]``: seconds of layer ``i`` in timed run ``r``."""
    per_layer = [1e3 * statistics.median(run[i] for run in runs) for i in range(len(nodes))]
    totals = [1e3 * sum(run) for run in runs]
    layer_sum = sum(per_layer) or 1.0
    layers = tuple(
        LayerReport(index=i, name=n.name, op=n.op, where="ref", kernel="numpy",
                    macs=node_macs(graph, n), ms=ms,
                    shape=tuple(graph.tensor(n.outputs[0]).shape),
                    extra={"share": ms / layer_sum})
        for i, (n, ms) in enumerate(zip(nodes, per_layer, strict=True)))
    median = statistics.median(totals)
    return BenchReport(
        model=graph.name, target="ref", title=f"{graph.name} on ref (numpy reference runtime)",
        time_basis=(f"measured wall clock: median of {settings.repeats} runs after "
                    f"{settings.warmup} warm-up"),
        layers=layers, total_ms=median, total_macs=sum(layer.macs or 0 for layer in layers),
        arena_bytes=arena_bytes, columns=(Column("share", "share", ".1%"),),
        summary=(f"latency: median {median:.3f} ms over {settings.repeats} runs (min "
                 f"{min(totals):.3f}, max {max(totals):.3f}, {settings.warmup} warm-up)",
                 f"arena {arena_bytes:,} B (static plan at batch 1)"),
        notes=("the reference runtime is numpy, written for exactness, not speed",),
        extra={"median_ms": median, "min_ms": min(totals), "max_ms": max(totals),
               "repeats": settings.repeats, "warmup": settings.warmup}, detail=None)
