"""Validate a compiled model: run it on a target and compare every output with the reference
runtime (``target="ref"``) and, for ``.tflite`` models, TensorFlow Lite Micro.

The contract (docs/deploy.md, "Validating a target"): an integer model is bit-exact, so any
element that differs fails; a float model passes when its largest absolute difference stays
within :data:`FLOAT_TOLERANCE` times ``max(1, max |reference|)`` (float sums may be ordered
differently by a C compiler). The metrics per output and comparison are the exact-match rate,
the largest absolute difference (raw units and dequantized), the cosine similarity of the
dequantized values and the top-1 agreement; with labels, the accuracy of each runtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from edgenn.data.npz import read_npz
from edgenn.datasets import dataset_split
from edgenn.errors import DataError, EdgennError
from edgenn.evaluate import images_to_input
from edgenn.ir import DType, Graph
from edgenn.ir.batch import read_batch

# Float models: allowed max |target - reference|, relative to max(1, max |reference|).
FLOAT_TOLERANCE = 1e-4
QUICK_CALL_S = 0.5  # run_batched doubles its slice while a call is faster than this
_TFLITE_IDENT = b"TFL3"  # bytes 4..8 of a TFLite flatbuffer

Runner = Callable[..., list[np.ndarray]]


@dataclass(frozen=True)
class Comparison:
    """One output of the target against one oracle (``against``: "ref", "tflm" or "litert")."""

    output: str
    against: str
    elements: int
    exact_match: float  # fraction of elements equal
    max_abs_diff_raw: float  # in the output's own units (int8 steps for an int8 output)
    max_abs_diff: float  # dequantized (equal to the raw figure for a float output)
    cosine: float  # of the dequantized values, all samples flattened together
    top1_agreement: float  # fraction of samples whose argmax agrees
    tolerance: float  # the allowed max_abs_diff_raw (0 for an integer output)
    passed: bool


@dataclass
class ValidationReport:
    """Everything ``edgenn validate`` prints and writes as JSON."""

    model: str
    target: str
    samples: int
    comparisons: list[Comparison] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # oracle -> why it does not apply
    not_run: dict[str, str] = field(default_factory=dict)  # asked-for oracle -> why it failed
    accuracy: dict[str, float] = field(default_factory=dict)  # runtime -> top-1 vs labels

    @property
    def verdict(self) -> str:
        """``"fail"`` when a comparison broke the contract; else ``"incomplete"`` when a
        comparison that was asked for did not run (``not_run``) or nothing was compared;
        else ``"pass"``. An oracle that does not apply (``notes``: the target is the
        reference, not a .tflite file, --no-tflm) is not asked for."""
        if not all(c.passed for c in self.comparisons):
            return "fail"
        return "incomplete" if self.not_run or not self.comparisons else "pass"

    @property
    def passed(self) -> bool:
        """True only when every comparison asked for ran and met the contract."""
        return self.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "samples": self.samples,
                "passed": self.passed, "verdict": self.verdict,
                "float_tolerance": FLOAT_TOLERANCE,
                "comparisons": [asdict(c) for c in self.comparisons],
                "not_compared": {**self.notes, **self.not_run}, "not_run": dict(self.not_run),
                "accuracy": dict(self.accuracy)}


# ------------------------------------------------------------------------------ metrics
def dequantize(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """``scale * (q - zero_point)`` for a per-tensor quantized integer tensor; float data as
    float64 otherwise."""
    t = graph.tensor(name)
    if t.quant is not None and not t.quant.per_channel and t.dtype.numpy.kind in "iu":
        return (values.astype(np.float64) - t.quant.zp) * float(t.quant.s)
    return values.astype(np.float64)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two flattened arrays; 1.0 when both are all zeros."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    # why the clip: rounding may put identical vectors a hair above 1
    return float(np.clip(np.dot(a.ravel(), b.ravel()) / (na * nb), -1.0, 1.0))


def top1(values: np.ndarray) -> np.ndarray:
    """argmax per sample (first axis = samples, the rest flattened)."""
    return np.argmax(values.reshape(len(values), -1), axis=1)


def compare_output(graph: Graph, index: int, got: np.ndarray, want: np.ndarray,
                   against: str) -> Comparison:
    """The metrics of output ``index`` of the target (``got``) against an oracle (``want``)."""
    name = graph.outputs[index]
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise DataError(f"output {name!r}: the target gave shape {list(got.shape)}, "
                        f"{against} gave {list(want.shape)}")
    is_int = got.dtype.kind in "iu" and want.dtype.kind in "iu"
    raw = np.abs(got.astype(np.float64) - want.astype(np.float64))
    dq_got, dq_want = dequantize(graph, name, got), dequantize(graph, name, want)
    n = int(got.size)
    max_raw = float(raw.max()) if n else 0.0
    # why relative to the reference's magnitude: float rounding grows with the values' size
    tol = 0.0 if is_int else FLOAT_TOLERANCE * max(1.0, float(np.abs(want).max()) if n else 1.0)
    return Comparison(
        output=name, against=against, elements=n,
        exact_match=float(np.mean(got == want)) if n else 1.0,
        max_abs_diff_raw=max_raw,
        max_abs_diff=float(np.abs(dq_got - dq_want).max()) if n else 0.0,
        cosine=cosine(dq_got, dq_want),
        top1_agreement=float(np.mean(top1(got) == top1(want))) if len(got) else 1.0,
        tolerance=tol,
        passed=max_raw == 0.0 if is_int else max_raw <= tol,
    )


def labels_to_classes(y: np.ndarray, n: int, source: str = "labels") -> np.ndarray:
    """Class indices [N] from integer labels [N] or one-hot / score rows [N, C]."""
    y = np.asarray(y)
    if len(y) != n:
        raise DataError(f"{source}: {len(y)} labels for {n} samples")
    if y.ndim == 1 and y.dtype.kind in "iu":
        return y.astype(np.int64)
    if y.ndim == 2:
        return np.argmax(y, axis=1)
    raise DataError(f"{source}: labels must be integers [N] or one-hot [N, C], got "
                    f"{y.dtype.name}{list(y.shape)}")


def accuracy(outputs: np.ndarray, classes: np.ndarray) -> float:
    return float(np.mean(top1(outputs) == classes)) if len(classes) else float("nan")


def per_class_accuracy(pred: np.ndarray, classes: np.ndarray) -> dict[str, float]:
    """``{"3": 0.97, ...}``: accuracy over the samples of each label present."""
    return {str(int(c)): float(np.mean(pred[classes == c] == c)) for c in np.unique(classes)}


# ------------------------------------------------------------------------------ inputs
def as_model_input(graph: Graph, index: int, x: np.ndarray, source: str) -> np.ndarray:
    """``x`` (shaped by the input rule of ``edgenn.ir.batch``) in the input's element type:
    float data for a quantized input is quantized with the input's scale and zero point, as
    TFLite Micro's QUANTIZE does (``edgenn.quantize.scheme.quantize_per_tensor``, the step
    ``edgenn eval`` uses)."""
    from edgenn.ir.batch import read_input
    from edgenn.quantize.scheme import quantize_per_tensor

    name = graph.inputs[index]
    t = graph.tensor(name)
    x = np.asarray(x)
    read_input(graph, name, x, source)  # the shape check, naming the rule
    want = t.dtype.numpy
    if x.dtype == want:
        return x
    if x.dtype.kind == "f" and t.dtype in (DType.INT8, DType.INT16) and t.quant is not None \
            and not t.quant.per_channel:
        # why elementwise: quantizing does not depend on the layout, so the external layout
        # is quantized as it is
        return quantize_per_tensor(x, t.quant, t.dtype)
    if x.dtype.kind == "f" and want.kind == "f":
        return x.astype(want)
    raise DataError(f"{source}: {x.dtype.name} data, but model input {name!r} is "
                    f"{t.dtype.value} (give {t.dtype.value} or float data)")


def load_npz_data(path: str, graph: Graph) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The model's inputs and the optional labels ``y`` from an ``.npz``.

    Inputs: ``x`` for a single-input model, else arrays named after the model's inputs (as
    ``edgenn run`` takes them) or ``x0``, ``x1``, ... in input order, each read by the input
    rule (``edgenn.ir.batch``) and returned as ``[N, *declared shape]``. Never unpickles.
    """
    arrays = read_npz(path)
    names = graph.inputs
    if len(names) == 1 and "x" in arrays:
        keys = ["x"]
    elif all(n in arrays for n in names):
        keys = list(names)
    elif all(f"x{i}" in arrays for i in range(len(names))):
        keys = [f"x{i}" for i in range(len(names))]
    else:
        want = "'x'" if len(names) == 1 else f"{list(names)} or x0..x{len(names) - 1}"
        raise DataError(f"{path}: arrays {sorted(arrays)}; expected the input data as {want}")
    xs = [as_model_input(graph, i, arrays[k], f"{path}: array {k!r}")
          for i, k in enumerate(keys)]
    batch = read_batch(graph, xs, [f"{path}: array {k!r}" for k in keys])
    y = arrays.get("y")
    if y is not None:
        y = labels_to_classes(y, batch.n, f"{path}: array 'y'")
    return list(batch.arrays), y


