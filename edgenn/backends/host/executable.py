"""``compile_host``: a float graph whose convolution and dense layers run as generated C.

Every node the kernel library takes (it returns candidate configurations for it) is prepared
once: C generated for its exact shape, compiled, weights packed, then bound to its thread
schedule (``binding.bind``). Every other node (Add, Concat, Softmax, reshapes, ...) is the
reference runtime's layer, run with numpy on the calling thread. A host layer runs sample by
sample (the kernels are batch-1) into a buffer allocated once, so a run allocates nothing
for them; ``run`` copies the graph outputs out, so they stay valid after the next run.

One executable must not run from two threads at once (its buffers are shared); the thread
pool itself serializes layer runs across executables.
"""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgenn.backends.bench_report import BenchReport, BenchSettings
from edgenn.backends.executable import refuse_state
from edgenn.backends.host.bench_report import NOT_A_HOST_KERNEL, host_report
from edgenn.backends.host.binding import KernelLibrary, bind, kernel_library
from edgenn.backends.host.schedule import ThreadSchedule
from edgenn.backends.host.selection import LayerChoice, Selector
from edgenn.backends.host.threadpool import Dispatch, TaskStats, address, release_caller
from edgenn.backends.host.topology import Topology, host_topology
from edgenn.backends.ref import RefExecutable, compile_ref
from edgenn.backends.ref.layer import Layer
from edgenn.backends.ref.runtime import forward
from edgenn.backends.timing import DEFAULT_TIMING, TimedRuns
from edgenn.errors import EdgennError
from edgenn.ir import DType, Graph, Node, Tensor
from edgenn.ir.batch import first_sample, takes_batch

EMULATION_NOTE = (
    "emulated heterogeneity: a thread on a CPU of capacity c < 1 busy-waits, after computing "
    "its output partitions, until it has used (1/c - 1) x their CPU time more; latencies are "
    "those of the emulated target (docs/host.md)")


class HostLayer:
    """One node as compiled C on the thread pool; the ``Layer`` interface of the runtime.

    ``run`` leaves the calling thread bound to its task 0's CPUs (``HostExecutable`` releases
    it after the last layer)."""

    def __init__(self, node: Node, graph: Graph, op: Any, choice: LayerChoice,
                 dispatch: Dispatch) -> None:
        self.node = node
        self.inputs: list[Tensor | None] = graph.node_inputs(node)
        self.outputs: list[Tensor] = graph.node_outputs(node)
        self.op = op
        self.choice = choice
        self.dispatch = dispatch
        self.buffer = np.zeros(self.outputs[0].shape, np.float32)  # batch 1
        self._out = address(self.buffer)
        self._last: tuple[np.ndarray, int] | None = None  # (input array, its address)

    @property
    def config(self) -> Any:
        return self.choice.config

    @property
    def schedule(self) -> ThreadSchedule:
        return self.choice.schedule

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        x = xs[0]
        if len(x) == 1:
            self.dispatch.run_at(self._address(x), self._out, keep_bound=True)
            return [self.buffer]
        out = np.empty((len(x), *self.buffer.shape[1:]), np.float32)
        for i in range(len(x)):
            self.dispatch.run_at(self._address(x[i : i + 1]), self._out, keep_bound=True)
            out[i] = self.buffer[0]
        return [out]

    def _address(self, x: np.ndarray) -> int:
        """The input's address; the same array as last time (another host layer's buffer, in
        a chain) skips the look-up."""
        last = self._last
        if last is not None and last[0] is x:
            return last[1]
        x = _c_float(x)
        self._last = (x, address(x))
        return self._last[1]

    def task_stats(self) -> list[TaskStats]:
        return self.dispatch.task_stats()

    def busiest_cpu_ms(self) -> float | None:
        """The busiest pool thread's CPU milliseconds in the last run, None when not measured
        (the forward loop's ``cpu`` figure: the calling thread's time would miss the pool's)."""
        return self.dispatch.busiest_cpu_ms()


