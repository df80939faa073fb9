"""Run a Graph with numpy, vectorised over the batch."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

import edgenn.backends.ref.kernels  # noqa: F401  (registers every layer)
from edgenn.backends.bench_report import BenchReport, BenchSettings
from edgenn.backends.ref.bench_report import ref_report
from edgenn.backends.ref.layer import Layer, ieee_arithmetic, layer_class
from edgenn.errors import ShapeError, UnsupportedOperatorError
from edgenn.ir import Graph, Tensor
from edgenn.ir.batch import first_sample, read_batch, takes_batch
from edgenn.ir.layout import to_internal
from edgenn.memory import MemoryPlan, plan_graph, state_area_bytes


@dataclass
class RefExecutable:
    """A compiled graph: layers built once, ``run`` many times.

    A stateful graph (``graph.state``) keeps its state in ``self.state`` (each variable's
    value at batch 1, by its ``read`` tensor): ``run(..., stateful=True)`` continues from it
    and leaves the state after the last row there; ``reset_state()`` sets the initial values.
    """

    graph: Graph
    layers: list[Layer]
    state: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.reset_state()

    def reset_state(self) -> None:
        """Set every state variable to its initial value (as TFLite Micro's Reset)."""
        self.state = {s.read: s.init.copy() for s in self.graph.state}

    @takes_batch
    def run(self, *inputs: np.ndarray, keep: bool = False,
            stateful: bool = False) -> list[np.ndarray]:
        """Run inputs as the model declares them (``edgenn.ir.batch``: a declared shape is one
        sample, a leading axis beyond it a batch); the outputs in the same form.

        A stateful graph: with ``stateful=False`` every row starts from the initial state
        (and ``self.state`` is left as it was); with ``stateful=True`` the rows are
        consecutive invocations, the first continuing from ``self.state``.
        With ``keep=True`` returns nothing new but stores every intermediate in ``self.values``
        (for debugging and for comparing against other runtimes tensor by tensor; the last
        row's when the rows run one by one).
        """
        if self.graph.state and stateful:
            return self._run_rows(inputs, keep)
        if not self._stacks_samples and self._rows(inputs) > 1:
            return self._run_rows(inputs, keep, carry=False)
        values = self._forward(inputs)
        if keep:
            self.values = values
        return [self._to_external(name, values[name]) for name in self.graph.outputs]

    @cached_property
    def _stacks_samples(self) -> bool:
        """Whether samples can share one call, stacked along axis 0: only when every computed
        tensor leads with a batch axis of 1. A tensor without one (a Reshape to a scalar, as
        TFLite's IF condition is made; a reduction that drops axis 0; a time-major sequence)
        runs at its declared shape only, so such a graph runs its rows one by one."""
        return all(t.shape and t.shape[0] == 1
                   for t in self.graph.tensors.values() if not t.is_const)

    def _leads(self) -> list[int]:
        g = self.graph
        return [max(1, g.external_shape(n)[0]) if g.external_shape(n) else 1 for n in g.inputs]

    def _rows(self, inputs: tuple[np.ndarray, ...]) -> int:
        arrays = [np.asarray(x) for x in inputs]
        return len(arrays[0]) // self._leads()[0] if arrays and arrays[0].ndim else 1

    def _run_rows(self, inputs: tuple[np.ndarray, ...], keep: bool,
                  carry: bool = True) -> list[np.ndarray]:
        """One invocation per row (a slice of the graph input's leading size, 1 for most
        models), each continuing from the state the previous one left (``carry``), or each
        from the initial state."""
        g = self.graph
        if len(inputs) != len(g.inputs):
            raise ShapeError(f"model {g.name!r} takes {len(g.inputs)} inputs, got {len(inputs)}")
        arrays = [np.asarray(x) for x in inputs]
        lead = self._leads()
        rows = self._rows(inputs)
        outs: list[list[np.ndarray]] = [[] for _ in g.outputs]
        for k in range(rows):
            row = tuple(x[k * d:(k + 1) * d] for x, d in zip(arrays, lead, strict=True))
            values = self._forward(row, state=self.state if carry else None)
            if carry:
                self.state = {s.read: np.array(values[s.write]).reshape(s.init.shape)
                              for s in g.state}
            if keep:
                self.values = values
            for o, name in zip(outs, g.outputs, strict=True):
                o.append(self._to_external(name, values[name]))
        return [np.concatenate(o) for o in outs]

    def _forward(self, inputs: tuple[np.ndarray, ...], timings: list[float] | None = None,
                 state: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Every tensor's value (``forward`` over this graph's layers)."""
        return forward(self.graph, self.layers, inputs, timings=timings, state=state)

    def sizes(self) -> dict[str, int]:
        """The static arena a device would allocate for this graph at batch 1, in bytes
        (its state area included), and the ``state`` kept between invocations."""
        state = state_area_bytes(self.graph)
        return {"arena": int(self.memory_plan().peak_bytes) + state, "state": state}

    def bench(self, *inputs: np.ndarray, settings: BenchSettings | None = None,
              stateful: bool = False) -> BenchReport[Any]:
        """Per-layer wall time of the numpy reference on the first item of each input: the
        median of ``settings.repeats`` runs after ``settings.warmup`` (a functional
        reference, not a deployment target: the figures show where numpy spends its time).
        A stateful graph starts from the initial state; with ``stateful`` the items before
        the last run as consecutive invocations (from a reset) and the last one is timed."""
        settings = settings or BenchSettings()
        xs = tuple(first_sample(self.graph, inputs))
        state = None
        if stateful and self.graph.state:
            self.reset_state()
            arrays = read_batch(self.graph, inputs).arrays  # [n, *declared shape] each
            if len(arrays[0]) > 1:
                self.run(*(x[:-1] for x in arrays), stateful=True)
            xs, state = tuple(x[-1] for x in arrays), self.state
        for _ in range(settings.warmup):
            self._forward(xs, state=state)
        runs: list[list[float]] = []
        for _ in range(settings.repeats):
            runs.append([])
            self._forward(xs, runs[-1], state=state)
        return ref_report(self.graph, [layer.node for layer in self.layers], runs,
                          settings, self.sizes()["arena"])

    def train(self, *inputs: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
        """Train every trainable layer (the SVM head) on a batch with one label per sample.

        Runs the graph up to each trainable layer's input and calls its ``train``; returns
        ``{node name: what its train returned}`` (for an SVM layer, the reports of the training
        steps this batch triggered). The layers keep the learned weights: later ``run`` calls
        use them.
        """
        g = self.graph
        last = max((k for k, layer in enumerate(self.layers) if layer.trainable), default=-1)
        if last < 0:
            raise UnsupportedOperatorError(f"model {g.name!r} has no layer that trains")
        if len(inputs) != len(g.inputs):
            raise ShapeError(f"model {g.name!r} takes {len(g.inputs)} inputs, got {len(inputs)}")
        labels = np.asarray(labels)
        values: dict[str, np.ndarray] = {}
        for name, arr in zip(g.inputs, inputs, strict=True):
            values[name] = self._to_internal(name, np.asarray(arr))
            if len(labels) != len(arr):
                raise ShapeError(f"{len(arr)} samples of {name!r} but {len(labels)} labels")
        results: dict[str, Any] = {}
        for k, layer in enumerate(self.layers[: last + 1]):
            if layer.trainable:
                results[layer.node.name] = layer.train(*layer_args(layer, values),
                                                       labels=labels)
            if k < last:  # why: a later trainable layer may need this layer's output
                run_layer(layer, values)
        return results

    def memory_plan(self, planner: str = "greedy") -> MemoryPlan:
        """The static arena plan of this graph at batch 1 (what a device would allocate)."""
        return plan_graph(self.graph, planner=planner)

    def _to_internal(self, name: str, arr: np.ndarray) -> np.ndarray:
        return to_internal(self.graph, name, arr)

    def _to_external(self, name: str, arr: np.ndarray) -> np.ndarray:
        perm = self.graph.external_perm.get(name)
        return np.ascontiguousarray(arr.transpose(perm)) if perm else arr


class RuntimeLayer(Protocol):
    """What the forward loop runs: the reference runtime's ``Layer`` or another backend's
    layer in its place (the host's generated C). A layer whose work runs on other threads
    may have ``busiest_cpu_ms()``: its busiest thread's CPU milliseconds in the last run."""

    @property
    def inputs(self) -> Sequence[Tensor | None]: ...

    @property
    def outputs(self) -> Sequence[Tensor]: ...

    def run(self, *xs: np.ndarray) -> list[np.ndarray]: ...


def layer_args(layer: RuntimeLayer, values: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The values of the layer's non-constant inputs (constants are the layer's own)."""
    return [values[t.name] for t in layer.inputs if t is not None and not t.is_const]


def run_layer(layer: RuntimeLayer, values: dict[str, np.ndarray]) -> None:
    """Run one layer on ``values`` and store its outputs there, float layers under IEEE
    arithmetic (``ieee_arithmetic``: an overflow is inf, not a numpy warning)."""
    with ieee_arithmetic(layer.outputs):
        outs = layer.run(*layer_args(layer, values))
    for t, arr in zip(layer.outputs, outs, strict=True):
        values[t.name] = arr


def forward(graph: Graph, layers: Sequence[RuntimeLayer], inputs: Sequence[np.ndarray], *,
            state: dict[str, np.ndarray] | None = None, timings: list[float] | None = None,
            cpu: list[float | None] | None = None) -> dict[str, np.ndarray]:
    """Every tensor's value after running ``layers`` in order on ``inputs`` (as the model
    declares them; converted to the internal layout here). The one forward loop of the
    reference runtime and of every backend that plugs its own layers into it (the host).

    ``state``: each state variable's value (batch 1) the run starts from; default the
    initial values, repeated over the batch. ``timings`` gets each layer's wall seconds;
    ``cpu`` each layer's CPU milliseconds (``busiest_cpu_ms()`` where the layer has it, else
    the calling thread's; None where it was not measured).
    """
    if len(inputs) != len(graph.inputs):
        raise ShapeError(f"model {graph.name!r} takes {len(graph.inputs)} inputs, "
                         f"got {len(inputs)}")
    values = {name: to_internal(graph, name, np.asarray(arr))
              for name, arr in zip(graph.inputs, inputs, strict=True)}
    values.update(state_values(graph, values, state))
    clock = time.perf_counter
    for layer in layers:
        start = clock()
        cpu_start = time.thread_time_ns() if cpu is not None else 0
        run_layer(layer, values)
        if timings is not None:
            timings.append(clock() - start)
        if cpu is not None:
            own = getattr(layer, "busiest_cpu_ms", None)
            cpu.append(own() if own is not None else (time.thread_time_ns() - cpu_start) / 1e6)
    return values


def state_values(graph: Graph, values: dict[str, np.ndarray],
                 state: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The value of every state ``read`` tensor at the start of a run whose inputs are in
    ``values`` (internal layout): ``state`` (batch 1, by read tensor) or the initial values,
    repeated over the batch where the state has a batch axis of 1."""
    rows = len(next(iter(values.values()))) if values else 1
    out = {}
    for s in graph.state:
        first = s.init if state is None else state[s.read]
        out[s.read] = (np.repeat(first, rows, axis=0)
                       if rows != 1 and first.ndim and first.shape[0] == 1 else np.array(first))
    return out


def compile_ref(graph: Graph) -> RefExecutable:
    """Validate the graph and build every layer once."""
    graph.validate()
    return RefExecutable(graph, [layer_class(n, graph)(n, graph) for n in graph.nodes])
