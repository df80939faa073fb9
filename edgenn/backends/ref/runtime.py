"""Run a Graph with numpy, vectorised over the batch."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

import edgenn.backends.ref.kernels  # noqa: F401  (registers every layer)
from edgenn.backends.bench_report import BenchReport, BenchSettings
from edgenn.backends.ref.bench_report import ref_report
from edgenn.backends.ref.layer import Layer, layer_class
from edgenn.errors import ShapeError, UnsupportedOperatorError
from edgenn.ir import DType, Graph
from edgenn.ir.batch import first_sample, takes_batch
from edgenn.ir.layout import to_internal
from edgenn.memory import MemoryPlan, plan_graph


@dataclass
class RefExecutable:
    """A compiled graph: layers built once, ``run`` many times."""

    graph: Graph
    layers: list[Layer]

    @takes_batch
    def run(self, *inputs: np.ndarray, keep: bool = False) -> list[np.ndarray]:
        """Run inputs as the model declares them (``edgenn.ir.batch``: a declared shape is one
        sample, a leading axis beyond it a batch); the outputs in the same form.

        With ``keep=True`` returns nothing new but stores every intermediate in ``self.values``
        (for debugging and for comparing against other runtimes tensor by tensor).
        """
        values = self._forward(inputs)
        if keep:
            self.values = values
        return [self._to_external(name, values[name]) for name in self.graph.outputs]

    def _forward(self, inputs: tuple[np.ndarray, ...],
                 timings: list[float] | None = None) -> dict[str, np.ndarray]:
        """Every tensor's value; each layer's wall seconds appended to ``timings`` if given."""
        g = self.graph
        if len(inputs) != len(g.inputs):
            raise ShapeError(f"model {g.name!r} takes {len(g.inputs)} inputs, got {len(inputs)}")
        values: dict[str, np.ndarray] = {}
        for name, arr in zip(g.inputs, inputs, strict=True):
            values[name] = self._to_internal(name, np.asarray(arr))
        for layer in self.layers:
            args = [values[t.name] for t in layer.inputs if t is not None and not t.is_const]
            start = time.perf_counter()
            # why: float layers follow IEEE arithmetic, as TFLite and onnxruntime do: a sum
            # beyond float32's range is inf (and inf - inf NaN) in the output, not a warning
            # on the user's terminal; integer layers keep numpy's checks
            with np.errstate(over="ignore", invalid="ignore", divide="ignore") if any(
                    t.dtype == DType.FLOAT32 for t in layer.outputs) else nullcontext():
                outs = layer.run(*args)
            if timings is not None:
                timings.append(time.perf_counter() - start)
            for t, arr in zip(layer.outputs, outs, strict=True):
                values[t.name] = arr
        return values

    def sizes(self) -> dict[str, int]:
        """The static arena a device would allocate for this graph at batch 1, in bytes."""
        return {"arena": int(self.memory_plan().peak_bytes)}

    def bench(self, *inputs: np.ndarray,
              settings: BenchSettings | None = None) -> BenchReport[Any]:
        """Per-layer wall time of the numpy reference on the first item of each input: the
        median of ``settings.repeats`` runs after ``settings.warmup`` (a functional
        reference, not a deployment target: the figures show where numpy spends its time)."""
        settings = settings or BenchSettings()
        xs = tuple(first_sample(self.graph, inputs))
        for _ in range(settings.warmup):
            self._forward(xs)
        runs: list[list[float]] = []
        for _ in range(settings.repeats):
            runs.append([])
            self._forward(xs, runs[-1])
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
            args = [values[t.name] for t in layer.inputs if t is not None and not t.is_const]
            if layer.trainable:
                results[layer.node.name] = layer.train(*args, labels=labels)
            if k < last:  # why: a later trainable layer may need this layer's output
                for t, arr in zip(layer.outputs, layer.run(*args), strict=True):
                    values[t.name] = arr
        return results

    def memory_plan(self, planner: str = "greedy") -> MemoryPlan:
        """The static arena plan of this graph at batch 1 (what a device would allocate)."""
        return plan_graph(self.graph, planner=planner)

    def _to_internal(self, name: str, arr: np.ndarray) -> np.ndarray:
        return to_internal(self.graph, name, arr)

    def _to_external(self, name: str, arr: np.ndarray) -> np.ndarray:
        perm = self.graph.external_perm.get(name)
        return np.ascontiguousarray(arr.transpose(perm)) if perm else arr


def compile_ref(graph: Graph) -> RefExecutable:
    """Validate the graph and build every layer once."""
    graph.validate()
    return RefExecutable(graph, [layer_class(n, graph)(n, graph) for n in graph.nodes])
