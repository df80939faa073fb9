"""Timing model: analytic cost per instruction, AXI channels, and the run's statistics.

The simulator (``sim.py``) runs the three in-order modules as an event-driven system: an
instruction starts at ``max(module free, push time of every token it pops)``, occupies its
module for the cost below, and pushes its tokens when it completes. This file holds the costs:

* GEMM: ``dispatch + gemm_drain + uops`` (one 1x16x16 micro-op per cycle).
* ALU: ``dispatch + alu_drain + 2 * uops`` (initiation interval 2).
* LOAD / STORE: ``dispatch + rows * (latency + beats + burst stalls) + zero-padding cycles``
  where ``beats = ceil(row bytes / bus bytes)``. Rows of one instruction are sequential (the
  HLS load loop issues one ``memcpy`` per row); the bursts inside a row pipeline (up to
  ``outstanding_bursts`` in flight), so a row pays its latency once.
* The AXI read channel is shared by every reader (load module: inp / wgt; compute module:
  uop / acc) and the write channel by the store module. A channel is a bandwidth resource:
  beats of different requesters serialise, their latencies overlap (``Channel.transfer``).
* FINISH and no-ops (``x_size == 0``): ``dispatch``.

Instruction fetch is not on the critical path (the fetch module runs ahead, queues assumed
deep enough) but its DRAM traffic is counted as ``insn`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.isa import AluInsn, GemmInsn, Insn, MemInsn, MemType, Opcode

MEM_KEYS = ("uop", "inp", "wgt", "acc", "out")
MODULES = ("load", "compute", "store")


def elem_bytes(config: VtaConfig, mem: MemType) -> int:
    return {MemType.UOP: config.uop_elem_bytes, MemType.INP: config.inp_elem_bytes,
            MemType.WGT: config.wgt_elem_bytes, MemType.ACC: config.acc_elem_bytes,
            MemType.OUT: config.out_elem_bytes}[mem]


def row_cycles(config: VtaConfig, row_bytes: int, latency: int) -> int:
    """Cycles of one DMA row: its latency, its beats, and stalls if bursts cannot cover latency."""
    beats = -(-row_bytes // config.bus_bytes)
    bursts = -(-beats // config.burst_beats)
    # with k bursts in flight the stream stays continuous when k bursts outlast the latency
    window = config.outstanding_bursts * config.burst_beats
    stall = max(0, latency + config.burst_beats - window)
    windows = -(-bursts // config.outstanding_bursts) - 1
    return latency + beats + windows * stall


@dataclass(frozen=True, slots=True)
class DmaCost:
    """What a LOAD / STORE needs: uncontended cycles, channel beats, DRAM bytes."""

    cycles: int
    beats: int
    dram_bytes: int
    latency: int


def dma_cost(config: VtaConfig, insn: MemInsn) -> DmaCost:
    return _dma_cost(config, insn.opcode, insn.mem_type, insn.y_size, insn.x_size, insn.y_pad0,
                     insn.y_pad1, insn.x_pad0, insn.x_pad1)


@lru_cache(maxsize=4096)
def _dma_cost(config: VtaConfig, opcode: Opcode, mem: MemType, y_size: int, x_size: int,
              y_pad0: int, y_pad1: int, x_pad0: int, x_pad1: int) -> DmaCost:
    if x_size == 0:
        return DmaCost(config.dispatch, 0, 0, 0)
    e = elem_bytes(config, mem)
    latency = config.write_latency if opcode == Opcode.STORE else config.dram_read_latency
    row_bytes = x_size * e
    rows = y_size
    cycles = config.dispatch + rows * row_cycles(config, row_bytes, latency)
    pad_elems = (y_size + y_pad0 + y_pad1) * (x_size + x_pad0 + x_pad1) - y_size * x_size
    if pad_elems:
        cycles += pad_elems * -(-e // config.bus_bytes) * config.pad_cycles_per_beat
    beats = rows * -(-row_bytes // config.bus_bytes)
    return DmaCost(cycles, beats, rows * row_bytes, latency)


def compute_cycles(config: VtaConfig, insn: GemmInsn | AluInsn) -> int:
    if isinstance(insn, GemmInsn):
        return config.dispatch + config.gemm_drain + insn.uops_executed * config.gemm_cycles_per_uop
    return config.dispatch + config.alu_drain + insn.uops_executed * config.alu_cycles_per_uop


@dataclass
class Channel:
    """One AXI direction, a bandwidth resource: one beat per cycle, shared by its requesters."""

    free_at: int = 0

    def transfer(self, start: int, cost: DmaCost, dispatch: int) -> int:
        """Reserve ``cost.beats`` beats for a DMA issued at ``start``; return its end cycle."""
        if cost.beats == 0:
            return start + cost.cycles
        first_data = max(self.free_at, start + dispatch + cost.latency)
        self.free_at = first_data + cost.beats
        return max(start + cost.cycles, self.free_at)


def insn_kind(insn: Insn) -> str:
    """A short name for instruction counts: ``LOAD INP``, ``GEMM``, ``ALU MIN``, ``NOP-LOAD``."""
    if isinstance(insn, MemInsn):
        if insn.x_size == 0:
            return f"NOP-{insn.stage.name}"
        return f"{insn.opcode.name} {insn.mem_type.name}"
    if isinstance(insn, AluInsn):
        return f"ALU {insn.alu_op.name}"
    return insn.opcode.name


@dataclass
class SimStats:
    """Totals of one program run: the numbers every report is built from."""

    cycles: int = 0
    busy: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODULES, 0))
    dram_bytes: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys((*MEM_KEYS, "insn"), 0))
    insn_counts: dict[str, int] = field(default_factory=dict)
    instructions: int = 0
    gemm_uops: int = 0  # accumulating micro-ops (the useful ones)
    gemm_reset_uops: int = 0
    alu_uops: int = 0
    trace: list[tuple[int, str, int, int]] | None = None  # (index, module, start, end)
    max_tokens: dict[str, int] = field(default_factory=dict)  # deepest each token queue got

    @property
    def gemm_utilization(self) -> float:
        """Accumulating micro-op cycles over total cycles (1.0 = the GEMM core never idles)."""
        return self.gemm_uops / self.cycles if self.cycles else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"cycles": self.cycles, "busy": dict(self.busy), "dram_bytes": dict(self.dram_bytes),
                "insn_counts": dict(self.insn_counts), "instructions": self.instructions,
                "gemm_uops": self.gemm_uops, "gemm_reset_uops": self.gemm_reset_uops,
                "alu_uops": self.alu_uops, "gemm_utilization": self.gemm_utilization,
                "max_tokens": dict(self.max_tokens)}