def dataset_inputs(graph: Graph, name: str, split: str) -> tuple[list[np.ndarray], np.ndarray]:
    """A named image data set's split, fed as the model's input declares, and its labels."""
    images, labels = dataset_split(name, split)
    return [images_to_input(graph, images)], labels


def data_inputs(graph: Graph, path: str) -> tuple[list[np.ndarray], np.ndarray]:
    """The inputs and labels of an ``.npz`` (:func:`load_npz_data` with ``y`` required, as
    accuracy is scored against it)."""
    xs, labels = load_npz_data(path, graph)
    if labels is None:
        raise DataError(f"{path}: no array 'y' (the labels eval scores against)")
    return xs, labels


# ------------------------------------------------------------------------------ running
def run_batched(run: Runner, xs: Sequence[np.ndarray], batch: int,
                on_batch: Callable[[int], None] | None = None) -> list[np.ndarray]:
    """``run(*xs)`` over batches ``xs`` (every input with its sample axis first, as
    ``edgenn.ir.batch`` reads a batch) in slices of at most ``batch`` samples, outputs
    concatenated. The slices start at one sample and double while a call takes under
    :data:`QUICK_CALL_S`, so a slow (emulated) target reports each sample to ``on_batch``
    and a fast one still runs large slices."""
    n = len(xs[0]) if xs else 0
    if n == 0:
        return run(*xs)
    parts: list[list[np.ndarray]] = []
    start, size = 0, 1
    while start < n:
        stop = min(n, start + min(size, max(1, batch)))
        began = time.perf_counter()
        parts.append(run(*(x[start:stop] for x in xs)))
        if time.perf_counter() - began < QUICK_CALL_S:
            size *= 2
        if on_batch is not None:
            on_batch(stop - start)
        start = stop
    return [np.concatenate([p[k] for p in parts]) for k in range(len(parts[0]))]


