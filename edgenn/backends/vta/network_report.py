"""Per-layer cost of one network run with ``--target vta``, and its DarkNet-style log.

Two kinds of time, never mixed up:

* ``vta_ms``: the accelerator's **simulated** time (timing model cycles at the preset's clock)
  of the offloaded GEMMs;
* ``host_ms``: time **measured** on this machine for the work that stays on the CPU (im2col and
  requantization around each offloaded GEMM, and every layer that is not offloaded), run by
  the numpy reference code. It stands in for the board's ARM cores and is reported as such.

``total_ms`` is their sum: the accelerator and the host take turns, layer by layer, as in the
ZCU102 GEMM study's DarkNet integration. ``host_pack_ms`` (the simulator's own packing and
instruction generation, in Python) is reported as a separate term and not added: on a board
the weights are packed once at load time and instruction streams are cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# DarkNet's short layer names where ours differ; any other operator is lower-cased.
SHORT_NAMES = {
    "Conv2D": "conv", "FullyConnected": "connected", "MaxPool2D": "max", "AvgPool2D": "avg",
    "FusedConvChain": "fused",
}
MEMORY_TYPES = ("uop", "inp", "wgt", "acc", "out")


def short_name(op: str) -> str:
    return SHORT_NAMES.get(op, op.lower())


@dataclass(frozen=True)
class LayerRecord:
    """One node of the graph in one run: on the accelerator (``where == "vta"``) or the CPU."""

    index: int
    name: str
    op: str
    where: str  # "vta" or "cpu"
    host_ms: float  # measured: the CPU layer, or im2col + requantization of an offloaded one
    why_cpu: str | None = None  # for a CPU Conv2D / FullyConnected: why it was not offloaded
    gemms: tuple[Any, ...] = ()  # GemmReport of every GEMM call (groups, batch chunks)
    groups: int = 1
    mkn: tuple[int, int, int] = (0, 0, 0)  # one group's GEMM for the whole batch
    im2col_ms: float = 0.0
    requant_ms: float = 0.0

    @property
    def cycles(self) -> int:
        return sum(int(g.cycles) for g in self.gemms)

    @property
    def vta_ms(self) -> float:
        return sum(float(g.time_ms) for g in self.gemms)

    @property
    def ops(self) -> int:
        """Useful operations (2 per multiply-accumulate) of the layer's GEMMs, padding excluded."""
        return sum(2 * int(g.m) * int(g.k) * int(g.n) for g in self.gemms)

    @property
    def gops(self) -> float:
        return self.ops / (self.vta_ms * 1e6) if self.vta_ms > 0 else 0.0

    @property
    def host_pack_ms(self) -> float:
        return sum(float(g.host_pack_ms) for g in self.gemms)

    @property
    def board_control_ms(self) -> float:
        """Modelled board-CPU work to drive the accelerator (instruction generation, cache
        flush, launch; ``board_host``). Packing is left out: the measured host work of this
        layer (im2col, requantization) already moves its data on the CPU."""
        return sum(float(ms) for g in self.gemms for term, ms in g.board_host_ms.items()
                   if term != "packing")

    @property
    def dram_bytes(self) -> dict[str, int]:
        total = dict.fromkeys(MEMORY_TYPES, 0)
        for g in self.gemms:
            for kind, count in g.dram_bytes.items():
                total[kind] = total.get(kind, 0) + int(count)
        return total

    @property
    def gemm_utilization(self) -> float:
        """Cycle-weighted mean of the GEMMs' utilisation (useful micro-op cycles / cycles)."""
        cycles = self.cycles
        if not cycles:
            return 0.0
        return sum(float(g.gemm_utilization) * int(g.cycles) for g in self.gemms) / cycles

    def log_line(self) -> str:
        """``conv 3 : VTA_gemm 3136 576 64 => 52.1 GOPS (0.44 ms)``, DarkNet's layer line."""
        head = f"{short_name(self.op)} {self.index} : "
        if self.where == "cpu":
            why = f"  [{self.why_cpu}]" if self.why_cpu else ""
            return f"{head}CPU {self.host_ms:.2f} ms (host){why}"
        m, k, n = self.mkn
        groups = f" x{self.groups}" if self.groups > 1 else ""
        im2col = f"im2col {self.im2col_ms:.2f} ms, " if self.op == "Conv2D" else ""
        return (
            f"{head}VTA_gemm {m} {k} {n}{groups} => {self.gops:.1f} GOPS ({self.vta_ms:.2f} ms)"
            f"  + host {im2col}requant {self.requant_ms:.2f} ms"
        )

    def to_json(self) -> dict[str, Any]:
        m, k, n = self.mkn
        out: dict[str, Any] = {
            "index": self.index, "name": self.name, "op": self.op, "where": self.where,
            "host_ms": self.host_ms,
        }
        if self.where == "cpu":
            out["why_cpu"] = self.why_cpu
            out["ms"] = self.host_ms
            return out
        out.update({
            "m": m, "k": k, "n": n, "groups": self.groups, "cycles": self.cycles,
            "vta_ms": self.vta_ms, "ms": self.vta_ms + self.host_ms, "gops": self.gops,
            "dram_bytes": self.dram_bytes, "gemm_utilization": self.gemm_utilization,
            "instructions": sum(int(g.instructions) for g in self.gemms),
            "im2col_ms": self.im2col_ms, "requant_ms": self.requant_ms,
            "host_pack_ms": self.host_pack_ms,
            # every GEMM call (groups, batch chunks) with its tiling; constants are in "assumed"
            "gemm_calls": [
                {k: v for k, v in g.to_json().items() if k != "assumed"} for g in self.gemms
            ],
        })
        return out


