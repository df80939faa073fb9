"""A Cortex-M emulation (``BenchResult``) as the common ``BenchReport``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgenn.backends.bench_report import BenchReport, Column, LayerReport
from edgenn.passes.fusion.chains import fused_names

if TYPE_CHECKING:
    from edgenn.backends.cortexm.executable import BenchResult, CortexMExecutable

CYCLE_MODEL_NOTE = (
    "edgenn's Cortex-M4 cycle model (docs/cycle_model.md, the TRM's cycle rules): zero wait "
    "states; flash wait states, caches, bus contention, unaligned accesses and interrupts "
    "ignored"
)


def flash_summary(breakdown: dict[str, int], layers_bytes: int, total: int) -> str:
    """One line: flash owned by the layers vs shared kernels (counted once), runtime, other."""
    return (f"flash: layers {layers_bytes:,} B + shared kernels "
            f"{breakdown.get('shared_kernels', 0):,} B (counted once) + runtime "
            f"{breakdown.get('runtime', 0):,} B + other {breakdown.get('other', 0):,} B "
            f"= {total:,} B")


def arena_text(arena_bytes: int, caller_input_bytes: int = 0) -> str:
    """``23,952 B``, or with inputs read from the caller's buffers (``--input-buffer caller``)
    ``23,952 B + the caller's input 27,648 B``: both figures, the input not hidden."""
    text = f"{arena_bytes:,} B"
    if caller_input_bytes:
        text += f" + the caller's input {caller_input_bytes:,} B"
    return text


def _skipped_layers(exe: CortexMExecutable, skipped_blocks: set[str]) -> dict[int, str]:
    """Layer index -> what runs instead, for the layers of the skipped blocks."""
    out: dict[int, str] = {}
    for b in exe.blocks:
        if b["name"] in skipped_blocks:
            for i in b["layers"]:
                out[int(i)] = f"skipped {b['name']}"
            if b.get("skipped_as", "alias") != "alias":  # the block's last slot requantizes x
                out[int(b["layers"][-1])] += f": {b['skipped_as']} of its input"
    return out


def cortexm_report(exe: CortexMExecutable, result: BenchResult,
                   clock_mhz: float) -> BenchReport[BenchResult]:
    """The report of one emulated inference at ``clock_mhz`` (for the ms figures)."""
    clock_hz = clock_mhz * 1e6
    built = exe.graph  # after fusion, when asked for: its nodes are the layers that ran
    shapes = {n.name: tuple(built.tensor(n.outputs[0]).shape) for n in built.nodes}
    skipped = _skipped_layers(exe, set(result.skip))
    layers = []
    for layer in result.layers:
        cycles = layer.cycles
        kernel, macs = layer.kernel, layer.macs
        if layer.index in skipped:  # not executed in this configuration
            kernel, macs = skipped[layer.index], 0
        layers.append(LayerReport(
            index=layer.index, name=layer.name, op=layer.op, where=result.core, kernel=kernel,
            macs=macs, cycles=cycles, instructions=layer.instructions,
            ms=1e3 * cycles / clock_hz if cycles is not None else None,
            shape=shapes.get(layer.name),
            extra={"macs_per_cycle": macs / cycles if cycles else None,
                   "flash_bytes": layer.flash_bytes}))
    total = result.total_cycles
    total_macs = sum(layer.macs or 0 for layer in layers)
    memory = (f"arena {arena_text(result.arena_bytes, result.caller_input_bytes)}   "
              f"stack {result.stack_bytes:,} B   "
              f"flash {result.flash_bytes:,} B   RAM {result.ram_bytes:,} B")
    if total is not None:
        summary = [
            f"total {total:,} cycles = {1e3 * total / clock_hz:.2f} ms at {clock_mhz:g} MHz, "
            f"{total_macs / total:.3f} MAC/cycle (ceiling 2 MAC/cycle: one SMLAD per cycle)"]
        notes = [CYCLE_MODEL_NOTE]
    else:
        summary = [f"total {result.total_instructions:,} instructions; no cycle model for "
                   f"{result.core}: instruction counts only"]
        notes = [f"no cycle model for {result.core}: instruction counts only"]
    summary.append(memory)
    if result.flash_breakdown:
        summary.append(flash_summary(dict(result.flash_breakdown),
                                     sum(layer.flash_bytes for layer in result.layers),
                                     result.flash_bytes))
    extra: dict[str, Any] = {
        "core": result.core, "clock_hz": clock_hz, "cycle_model": result.cycle_model,
        "sizes": dict(result.sizes), "flash_breakdown": dict(result.flash_breakdown),
        "caller_input_bytes": result.caller_input_bytes,
        "skip": list(result.skip), "switch_cycles": result.switch_cycles,
        "switch_instructions": result.switch_instructions,
        "fused_chains": [list(fused_names(n)) for n in built.nodes
                         if n.op == "FusedConvChain"],
    }
    return BenchReport(
        model=built.name, target=result.core,
        title=f"{built.name} on {result.core} (emulated)",
        time_basis=(f"cycle model (Cortex-M4, zero wait states) at {clock_mhz:g} MHz"
                    if total is not None else "no time: instruction counts only"),
        layers=tuple(layers), total_ms=1e3 * total / clock_hz if total is not None else None,
        total_cycles=total, total_instructions=result.total_instructions, total_macs=total_macs,
        arena_bytes=result.arena_bytes, flash_bytes=result.flash_bytes,
        ram_bytes=result.ram_bytes, stack_bytes=result.stack_bytes,
        columns=(Column("macs_per_cycle", "MAC/cycle", ".3f"),
                 Column("flash_bytes", "flash B", ",")),
        summary=tuple(summary), notes=tuple(notes), extra=extra, detail=result)