def is_tflite(model_bytes: bytes | None) -> bool:
    return model_bytes is not None and model_bytes[4:8] == _TFLITE_IDENT


def tflm_applies(model_bytes: bytes | None, skip: str | None) -> str | None:
    """None when TFLite Micro can be compared with, else why it does not apply."""
    if not is_tflite(model_bytes):
        return "not a .tflite model"
    if skip:
        return "--skip changes the network TFLite Micro would run"
    return None


def tflm_outputs(model_bytes: bytes | None, xs: Sequence[np.ndarray],
                 skip: str | None, stateful: bool = False
                 ) -> tuple[list[np.ndarray] | None, str | None]:
    """TFLite Micro's outputs for batches ``xs`` ``[N, *declared shape]``, or None and the
    one-line reason it was not run (``stateful``: the samples are consecutive invocations of
    one interpreter)."""
    from edgenn.oracles.tflm import tflm_run

    why = tflm_applies(model_bytes, skip)
    if why is not None:
        return None, why
    assert model_bytes is not None
    try:
        return tflm_run(model_bytes, *xs, stateful=stateful), None
    except EdgennError as err:  # not installed, or it cannot load / run this model
        return None, str(err)


def litert_outputs(model_bytes: bytes, xs: Sequence[np.ndarray], stateful: bool = False
                   ) -> tuple[list[np.ndarray] | None, str | None]:
    """LiteRT's outputs for batches ``xs`` ``[N, *declared shape]`` (the oracle of a file
    TFLite Micro does not run), or None and the one-line reason it was not run."""
    from edgenn.oracles.litert import litert_run

    try:
        return litert_run(model_bytes, *xs, stateful=stateful), None
    except EdgennError as err:  # not installed, or it cannot load / run this model
        return None, str(err)


