"""Post-training quantization: float IR Graph -> int8 IR Graph (TFLite int8 scheme) or, with
``activations="int16"``, TFLite's 16x8 scheme (int16 activations, int8 weights).

``quantize(graph, calibration, method)`` runs the float graph over the calibration set with
the reference runtime, estimates each activation's range (``minmax``, ``percentile`` or
``kl``), applies TFLite's quantization rules (``scheme.py``) and rewrites the graph
(``rewrite.py``). The result runs bit-exactly the same in edgenn's reference runtime and in
TFLite Micro once exported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgenn.errors import EdgennError, ShapeError
from edgenn.ir import DType, Graph, Node, QuantParams
from edgenn.quantize import rules, scheme
from edgenn.quantize.calibrate import calibration_inputs, collect
from edgenn.quantize.islands import FloatIsland, float_islands, float_reason, quantized_ops
from edgenn.quantize.lower import lower_for_quantization
from edgenn.quantize.observers import METHODS, Observer
from edgenn.quantize.rewrite import build_int8_graph, check_float_graph

__all__ = ["METHODS", "FloatIsland", "dequantize_output", "float_islands", "quantize",
           "quantize_input"]


def quantize(
    graph: Graph,
    calibration: np.ndarray | Sequence[np.ndarray],
    method: str = "minmax",
    **options: Any,
) -> Graph:
    """Post-training quantization of a float32 graph (int8, or 16x8 with int16 activations).

    ``calibration`` is ``[N, *input shape]`` float data laid out as the model file declares
    its input (NCHW for an ONNX image model; a sequence of arrays for a multi-input graph).
    ``method`` picks how activation ranges are estimated: ``"minmax"``, ``"percentile"``
    (option ``percentile=99.99``) or ``"kl"`` (option ``bins=2048``). Graph inputs always use
    min/max (clipping the input only loses information); weights are always per-channel
    symmetric min/max. Other options: ``batch_size`` (calibration batch, 64) and
    ``skippable_blocks`` (default True: each identity residual block's output shares its
    input's parameters, so skipping the block is a pure alias; see docs/skipping.md), and
    ``activations``: ``"int8"`` (default) or ``"int16"``, TFLite's 16x8 scheme: int16
    activations with symmetric per-tensor scales (zero point 0), int8 per-channel weights,
    int64 biases, int16 Softmax / Logistic / Tanh outputs at scale 1/32768.

    Which operators get an integer kernel, and which outputs keep their input's parameters
    or take fixed ones (Softmax, Logistic, Tanh), follows TFLite Micro's kernels operator by
    operator (``rules.py``); the others run in float32 between Dequantize and Quantize, and
    :func:`float_islands` lists them with the reason. BatchNorm and HardSigmoid, which
    TFLite does not have, are first rewritten as Mul / Add (/ Clip) (``lower.py``). Integer
    inputs (Gather
    indices) take integer calibration data and stay as they are; ArgMax / ArgMin outputs
    become int32.

    The returned graph has int8 (or int16) inputs and outputs (TFLite's inference_input_type
    / inference_output_type) and **no external permutation**: like the exported .tflite it
    declares its inputs and outputs NHWC, so callers holding NCHW data must transpose it
    (``x.transpose(0, 2, 3, 1)``) and then :func:`quantize_input` it.
    """
    if method not in METHODS:
        raise EdgennError(
            f"unknown calibration method {method!r} (available: {', '.join(METHODS)})"
        )
    unknown = set(options) - {"percentile", "bins", "batch_size", "max_samples",
                              "skippable_blocks", "activations"}
    if unknown:
        raise EdgennError(f"unknown quantize option(s): {', '.join(sorted(unknown))}")
    act = scheme.activation_type(str(options.get("activations", "int8")))
    check_float_graph(graph)
    graph = lower_for_quantization(graph.validate())
    calibration_inputs(graph, calibration)  # shape errors before any work

    int8_ops = quantized_ops(act)
    int8_nodes = [n for n in graph.nodes if float_reason(graph, n, int8_ops, act) is None]
    _check_finite_constants(graph, int8_nodes)
    observer_opts = {k: options[k] for k in ("percentile", "bins", "max_samples") if k in options}
    # why: only float tensors get parameters; integer ones (indices) pass unchanged
    observers = {name: Observer("minmax") for name in graph.inputs
                 if graph.tensor(name).dtype is DType.FLOAT32}
    for node in graph.nodes:
        for name in node.outputs:
            if graph.tensor(name).dtype is DType.FLOAT32:
                observers[name] = Observer(method, **observer_opts)
    collect(graph, calibration, observers, batch_size=int(options.get("batch_size", 64)))

    ranges = {name: obs.range() for name, obs in observers.items()}
    for name, (lo, hi) in ranges.items():
        if not (np.isfinite(lo) and np.isfinite(hi)):
            # why here: the tensor's name is known here, not in the scheme's arithmetic
            raise EdgennError(
                f"graph {graph.name!r}: tensor {name!r} takes values in [{lo}, {hi}] on the "
                "calibration data; a non-finite range cannot be quantized (the model's "
                "arithmetic overflows float32, or the calibration data is not finite)")
    # Constants feeding quantized ops as activations (an Add's constant operand, a Concat's
    # constant part, PRelu's alpha) take part in shared ranges with their own min/max.
    for node in int8_nodes:
        rule = rules.rule(node.op)
        for i, t in enumerate(graph.node_inputs(node)):
            if rule is not None and rule.weighted and i > 0:
                continue  # weights and biases follow their own rules
            if (t is not None and t.data is not None and t.data.size
                    and t.dtype is DType.FLOAT32):
                ranges[t.name] = (float(t.data.min()), float(t.data.max()))
    params = scheme.activation_ranges(graph, ranges, int8_nodes,
                                      bool(options.get("skippable_blocks", True)), act)
    return build_int8_graph(graph, params, {n.name for n in int8_nodes}, method, act)


def _check_finite_constants(graph: Graph, nodes: Sequence[Node]) -> None:
    """One error naming the first float constant of a node to be quantized that holds an
    infinity or NaN: int8 and int16 have neither, and a range reaching one has no scale.

    why before calibration: the weight, not an activation computed from it, is the cause
    (a float graph runs such constants as TFLite Micro does; only quantizing them fails)."""
    for node in nodes:
        for t in graph.node_inputs(node):
            if t is None or t.data is None or t.dtype is not DType.FLOAT32 or not t.data.size:
                continue
            bad = t.data[~np.isfinite(t.data)]
            if bad.size:
                raise EdgennError(
                    f"graph {graph.name!r}: node {node.name!r} ({node.op}): constant "
                    f"{t.name!r} holds {bad.size} non-finite value(s) ({float(bad[0])}); a "
                    "non-finite constant cannot be quantized (replace it with a finite bound "
                    "or keep the model in float)")


def _io_params(graph: Graph, name: str) -> tuple[QuantParams, DType]:
    t = graph.tensor(name)
    if t.dtype not in (DType.INT8, DType.INT16) or t.quant is None:
        raise EdgennError(
            f"graph {graph.name!r}: tensor {name!r} is not a quantized int8 / int16 tensor")
    return t.quant, t.dtype


def quantize_input(graph: Graph, x: np.ndarray, index: int = 0) -> np.ndarray:
    """Float data -> the int8 (or int16) graph input ``index``, exactly as TFLite Micro's
    QUANTIZE does: ``x / scale`` in float32, rounded half away from zero, plus the zero
    point, clamped."""
    name = graph.inputs[index]
    shape = graph.tensor(name).shape
    x = np.asarray(x)
    if x.ndim != len(shape) or tuple(x.shape[1:]) != shape[1:]:
        raise ShapeError(
            f"input {name!r}: expected shape [N, {', '.join(map(str, shape[1:]))}] "
            f"(NHWC; transpose NCHW data first), got {list(x.shape)}"
        )
    params, dtype = _io_params(graph, name)
    return scheme.quantize_per_tensor(x, params, dtype)


def dequantize_output(graph: Graph, q: np.ndarray, index: int = 0) -> np.ndarray:
    """int8 (or int16) graph output ``index`` -> float32 ``scale * (q - zero_point)``."""
    p, _ = _io_params(graph, graph.outputs[index])
    return ((np.asarray(q).astype(np.int32) - p.zp) * np.float32(p.s)).astype(np.float32)