@dataclass(frozen=True)
class NetworkReport:
    """Every layer of one run plus the totals the CLI and the benchmark print."""

    model: str
    preset: str
    schedule: str
    clock_mhz: float
    bus_bits: int
    batch: int
    layers: tuple[LayerRecord, ...]
    assumed: dict[str, float] = field(default_factory=dict)

    @property
    def offloaded(self) -> list[LayerRecord]:
        return [layer for layer in self.layers if layer.where == "vta"]

    def totals(self) -> dict[str, Any]:
        vta = self.offloaded
        cpu = [layer for layer in self.layers if layer.where == "cpu"]
        vta_ms = sum(layer.vta_ms for layer in vta)
        host_ms = sum(layer.host_ms for layer in self.layers)
        ops = sum(layer.ops for layer in vta)
        dram = dict.fromkeys(MEMORY_TYPES, 0)
        for layer in vta:
            for kind, count in layer.dram_bytes.items():
                dram[kind] = dram.get(kind, 0) + count
        return {
            "offloaded_layers": len(vta), "cpu_layers": len(cpu),
            "gemms": sum(len(layer.gemms) for layer in vta),
            "vta_cycles": sum(layer.cycles for layer in vta), "vta_ms": vta_ms,
            "vta_gops": ops / (vta_ms * 1e6) if vta_ms > 0 else 0.0, "gemm_ops": ops,
            "im2col_ms": sum(layer.im2col_ms for layer in vta),
            "requant_ms": sum(layer.requant_ms for layer in vta),
            "cpu_layers_ms": sum(layer.host_ms for layer in cpu),
            "host_ms": host_ms, "total_ms": vta_ms + host_ms,
            "host_pack_ms": sum(layer.host_pack_ms for layer in vta),
            "board_control_ms": sum(layer.board_control_ms for layer in vta),
            "dram_bytes": dram,
        }

    def log(self) -> list[str]:
        """The per-layer lines, then the totals (DarkNet prints one line per layer)."""
        t = self.totals()
        lines = [layer.log_line() for layer in self.layers]
        lines.append(
            f"VTA: {t['gemms']} GEMMs in {t['offloaded_layers']} layers, "
            f"{t['gemm_ops'] / 1e9:.2f} GOP in {t['vta_ms']:.2f} ms simulated => "
            f"{t['vta_gops']:.1f} GOPS ({self.schedule} schedule, {self.preset} at "
            f"{self.clock_mhz:g} MHz, {self.bus_bits}-bit bus)"
        )
        lines.append(
            f"host (measured, numpy): im2col {t['im2col_ms']:.2f} ms, requant "
            f"{t['requant_ms']:.2f} ms, {t['cpu_layers']} CPU layers {t['cpu_layers_ms']:.2f} ms"
        )
        lines.append(f"total {t['total_ms']:.2f} ms for a batch of {self.batch} (+ "
                     f"{t['board_control_ms']:.2f} ms modelled board CPU driving the "
                     f"accelerator: instruction generation, cache flush, launch)")
        return lines

    def to_json(self) -> dict[str, Any]:
        t = self.totals()
        return {
            "model": self.model, "target": "vta", "preset": self.preset,
            "schedule": self.schedule, "clock_mhz": self.clock_mhz, "bus_bits": self.bus_bits,
            "batch": self.batch, "total_ms": t["total_ms"], "vta_ms": t["vta_ms"],
            "host_ms": t["host_ms"], "gops": t["vta_gops"], "totals": t,
            "layers": [layer.to_json() for layer in self.layers],
            "assumed": dict(self.assumed),
            "time_note": "vta_ms is simulated (timing model); host_ms is measured on this "
                         "machine with numpy; total_ms = vta_ms + host_ms",
        }
