"""A host latency measurement (``HostBenchResult``) as the common ``BenchReport``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgenn.backends.bench_report import BenchReport, Column, LayerReport

if TYPE_CHECKING:
    from edgenn.backends.host.executable import HostBenchResult, LayerTiming

NOT_A_HOST_KERNEL = "not a host kernel"


def chosen_by(source: str) -> str:
    """The table's short form of where a layer's configuration came from; a fallback's reason
    is printed once, below the table."""
    if source == NOT_A_HOST_KERNEL:
        return ""
    return "default*" if source.startswith("default:") else source


def _layer(t: LayerTiming, total_ms: float) -> LayerReport:
    return LayerReport(
        index=t.index, name=t.name, op=t.op, where=t.where, kernel=t.kernel, ms=t.median_ms,
        extra={"schedule": t.schedule, "source": t.source, "chosen_by": chosen_by(t.source),
               "tuned_ms": t.tuned_ms, "cpu_ms": t.cpu_ms,
               "share": t.median_ms / total_ms if total_ms else None})


def host_report(result: HostBenchResult, emulation_note: str,
                arena_bytes: int | None = None) -> BenchReport[HostBenchResult]:
    """The report of ``result``; ``emulation_note`` is shown when the topology is emulated."""
    emulated = result.topology.emulated
    tag = " (emulated)" if emulated else ""
    threads = result.threads if result.threads is not None else "auto"
    layer_sum = sum(t.median_ms for t in result.layers) or 1.0
    summary = [
        f"latency{tag}: median {result.median_ms:.3f} ms over {result.repeats} runs "
        f"(min {result.min_ms:.3f}, max {result.max_ms:.3f}, {result.warmup} warm-up)"]
    if result.cpu_critical_ms is not None:
        summary.append(
            f"load-independent estimate{tag}: {result.cpu_critical_ms:.3f} ms (per layer the "
            "busiest thread's CPU time, summed: other processes and hand-overs excluded)")
    fallback = [t for t in result.layers if t.source.startswith("default:")]
    if fallback:
        reasons = sorted({t.source.split(": ", 1)[1] for t in fallback})
        summary.append(f"default*: {len(fallback)} layer(s) ran the default configuration and "
                       "schedule: " + "; ".join(reasons))
    summary.append(f"target fingerprint: {result.fingerprint}")
    extra: dict[str, Any] = {
        "median_ms": result.median_ms, "mean_ms": result.mean_ms, "min_ms": result.min_ms,
        "max_ms": result.max_ms, "stdev_ms": result.stdev_ms, "repeats": result.repeats,
        "warmup": result.warmup, "schedule": result.mode, "threads": result.threads,
        "topology": result.topology.describe(), "topology_detail": result.topology.to_dict(),
        "emulated": emulated, "fingerprint": result.fingerprint,
        "emulation_note": emulation_note if emulated else None,
        "cpu_critical_ms": result.cpu_critical_ms,
    }
    return BenchReport(
        model=result.model, target="host",
        title=(f"{result.model} on host{tag}: {result.topology.describe()}; schedule "
               f"{result.mode}, threads {threads}"),
        time_basis=(f"measured wall clock{tag}: median of {result.repeats} runs after "
                    f"{result.warmup} warm-up"),
        layers=tuple(_layer(t, layer_sum) for t in result.layers), total_ms=result.median_ms,
        arena_bytes=arena_bytes,
        columns=(Column("schedule", "schedule"), Column("chosen_by", "chosen by"),
                 Column("share", "share", ".1%")),
        summary=tuple(summary), notes=(emulation_note,) if emulated else (), extra=extra,
        detail=result)
