"""One network run on the accelerator (``NetworkReport``) as the common ``BenchReport``."""

from __future__ import annotations

from typing import Any

from edgenn.backends.bench_report import BenchReport, Column, LayerReport
from edgenn.backends.vta.network_report import LayerRecord, NetworkReport

COMMON_LAYER_KEYS = ("index", "name", "op", "where", "ms")


def _layer(record: LayerRecord) -> LayerReport:
    data = record.to_json()
    on_vta = record.where == "vta"
    extra: dict[str, Any] = {k: v for k, v in data.items() if k not in COMMON_LAYER_KEYS}
    if on_vta:
        m, k, n = record.mkn
        extra["gemm_mkn"] = f"{m} {k} {n}"
        extra["dram_total"] = sum(record.dram_bytes.values())
    return LayerReport(
        index=record.index, name=record.name, op=record.op, where=record.where,
        kernel="gemm" if on_vta else "numpy",
        # why macs: the GEMMs' useful multiply-accumulates (padding excluded)
        macs=record.ops // 2 if on_vta else None,
        ms=float(data["ms"]), extra=extra)


def vta_report(report: NetworkReport, arena_bytes: int | None = None
               ) -> BenchReport[NetworkReport]:
    """The common report of one run; the DarkNet-style log comes before the table."""
    data = report.to_json()
    log = report.log()
    n = len(report.layers)
    extra = {k: v for k, v in data.items() if k not in ("layers", "model", "target")}
    layers = tuple(_layer(r) for r in report.layers)
    return BenchReport(
        model=report.model, target="vta",
        title=(f"{report.model} on vta ({report.preset}, {report.schedule} schedule, "
               f"{report.clock_mhz:g} MHz, {report.bus_bits}-bit)"),
        time_basis=("simulated accelerator (timing model) + measured host (numpy): "
                    "ms = VTA ms + host ms"),
        layers=layers, total_ms=float(data["total_ms"]),
        total_macs=sum(layer.macs or 0 for layer in layers), arena_bytes=arena_bytes,
        columns=(Column("gemm_mkn", "GEMM m k n"), Column("vta_ms", "VTA ms (sim)", ".3f"),
                 Column("gops", "GOPS", ".1f"),
                 Column("gemm_utilization", "GEMM util", ".0%"),
                 Column("dram_total", "DRAM bytes", ","), Column("host_ms", "host ms", ".3f")),
        log=tuple(log[:n]), summary=tuple(log[n:]), notes=(str(data["time_note"]),),
        extra=extra, detail=report)
