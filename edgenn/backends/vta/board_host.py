"""The board's host CPU: the work a real VTA board does on its ARM cores around each GEMM.

The simulator times the accelerator. A wall-clock measurement on the board (Table 2 of
the ZCU102 GEMM study, docs/references.md) also contains the host side of every call, done
before the accelerator starts and after it finishes, so it adds to the device time instead
of overlapping it:

* ``packing``: A, B (and the bias) reordered into the tiled layouts, C unpacked afterwards;
* ``instruction generation``: VTA's runtime builds every 128-bit instruction on the CPU (the
  dependence flags, the micro-op kernel lookup, the queue push) before ``VTASynchronize``;
* ``cache flush``: the instruction and micro-op buffers are flushed to DRAM for the device;
* ``launch``: starting the device and polling for FINISH.

This is a *model* of that CPU, not of this machine (``GemmReport.host_pack_ms`` is what the
simulator's own Python took here). Every constant is named and labelled ``assumed`` or
``calibrated``; reports list them. The per-instruction cost is the term that separates
schedules: tiled2 issues about three instructions per 16x16x16 step, optimized about one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from edgenn.backends.vta.errors import VtaError


def _meta(provenance: str, note: str) -> dict[str, str]:
    return {"provenance": provenance, "note": note}


@dataclass(frozen=True)
class BoardHost:
    """Host CPU costs of one accelerator call (nanoseconds; microseconds for the launch)."""

    insn_ns: float = field(default=135.0, metadata=_meta(
        "calibrated", "runtime work per instruction generated on the board's Cortex-A53: "
                      "a least-squares fit (relative error) of the ZCU102 study's Table 2 wall "
                      "times minus our device time and the other terms gave 135 ns "
                      "(benchmarks/vta_gemm_table.py refits it on every run)"))
    pack_ns_per_byte: float = field(default=1.0, metadata=_meta(
        "assumed", "reordering A, B, bias into tiles and C back: about 1 GB/s on an A53"))
    flush_ns_per_byte: float = field(default=0.25, metadata=_meta(
        "assumed", "cache clean of the instruction and micro-op buffers (64-B lines)"))
    launch_us: float = field(default=20.0, metadata=_meta(
        "assumed", "start the device, poll its FINISH flag, return"))

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if getattr(self, f.name) < 0:
                raise VtaError(f"board host constant {f.name}={getattr(self, f.name)} must not "
                               "be negative")

    def constants(self) -> dict[str, dict[str, Any]]:
        """Every constant with its value and provenance, for reports."""
        return {f.name: {"value": getattr(self, f.name), **f.metadata}
                for f in dataclasses.fields(self)}

    def cost_ms(self, *, instructions: int, packed_bytes: int, unpacked_bytes: int,
                insn_bytes: int, uop_bytes: int) -> dict[str, float]:
        """The named terms of one call, in milliseconds."""
        return {
            "packing": (packed_bytes + unpacked_bytes) * self.pack_ns_per_byte * 1e-6,
            "instruction_generation": instructions * self.insn_ns * 1e-6,
            "cache_flush": (insn_bytes + uop_bytes) * self.flush_ns_per_byte * 1e-6,
            "launch": self.launch_us * 1e-3,
        }
