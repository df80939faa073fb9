"""``compile_vta``: an int8 graph with every Conv2D / FullyConnected on the accelerator.

The graph is built by the reference runtime first (validation, quantization constants, every
layer's ``build``); then each int8 Conv2D / FullyConnected that the accelerator can take is
swapped for its offloaded version (``conv.py``) and every other layer stays the reference's,
run on the host. ``run`` gives the reference runtime's outputs bit for bit; each run also
leaves a ``NetworkReport`` (simulated accelerator time per GEMM, measured host time per CPU
step) whose ``log()`` is the DarkNet-style per-layer log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgenn.backends.bench_report import BenchReport, BenchSettings
from edgenn.backends.executable import refuse_state
from edgenn.backends.ref import RefExecutable, compile_ref
from edgenn.backends.ref.runtime import forward, layer_args
from edgenn.backends.vta.bench_report import vta_report
from edgenn.backends.vta.config import DEFAULT_PRESET, VtaConfig
from edgenn.backends.vta.conv import GEMM_OPS, VtaGemmLayer, cpu_reason, offload
from edgenn.backends.vta.network_report import LayerRecord, NetworkReport
from edgenn.backends.vta.offload import GemmFn, OffloadTarget
from edgenn.backends.vta.schedules import DEFAULT_SCHEDULE, schedule_name
from edgenn.errors import EdgennError
from edgenn.ir import DType, Graph
from edgenn.ir.batch import first_sample, takes_batch


def vta_config(preset: str = DEFAULT_PRESET, bus_bits: int | None = None) -> VtaConfig:
    """The accelerator configuration of a named board preset, optionally with another bus."""
    config = VtaConfig.preset(preset)
    if bus_bits is not None:
        config = config.with_bus_bits(int(bus_bits))
    return config


def check_int8(graph: Graph) -> None:
    """One clear error for a float graph: the accelerator multiplies int8 only."""
    floats = [
        n for n in graph.nodes
        if n.op in GEMM_OPS and n.inputs and graph.tensor(n.inputs[0]).dtype is DType.FLOAT32
    ]
    if floats:
        raise EdgennError(
            f"model {graph.name!r} is float32 ({len(floats)} float Conv2D / FullyConnected "
            "layers): --target vta runs int8 graphs; quantize it first (`edgenn quantize` "
            "or edgenn.api.quantize_model)"
        )


def compile_vta(
    graph: Graph,
    preset: str = DEFAULT_PRESET,
    schedule: str = DEFAULT_SCHEDULE,
    bus_bits: int | None = None,
    *,
    gemm: GemmFn | None = None,
) -> VtaExecutable:
    """Build ``graph`` for the VTA-class accelerator simulator.

    ``preset`` names the board (``pynq``, ``ultra96``, ``zcu104``, ``zcu102``), ``schedule``
    the GEMM schedule (``tiled2``, ``optimized``, ``tall_pipelined``), ``bus_bits`` overrides
    the preset's AXI width. ``gemm`` replaces the simulator's ``run_gemm`` (same signature),
    e.g. by a driver for a real board.
    """
    from edgenn.backends.vta.gemm import run_gemm

    schedule = schedule_name(schedule)
    config = vta_config(preset, bus_bits)
    return build_executable(graph, OffloadTarget(config, schedule, gemm or run_gemm))


def build_executable(graph: Graph, target: OffloadTarget) -> VtaExecutable:
    """Build every layer with the reference runtime, then offload what the accelerator takes."""
    check_int8(graph)
    ref = compile_ref(graph)
    layers: list[Any] = []
    why_cpu: dict[str, str] = {}
    for layer in ref.layers:
        reason = cpu_reason(layer) if layer.node.op in GEMM_OPS else None
        if layer.node.op in GEMM_OPS and reason is None:
            layers.append(offload(layer, target))
        else:
            layers.append(layer)
            if reason is not None:
                why_cpu[layer.node.name] = reason
    return VtaExecutable(graph, layers, target=target, why_cpu=why_cpu)


@dataclass
class VtaExecutable(RefExecutable):
    """A graph whose GEMM layers run on the accelerator simulator and the rest on the host."""

    target: OffloadTarget | None = None
    why_cpu: dict[str, str] = field(default_factory=dict)
    last: NetworkReport | None = None

    @takes_batch
    def run(self, *inputs: np.ndarray, keep: bool = False,
            stateful: bool = False) -> list[np.ndarray]:
        """Run inputs as the model declares them (``edgenn.ir.batch``); the outputs equal
        ``ref``'s. A stateful graph's samples each start from the initial state;
        ``stateful=True`` is refused for it (the accelerator target keeps no state).

        Leaves the run's ``NetworkReport`` in ``self.last``; ``keep=True`` also stores every
        intermediate in ``self.values``, as the reference runtime does.
        """
        g = self.graph
        refuse_state(g, "vta", stateful)
        timings: list[float] = []
        values = forward(g, self.layers, inputs, timings=timings)  # every row from the start
        records = []
        for index, (layer, seconds) in enumerate(zip(self.layers, timings, strict=True)):
            args = layer_args(layer, values)
            records.append(self._record(index, layer, 1e3 * seconds, len(args[0]) if args else 1))
        if keep:
            self.values = values
        batch = len(next(iter(values.values()))) if values else 0
        self.last = self._network_report(tuple(records), batch)
        return [self._to_external(name, values[name]) for name in g.outputs]

    def bench(self, *inputs: np.ndarray, settings: BenchSettings | None = None,
              stateful: bool = False) -> BenchReport[NetworkReport]:
        """One run of the first item of each input; ``detail`` is its ``NetworkReport``.
        (``stateful`` is refused for a stateful graph: the accelerator keeps no state.)

        ``settings`` changes nothing: the accelerator's time is simulated (deterministic) and
        the host share is measured once, as DarkNet's per-layer log does."""
        refuse_state(self.graph, "vta", stateful)
        self.run(*first_sample(self.graph, inputs))
        assert self.last is not None
        return vta_report(self.last, self.sizes()["arena"])

    def report(self) -> dict[str, Any]:
        """The last run's report as JSON-ready data (layers, totals, assumed constants)."""
        if self.last is None:
            raise EdgennError(f"model {self.graph.name!r}: run it before asking for a report")
        return self.last.to_json()

    def log(self) -> list[str]:
        """The last run's DarkNet-style per-layer log."""
        if self.last is None:
            raise EdgennError(f"model {self.graph.name!r}: run it before asking for its log")
        return self.last.log()

    def placement(self) -> list[dict[str, Any]]:
        """Where each node runs: ``vta`` or ``cpu`` (with the reason for a Conv/FC on the CPU)."""
        return [
            {"name": layer.node.name, "op": layer.node.op,
             "where": "vta" if isinstance(layer, VtaGemmLayer) else "cpu",
             "why_cpu": self.why_cpu.get(layer.node.name)}
            for layer in self.layers
        ]

    # ------------------------------------------------------------------------------ reports
    def _record(self, index: int, layer: Any, elapsed_ms: float, batch: int) -> LayerRecord:
        node = layer.node
        if not isinstance(layer, VtaGemmLayer):
            return LayerRecord(index, node.name, node.op, "cpu", host_ms=elapsed_ms,
                               why_cpu=self.why_cpu.get(node.name))
        run = layer.last
        m, k, n = layer.shape_mkn
        return LayerRecord(
            index, node.name, node.op, "vta", host_ms=run.im2col_ms + run.requant_ms,
            gemms=tuple(run.gemms), groups=layer.groups, mkn=(m * batch, k, n),
            im2col_ms=run.im2col_ms, requant_ms=run.requant_ms,
        )

    def _network_report(self, records: tuple[LayerRecord, ...], batch: int) -> NetworkReport:
        assert self.target is not None
        config = self.target.config
        assumed: dict[str, float] = {}
        for record in records:
            for g in record.gemms:
                assumed.update(g.assumed)
        return NetworkReport(
            model=self.graph.name, preset=config.preset_name, schedule=self.target.schedule,
            clock_mhz=config.clock_mhz, bus_bits=config.bus_bits, batch=batch,
            layers=records, assumed=assumed,
        )
