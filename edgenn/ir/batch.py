"""Inputs as the model declares them: which arrays are one sample and which a batch.

The rule, for a model input declared with shape ``D`` (the model file's shape, any rank):

1. an array of shape ``D`` is **one sample** (rank-0 and rank-1 inputs included);
2. an array of shape ``[N, *D]`` (exactly one leading axis beyond ``D``) is a **batch** of N;
3. when ``D`` starts with 1 (a batch axis of 1, as converters write it), an array of shape
   ``[N, *D[1:]]`` is also a batch of N: the declared 1 given as N.

Anything else is a one-line ``ShapeError`` naming the input, its declared shape, the given
shape and the rules; so are batches of different sizes. An input given as one sample beside
batched inputs is the same for every sample. Outputs come back as the inputs were given: a
sample in the declared output shape, a batch with its axis added (rule 2) or, under rule 3
alone, in the place of an output's declared leading 1.

Every ``Executable.run`` goes through :func:`takes_batch`, so the CLI, ``validate``, ``bench``
and the Python API all read inputs by this one rule. Under the decorator an executable's own
``run`` sees one of two calls (:meth:`Batch.run`): arrays ``[N, *D[1:]]`` when the graph
:func:`has_batch_axis` (its runtimes then vectorise over axis 0, as before), otherwise one
sample at a time, each array exactly ``D``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from edgenn.errors import ShapeError
from edgenn.ir.graph import Graph

Form = Literal["sample", "added", "replaced"]
Runner = Callable[..., list[np.ndarray]]
F = TypeVar("F", bound=Callable[..., list[np.ndarray]])


def has_batch_axis(graph: Graph) -> bool:
    """True when every graph input and output is declared with a leading axis of 1: that axis
    is the batch, and the runtimes may run ``[N, *D[1:]]`` arrays in one call."""
    names = (*graph.inputs, *graph.outputs)
    return all(len(s) >= 1 and s[0] == 1 for s in map(graph.external_shape, names))


def _shape(s: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, s)) + "]"


def read_input(graph: Graph, name: str, arr: np.ndarray,
               source: str | None = None) -> tuple[Form, int, np.ndarray]:
    """(which rule applied, the sample count, the array as ``[N, *D]``) for graph input
    ``name``; ShapeError naming the input (and ``source``, the file) otherwise."""
    d = tuple(graph.external_shape(name))
    s = tuple(arr.shape)
    if s == d:
        return "sample", 1, arr.reshape((1, *d))
    if len(s) == len(d) + 1 and s[1:] == d:
        return "added", s[0], arr
    if d and d[0] == 1 and len(s) == len(d) and s[1:] == d[1:]:
        return "replaced", s[0], arr.reshape((s[0], *d))
    rules = f"{_shape(d)} is one sample, [N, {', '.join(map(str, d))}] a batch" if d else \
        "[] (a scalar) is one sample, [N] a batch"
    if d and d[0] == 1:
        rules += f", [N, {', '.join(map(str, d[1:]))}] a batch (the declared 1 as N)"
    where = f"{source}: " if source else ""
    raise ShapeError(f"{where}input {name!r} is declared {_shape(d)}; got {_shape(s)}, which "
                     f"no rule reads ({rules})")


@dataclass(frozen=True)
class Batch:
    """The inputs of one call, read by the rule: ``arrays`` are ``[n, *D]`` per input."""

    graph: Graph
    arrays: tuple[np.ndarray, ...]
    n: int
    form: Form  # "sample": every input given as one sample; "replaced": rule 3 throughout

    def run(self, run: Runner, start: int = 0, stop: int | None = None) -> list[np.ndarray]:
        """The outputs ``[m, *output shape]`` of samples ``start:stop`` through an
        executable's own ``run`` (vectorised when the graph has a batch axis)."""
        g = self.graph
        stop = self.n if stop is None else min(stop, self.n)
        m = max(0, stop - start)
        out_shapes = [tuple(g.external_shape(o)) for o in g.outputs]
        if m == 0:  # why: nothing to run, but the result still has the declared shape
            return [np.zeros((0, *s), g.tensor(o).dtype.numpy)
                    for o, s in zip(g.outputs, out_shapes, strict=True)]
        if has_batch_axis(g):
            ys = run(*(x[start:stop].reshape((m, *x.shape[2:])) for x in self.arrays))
            return [np.asarray(y).reshape((m, *s)) for y, s in zip(ys, out_shapes, strict=True)]
        per = [run(*(x[k] for x in self.arrays)) for k in range(start, stop)]
        # why reshape: a sample's outputs hold the declared shape's values (a kernel may give
        # a scalar as [1])
        return [np.stack([np.asarray(p[j]).reshape(s) for p in per])
                for j, s in enumerate(out_shapes)]

    def outputs(self, ys: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Outputs ``[n, *output shape]`` in the form the inputs were given."""
        if self.form == "sample":
            return [y[0] for y in ys]
        if self.form == "replaced":
            return [y.reshape((len(y), *y.shape[2:])) if y.ndim >= 2 and y.shape[1] == 1 else y
                    for y in ys]
        return list(ys)


def read_batch(graph: Graph, inputs: Sequence[Any],
               sources: Sequence[str | None] | None = None) -> Batch:
    """Read every input by the rule; ShapeError when a shape fits no rule or the inputs
    disagree on the sample count (each input named with the rule that applied)."""
    names = graph.inputs
    if len(inputs) != len(names):
        raise ShapeError(f"model {graph.name!r} takes {len(names)} inputs, got {len(inputs)}")
    srcs = list(sources) if sources is not None else [None] * len(names)
    read = [read_input(graph, n, np.asarray(x), s)
            for n, x, s in zip(names, inputs, srcs, strict=True)]
    forms = {f for f, _, _ in read}
    if forms == {"sample"} or not read:
        return Batch(graph, tuple(a for _, _, a in read), 1, "sample")
    counts = {n for f, n, _ in read if f != "sample"}
    if len(counts) > 1:
        said = {"added": "a batch (leading axis beyond its shape)",
                "replaced": "a batch (its declared 1 as N)"}
        parts = [f"{n!r} {_shape(np.shape(x))}: {said[f]} of {c}"
                 for n, x, (f, c, _) in zip(names, inputs, read, strict=True) if f in said]
        raise ShapeError(f"model {graph.name!r}: the inputs disagree on the sample count: "
                         + "; ".join(parts))
    n = counts.pop()
    # why broadcast: an input given as one sample beside a batch is the same for every sample
    # (as numpy broadcasts it), e.g. a fixed parameter input
    arrays = tuple(np.broadcast_to(a, (n, *a.shape[1:])) if f == "sample" else a
                   for f, _, a in read)
    form: Form = "added" if "added" in forms else "replaced"
    return Batch(graph, arrays, n, form)


def takes_batch(run: F) -> F:
    """Decorate an executable's ``run(self, *inputs, **options)``: inputs are read by the
    rule, the undecorated ``run`` sees the calls :meth:`Batch.run` makes, and outputs come
    back in the form the inputs were given."""

    @functools.wraps(run)
    def wrapper(self: Any, *inputs: np.ndarray, **options: Any) -> list[np.ndarray]:
        batch = read_batch(self.graph, inputs)
        return batch.outputs(batch.run(lambda *xs: run(self, *xs, **options)))

    return wrapper  # type: ignore[return-value]


def first_sample(graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
    """The first sample of each input, in its declared shape (what ``bench`` runs)."""
    batch = read_batch(graph, inputs)
    if batch.n == 0:
        raise ShapeError(f"model {graph.name!r}: no sample to run (the inputs are empty)")
    return [x[0] for x in batch.arrays]


def batch_shape(graph: Graph, name: str, n: int) -> tuple[int, ...]:
    """The shape of a batch of ``n`` samples of input ``name`` that the rule reads and that
    the runtimes take in one call: ``[n, *D[1:]]`` when the graph has a batch axis (the
    historical form), else ``[n, *D]``."""
    d = tuple(graph.external_shape(name))
    return (n, *d[1:]) if has_batch_axis(graph) else (n, *d)


def from_rows(graph: Graph, name: str, rows: Sequence[np.ndarray], source: str) -> np.ndarray:
    """Flat value lists (a CSV file's lines) for input ``name``, shaped by the same rule: as
    many values in all as the declared shape holds is one sample; one line per sample, each
    holding that many, is a batch. ShapeError naming the file and the counts otherwise."""
    d = tuple(graph.external_shape(name))
    size = int(np.prod(d, dtype=np.int64))
    total = sum(len(r) for r in rows)
    if total == size:
        return np.concatenate(rows).reshape(d)
    if len(rows) > 1 and all(len(r) == size for r in rows):
        return np.stack(rows).reshape((len(rows), *d))
    raise ShapeError(f"{source}: {total} values on {len(rows)} line(s) for input {name!r}, "
                     f"declared {_shape(d)}: give {size} values for one sample, or one line "
                     f"of {size} values per sample for a batch")