def validate(graph: Graph, target_run: Runner, reference_run: Runner | None,
             xs: Sequence[np.ndarray], *, target: str, model_bytes: bytes | None = None,
             labels: np.ndarray | None = None, skip: str | None = None, batch: int = 256,
             on_batch: Callable[[int], None] | None = None,
             tflm: bool = True, stateful: bool = False) -> ValidationReport:
    """Run ``xs`` (read by the input rule of ``edgenn.ir.batch``) on the target and the
    oracles and compare every output, as ``[N, *declared output shape]``.

    ``reference_run``: the reference runtime's ``run`` (None when the target is the reference
    itself: that comparison would prove nothing). ``model_bytes``: the model file, for
    TFLite Micro when it is a ``.tflite`` flatbuffer (``tflm=False``: not asked for). An
    oracle asked for that cannot run is listed in ``not_run``: the verdict is then not a
    pass. ``on_batch`` is told how many samples the target finished (a progress bar).
    ``stateful``: the samples are consecutive invocations (the runners must continue their
    state from one call to the next; TFLite Micro runs them on one interpreter); otherwise
    every sample starts from a reset state.
    """
    samples = read_batch(graph, xs)
    n, xs = samples.n, samples.arrays
    if n == 0:
        raise DataError(f"model {graph.name!r}: no samples to validate")
    report = ValidationReport(model=graph.name, target=target, samples=n)
    got = run_batched(target_run, xs, batch, on_batch)
    oracles: dict[str, list[np.ndarray]] = {}
    if reference_run is None:
        report.notes["ref"] = "the target is the reference runtime"
    else:
        oracles["ref"] = run_batched(reference_run, xs, 256)
    from edgenn.oracles.litert import has_float16_tensors

    applies = tflm_applies(model_bytes, skip) if tflm else "not asked for (--no-tflm)"
    if applies is None and model_bytes is not None and has_float16_tensors(model_bytes):
        # why: TFLite Micro's DEQUANTIZE takes integers, so it cannot load float16 weights;
        # LiteRT's reference kernels are TFLite's own arithmetic for such a file
        report.notes["tflm"] = "TFLite Micro does not run float16 weights: LiteRT instead"
        outs, why = litert_outputs(model_bytes, xs, stateful)
        if outs is not None:
            oracles["litert"] = outs
        else:
            report.not_run["litert"] = why or "not run"
    else:
        outs, why = (tflm_outputs(model_bytes, xs, skip, stateful) if applies is None
                     else (None, applies))
        if outs is not None:
            oracles["tflm"] = outs
        elif applies is None:
            report.not_run["tflm"] = why or "not run"
        else:
            report.notes["tflm"] = applies
    for against, outs in oracles.items():
        if len(outs) != len(got):
            raise DataError(f"{against} gave {len(outs)} outputs, the target {len(got)}")
        report.comparisons += [compare_output(graph, k, got[k], outs[k], against)
                               for k in range(len(got))]
    if labels is not None:
        report.accuracy = {"target": accuracy(got[0], labels),
                           **{a: accuracy(o[0], labels) for a, o in oracles.items()}}
    return report