def _c_float(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


@dataclass(frozen=True)
class LayerTiming:
    """One layer's figures in a benchmark."""

    index: int
    name: str
    op: str
    where: str  # "host" (generated C on the pool) or "ref" (numpy, calling thread)
    kernel: str
    schedule: str
    source: str
    median_ms: float
    tuned_ms: float | None = None
    cpu_ms: float | None = None  # the busiest thread's CPU time (see HostBenchResult)


@dataclass(frozen=True)
class HostBenchResult:
    """Whole-model latency over ``repeats`` timed runs of one input (after ``warmup`` runs).

    ``cpu_critical_ms`` is a load-independent estimate from a few extra runs: per layer, the
    busiest thread's CPU time (emulation busy-wait included; the calling thread's for a
    reference layer), summed. It is what the network would take if every thread had its CPU
    to itself and hand-overs were free, so on a machine shared with other jobs it shows what
    a schedule is worth when wall-clock latency mostly shows the other jobs.
    """

    model: str
    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    stdev_ms: float
    repeats: int
    warmup: int
    mode: str
    threads: int | None
    topology: Topology
    fingerprint: str
    layers: tuple[LayerTiming, ...] = field(default_factory=tuple)
    cpu_critical_ms: float | None = None


@dataclass
class HostExecutable:
    """A float graph with its heavy layers as generated C on the host's thread pool.

    ``steps`` are the runtime layers in order: ``HostLayer`` for generated C, the reference
    runtime's ``Layer`` for the rest. ``layers()`` lists the tunable ones for the tuner.
    """

    graph: Graph
    steps: list[Layer | HostLayer]
    topology: Topology
    selector: Selector
    kernels: KernelLibrary
    mode: str = "tuned"
    threads: int | None = None

    def __post_init__(self) -> None:
        self._io = RefExecutable(self.graph, [])  # input / output layout conversion

    # ------------------------------------------------------------------------------ running
    @takes_batch
    def run(self, *inputs: np.ndarray, keep: bool = False,
            stateful: bool = False) -> list[np.ndarray]:
        """Run inputs as the model declares them (``edgenn.ir.batch``); the graph outputs.
        A stateful graph's samples each start from the initial state; ``stateful=True`` is
        refused for it (the host target keeps no state)."""
        refuse_state(self.graph, "host", stateful)
        try:
            values = self._forward(inputs, None)
        finally:
            release_caller()
        if keep:  # copies: host layers' buffers are overwritten by the next run
            self.values = {k: np.array(v, copy=True) for k, v in values.items()}
        # why copy: a host layer's output is its reusable buffer; the caller keeps the result.
        return [np.array(self._io._to_external(n, values[n]), copy=True)
                for n in self.graph.outputs]

    def _forward(self, inputs: tuple[np.ndarray, ...], timings: list[float] | None,
                 cpu: list[float | None] | None = None) -> dict[str, np.ndarray]:
        """Run every step through the reference runtime's forward loop (every row from the
        initial state); each layer's wall seconds to ``timings``, its critical CPU
        milliseconds to ``cpu`` when given."""
        return forward(self.graph, self.steps, inputs, timings=timings, cpu=cpu)

    def bench(self, *inputs: np.ndarray, settings: BenchSettings | None = None,
              cpu_repeats: int = 5, stateful: bool = False) -> BenchReport[HostBenchResult]:
        """The measured latency of one inference, per layer (``measure`` with the repeats of
        ``settings``; ``detail`` is its ``HostBenchResult``)."""
        refuse_state(self.graph, "host", stateful)
        settings = settings or BenchSettings()
        result = self.measure(*inputs, repeats=settings.repeats, warmup=settings.warmup,
                              cpu_repeats=cpu_repeats)
        return host_report(result, EMULATION_NOTE, self.sizes()["arena"])

    def reset_state(self) -> None:
        """Nothing to reset: the host target keeps no state between runs."""

    def sizes(self) -> dict[str, int]:
        """The static arena a device would allocate for this graph at batch 1, in bytes."""
        return {"arena": int(self.memory_plan().peak_bytes), "state": 0}

    def measure(self, *inputs: np.ndarray, repeats: int = DEFAULT_TIMING.repeats,
                warmup: int = DEFAULT_TIMING.warmup, cpu_repeats: int = 5) -> HostBenchResult:
        """Median latency of one inference. ``inputs`` default to seeded random data.

        After the ``repeats`` timed runs, ``cpu_repeats`` more measure each thread's CPU time
        for the load-independent ``cpu_critical_ms`` (apart, so the clock reads do not slow
        the timed runs)."""
        TimedRuns(warmup, repeats)  # why: its checks, one message for every timed target
        if cpu_repeats < 0:
            raise EdgennError(f"need cpu_repeats >= 0, got {cpu_repeats}")
        xs = tuple(first_sample(self.graph, inputs)) if inputs else self.example_inputs()
        totals: list[float] = []
        per_layer: list[list[float]] = [[] for _ in self.steps]
        cpu_runs: list[list[float | None]] = []
        try:
            for _ in range(warmup):
                self._forward(xs, None)
            for _ in range(repeats):
                timings: list[float] = []
                start = time.perf_counter()
                self._forward(xs, timings)
                totals.append(1e3 * (time.perf_counter() - start))
                for i, t in enumerate(timings):
                    per_layer[i].append(1e3 * t)
            self._measure_cpu(True)
            for _ in range(cpu_repeats):
                cpu_runs.append([])
                self._forward(xs, None, cpu_runs[-1])
        finally:
            self._measure_cpu(False)
            release_caller()
        cpu_layers = [_median_or_none([run[i] for run in cpu_runs])
                      for i in range(len(self.steps))]
        cpu_total = (None if not cpu_runs or None in cpu_layers
                     else float(sum(c for c in cpu_layers if c is not None)))
        return HostBenchResult(
            model=self.graph.name, median_ms=statistics.median(totals),
            mean_ms=statistics.fmean(totals), min_ms=min(totals), max_ms=max(totals),
            stdev_ms=statistics.pstdev(totals), repeats=repeats, warmup=warmup,
            mode=self.mode, threads=self.threads,
            topology=self.topology, fingerprint=self.selector.fingerprint,
            layers=tuple(self._timing(i, layer, statistics.median(per_layer[i]), cpu_layers[i])
                         for i, layer in enumerate(self.steps)),
            cpu_critical_ms=cpu_total)

    def _measure_cpu(self, on: bool) -> None:
        for layer in self.host_layers():
            layer.dispatch.measure_cpu = on

    def example_inputs(self, seed: int = 0) -> tuple[np.ndarray, ...]:
        """Seeded uniform [0, 1) inputs of one sample, in the model file's declared shapes."""
        rng = np.random.default_rng(seed)
        return tuple(rng.random(self.graph.external_shape(n), dtype=np.float32)
                     for n in self.graph.inputs)

    # ------------------------------------------------------------------------------ reports
    def layers(self) -> list[tuple[str, str, list[Any]]]:
        """(node name, workload key, candidate configs) of every layer the tuner can tune."""
        from edgenn.tune.workload import workload_key

        return [(layer.node.name, workload_key(layer.node, self.graph),
                 self.kernels.candidate_configs(layer.node, self.graph))
                for layer in self.steps if isinstance(layer, HostLayer)]

    def host_layers(self) -> list[HostLayer]:
        return [layer for layer in self.steps if isinstance(layer, HostLayer)]

    def memory_plan(self, planner: str = "greedy") -> Any:
        """The static arena plan of this graph at batch 1."""
        return self._io.memory_plan(planner)

    def placement(self) -> list[dict[str, Any]]:
        """Per layer: where it runs, its kernel configuration, schedule and their source."""
        out = []
        for layer in self.steps:
            if isinstance(layer, HostLayer):
                out.append({"name": layer.node.name, "op": layer.node.op, "where": "host",
                            "kernel": describe_config(layer.config),
                            "schedule": layer.schedule.describe(self.topology),
                            "source": layer.choice.source})
            else:
                out.append({"name": layer.node.name, "op": layer.node.op, "where": "ref",
                            "kernel": "numpy reference", "schedule": "calling thread",
                            "source": NOT_A_HOST_KERNEL})
        return out

    def _timing(self, index: int, layer: Any, median_ms: float,
                cpu_ms: float | None) -> LayerTiming:
        info = self.placement()[index]
        tuned = layer.choice.tuned_ms if isinstance(layer, HostLayer) else None
        return LayerTiming(index, info["name"], info["op"], info["where"], info["kernel"],
                           info["schedule"], info["source"], median_ms, tuned, cpu_ms)


def _median_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def describe_config(config: Any) -> str:
    """A kernel configuration in one short string (its ``label`` or ``describe()``)."""
    label = getattr(config, "label", None)
    if isinstance(label, str):
        return label
    describe = getattr(config, "describe", None)
    if callable(describe):
        return str(describe())
    fields = [getattr(config, k, None) for k in ("algorithm", "microkernel")]
    named = [str(f) for f in fields if f]
    return " ".join(named) if named else str(config)


def host_nodes(graph: Graph, kernels: KernelLibrary) -> set[str]:
    """Names of the float nodes the kernel library can compile."""
    names = set()
    for node in graph.nodes:
        first = graph.tensor(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if first is not None and first.dtype is DType.FLOAT32 and \
                kernels.candidate_configs(node, graph):
            names.add(node.name)
    return names


# The operators the host runs as generated, threaded C (float32); every other node is the
# reference runtime's layer.
HOST_C_OPS = ("Conv2D", "FullyConnected")


def check_float(graph: Graph) -> None:
    """One clear error for a quantized graph: the host kernels are float32."""
    heavy = [n for n in graph.nodes if n.op in HOST_C_OPS and n.inputs
             and graph.tensor(n.inputs[0]).dtype is not DType.FLOAT32]
    if heavy:
        raise EdgennError(
            f"model {graph.name!r} is quantized ({heavy[0]} is "
            f"{graph.tensor(heavy[0].inputs[0]).dtype.value}): --target host runs float32 "
            "graphs; use the float model")


def compile_host(graph: Graph, threads: int | None = None,
                 schedule: str | ThreadSchedule = "tuned", db: str | None = None,
                 emulate_hetero: str | None = None, *, topology: Topology | None = None,
                 kernels: KernelLibrary | None = None) -> HostExecutable:
    """Build ``graph`` for the host CPU.

    ``threads`` caps the threads of a layer (the default schedule uses exactly that many);
    ``schedule`` is ``"tuned"`` (best records of the tuning database ``db``, default schedule
    where there is none), ``"default"`` (the rule-based baseline) or a ``ThreadSchedule`` for
    every layer; ``emulate_hetero`` (e.g. ``"1+1:0.43"``) emulates big.LITTLE on this machine
    (``topology`` gives any topology directly); ``kernels`` replaces the kernel library.
    """
    check_float(graph)
    if emulate_hetero and topology is not None:
        raise EdgennError("give either emulate_hetero or topology, not both")
    topo = topology if topology is not None else host_topology(emulate_hetero)
    lib = kernels if kernels is not None else kernel_library()
    selector = Selector(lib, topo, schedule, threads, db)
    ref = compile_ref(graph)
    wanted = host_nodes(graph, lib)
    choices = {n.name: selector.choose(n, graph) for n in graph.nodes if n.name in wanted}

    def prepare(node: Node) -> tuple[Any, LayerChoice]:
        choice = choices[node.name]
        try:
            return lib.prepare(node, graph, choice.config), choice
        except EdgennError as err:
            if choice.source != "tuned":
                raise
            # why: a record from another kernel version may name a config that no longer
            # builds here; the layer still runs, on the default, and the report says why.
            choice = selector.fallback_choice(node, graph, f"tuned config failed ({err})")
            return lib.prepare(node, graph, choice.config), choice

    # why threads: each prepare mostly waits for a C compiler process (cold cache)
    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as compilers:
        prepared = dict(zip(choices, compilers.map(
            prepare, [n for n in graph.nodes if n.name in choices]), strict=True))
    layers: list[Layer | HostLayer] = []
    for layer in ref.layers:
        node = layer.node
        if node.name not in prepared:
            layers.append(layer)
            continue
        op, choice = prepared[node.name]
        layers.append(HostLayer(node, graph, op, choice, bind(op, choice.schedule, topo)))
    mode = schedule if isinstance(schedule, str) else "given"
    return HostExecutable(graph, layers, topo, selector, lib, mode=mode, threads=threads)
