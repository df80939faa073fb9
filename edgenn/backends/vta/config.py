"""Hardware configuration of the VTA-class accelerator: shape, buffers, clock, bus, timing.

The shape and buffer sizes are VTA's ``vta_config.json`` defaults (int8 inputs and weights,
int32 accumulators, BATCH = 1, BLOCK_IN = BLOCK_OUT = 16; 32 KiB uop, 32 KiB inp, 256 KiB wgt,
128 KiB acc). Every timing constant carries its provenance in the field metadata: ``source``
(VTA's sources or the HLS tool's documented defaults), ``spec`` (../shared/vta-spec.md) or
``assumed`` (ours; reported by name in every result through ``assumed_constants()``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from edgenn.backends.vta.errors import VtaError


def _meta(provenance: str, note: str) -> dict[str, str]:
    return {"provenance": provenance, "note": note}


# name -> (clock MHz, AXI bus bits, board). ZCU102 is the ZCU102 GEMM study's board (same
# 333 MHz / 128-bit VTA build as ZCU104 and Ultra96: VTA's pkg_config gives those two
# fpga_freq 333 and a 2**7-bit AXI bus; PYNQ-Z1 100 MHz and 2**6 bits).
PRESETS: dict[str, tuple[float, int, str]] = {
    "pynq": (100.0, 64, "PYNQ-Z1, Zynq-7020"),
    "ultra96": (1000.0 / 3.0, 128, "Ultra96, Zynq UltraScale+ ZU3EG"),
    "zcu104": (1000.0 / 3.0, 128, "ZCU104, Zynq UltraScale+ ZU7EV"),
    "zcu102": (1000.0 / 3.0, 128, "ZCU102, Zynq UltraScale+ ZU9EG (the ZCU102 GEMM study's board)"),
}
DEFAULT_PRESET = "zcu102"


@dataclass(frozen=True)
class VtaConfig:
    """One accelerator build. Construct with ``VtaConfig.preset(name)``; fields are frozen."""

    preset_name: str = DEFAULT_PRESET
    clock_mhz: float = 1000.0 / 3.0
    bus_bits: int = 128

    # --- shape and buffers (log2 values as in vta_config.json) ---
    log_uop_buff_size: int = 15
    log_inp_buff_size: int = 15
    log_wgt_buff_size: int = 18
    log_acc_buff_size: int = 17

    # --- timing (cycles) ---
    dram_read_latency: int = field(default=48, metadata=_meta(
        "assumed", "AXI read latency per DMA row; the spec gives 32-64 for DDR behind the PS"))
    dram_write_latency: int | None = field(default=None, metadata=_meta(
        "assumed", "AXI write latency per DMA row; None = half the read latency (spec: ~L/2)"))
    burst_beats: int = field(default=16, metadata=_meta(
        "source", "HLS m_axi default max burst length (beats)"))
    outstanding_bursts: int = field(default=16, metadata=_meta(
        "source", "HLS m_axi default outstanding transactions: bursts of one row pipeline"))
    gemm_cycles_per_uop: int = field(default=1, metadata=_meta(
        "source", "the GEMM core retires one 1x16x16 micro-op per cycle"))
    gemm_drain: int = field(default=6, metadata=_meta(
        "spec", "GEMM pipeline drain per instruction (spec: about 6)"))
    alu_cycles_per_uop: int = field(default=2, metadata=_meta(
        "source", "ALU initiation interval 2 in the HLS design"))
    alu_drain: int = field(default=6, metadata=_meta(
        "assumed", "ALU pipeline drain per instruction, taken equal to the GEMM drain"))
    dispatch: int = field(default=3, metadata=_meta(
        "assumed", "decode and dispatch per instruction (spec: 2-4)"))
    cmd_queue_depth: int = field(default=8, metadata=_meta(
        "source", "instruction queue of each module (STREAM_IN_DEPTH of the HLS design)"))
    token_queue_depth: int = field(default=8, metadata=_meta(
        "source", "dependence token queues, HLS streams of the same depth"))
    pad_cycles_per_beat: int = field(default=1, metadata=_meta(
        "assumed", "LOAD zero padding: one SRAM write cycle per bus-width of zeros, no DRAM"))

    # --- fixed by this implementation (VTA defaults) ---
    batch: int = 1
    block_in: int = 16
    block_out: int = 16

    def __post_init__(self) -> None:
        if self.batch != 1 or self.block_in != 16 or self.block_out != 16:
            raise VtaError("only BATCH=1, BLOCK_IN=BLOCK_OUT=16 (VTA's default shape) is supported")
        if self.bus_bits not in (32, 64, 128, 256, 512):
            raise VtaError(f"bus width {self.bus_bits} bits: expected 32, 64, 128, 256 or 512")
        if self.clock_mhz <= 0:
            raise VtaError(f"clock {self.clock_mhz} MHz must be positive")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if "provenance" in f.metadata and value is not None and value < 0:
                raise VtaError(f"timing constant {f.name}={value} must not be negative")
        if min(self.burst_beats, self.outstanding_bursts, self.cmd_queue_depth,
               self.token_queue_depth, self.gemm_cycles_per_uop, self.alu_cycles_per_uop) < 1:
            raise VtaError("burst length, outstanding bursts, queue depths and cycles per "
                           "micro-op must be at least 1")
        for name in ("uop", "inp", "wgt", "acc"):
            size = getattr(self, f"log_{name}_buff_size")
            if not 8 <= size <= 24:
                raise VtaError(f"log2 {name} buffer size {size} out of range 8..24")

    # ----- construction -----
    @classmethod
    def preset(cls, name: str = DEFAULT_PRESET, **overrides: Any) -> VtaConfig:
        """The named board (``pynq``, ``ultra96``, ``zcu104``, ``zcu102``), optionally altered."""
        if name not in PRESETS:
            raise VtaError(f"unknown VTA preset {name!r} (available: {', '.join(PRESETS)})")
        clock, bus, _ = PRESETS[name]
        fields: dict[str, Any] = {"preset_name": name, "clock_mhz": clock, "bus_bits": bus}
        return cls(**{**fields, **overrides})

    def with_bus_bits(self, bus_bits: int) -> VtaConfig:
        return dataclasses.replace(self, bus_bits=int(bus_bits))

    def replace(self, **changes: Any) -> VtaConfig:
        return dataclasses.replace(self, **changes)

    # ----- element sizes (bytes) and buffer depths (elements) -----
    @property
    def inp_elem_bytes(self) -> int:
        return self.batch * self.block_in  # int8

    @property
    def wgt_elem_bytes(self) -> int:
        return self.block_out * self.block_in  # int8, stored transposed [out][in]

    @property
    def acc_elem_bytes(self) -> int:
        return self.batch * self.block_out * 4  # int32

    @property
    def out_elem_bytes(self) -> int:
        return self.batch * self.block_out  # int8

    uop_elem_bytes: ClassVar[int] = 4  # one 32-bit micro-op
    insn_bytes: ClassVar[int] = 16  # one 128-bit instruction

    @property
    def uop_depth(self) -> int:
        return (1 << self.log_uop_buff_size) // self.uop_elem_bytes

    @property
    def inp_depth(self) -> int:
        return (1 << self.log_inp_buff_size) // self.inp_elem_bytes

    @property
    def wgt_depth(self) -> int:
        return (1 << self.log_wgt_buff_size) // self.wgt_elem_bytes

    @property
    def acc_depth(self) -> int:
        return (1 << self.log_acc_buff_size) // self.acc_elem_bytes

    @property
    def out_depth(self) -> int:
        return self.acc_depth  # the output buffer is indexed like the accumulator

    def log_depth(self, buffer: str) -> int:
        """log2 of a buffer's depth: the width of the index fields that address it."""
        depth: int = getattr(self, f"{buffer}_depth")
        return depth.bit_length() - 1

    @property
    def write_latency(self) -> int:
        if self.dram_write_latency is not None:
            return self.dram_write_latency
        return self.dram_read_latency // 2

    # ----- derived performance figures -----
    @property
    def bus_bytes(self) -> int:
        return self.bus_bits // 8

    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    @property
    def peak_gops(self) -> float:
        return 2.0 * self.macs_per_cycle * self.clock_mhz * 1e6 / 1e9

    @property
    def dram_gbs(self) -> float:
        """Bandwidth of one AXI channel (bytes per cycle times the clock), GB/s."""
        return self.bus_bytes * self.clock_mhz * 1e6 / 1e9

    @property
    def ridge_ops_per_byte(self) -> float:
        return self.peak_gops / self.dram_gbs

    def cycles_to_ms(self, cycles: float) -> float:
        return cycles / (self.clock_mhz * 1e3)

    # ----- reporting -----
    def timing_constants(self) -> dict[str, dict[str, Any]]:
        """Every timing constant with its value and provenance (source / spec / assumed)."""
        out: dict[str, dict[str, Any]] = {}
        for f in dataclasses.fields(self):
            if "provenance" in f.metadata:
                value = getattr(self, f.name)
                if f.name == "dram_write_latency":
                    value = self.write_latency
                out[f.name] = {"value": value, **f.metadata}
        return out

    def assumed_constants(self) -> dict[str, float]:
        """The constants that are ours, not VTA's: every report names them."""
        return {name: float(c["value"]) for name, c in self.timing_constants().items()
                if c["provenance"] == "assumed"}

    def describe(self) -> dict[str, Any]:
        return {
            "preset": self.preset_name, "clock_mhz": self.clock_mhz, "bus_bits": self.bus_bits,
            "peak_gops": self.peak_gops, "dram_gbs": self.dram_gbs,
            "buffers_bytes": {name: 1 << getattr(self, f"log_{name}_buff_size")
                              for name in ("uop", "inp", "wgt", "acc")},
        }
