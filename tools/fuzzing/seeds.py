"""Seed files for fuzzing: the real models shipped with the project, plus small synthetic
ONNX models built here so the structure-aware mutators reach every importer family (conv,
batch-norm, pooling, transposed and 1-D conv, movement ops, recurrent cells, QDQ int8).

The synthetic seeds are ordinary valid models (each loads and runs in ``edgenn``); they exist
because the shipped ONNX models use only a handful of operators.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tools.fuzzing.byte_mutators import BYTE_MUTATORS
from tools.fuzzing.onnx_mutators import ONNX_MUTATORS
from tools.fuzzing.tflite_mutators import TFLITE_MUTATORS

Mutator = Callable[[bytes, random.Random], bytes]

_ROOT = Path(__file__).resolve().parents[2]
# Real files, searched where they exist (the repository checkout and the shared models).
_SEED_GLOBS = (
    (_ROOT / "edgenn" / "models", "*.onnx"),
    (_ROOT / "tests" / "fixtures", "**/*.onnx"),
    (_ROOT / "tests" / "fixtures", "**/*.tflite"),
    (_ROOT.parent / "shared" / "models" / "mlperf_tiny", "*.tflite"),
)
# why a cap: every mutant is imported several times; big seeds only slow the campaign down
MAX_SEED_BYTES = 400_000


def real_seeds(max_bytes: int = MAX_SEED_BYTES) -> list[Path]:
    """The shipped model files no larger than ``max_bytes``, sorted for reproducibility."""
    found: set[Path] = set()
    for folder, pattern in _SEED_GLOBS:
        if folder.is_dir():
            found.update(p for p in folder.glob(pattern) if p.stat().st_size <= max_bytes)
    return sorted(found)


def _w(rng: np.random.Generator, name: str, *shape: int) -> TensorProto:
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)


def _model(nodes: list[onnx.NodeProto], inputs: Sequence[tuple[str, list[int]]],
           output: str, inits: list[TensorProto], opset: int = 13) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "seed",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _conv_net(rng: np.random.Generator) -> onnx.ModelProto:
    nodes = [
        # why no bias: batch-norm folding then has to create one (its own code path)
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         strides=[1, 1], dilations=[1, 1], group=1, kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "dw"], ["c2"], name="dwconv", group=8, pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("AveragePool", ["c2"], ["p2"], name="avg", kernel_shape=[2, 2],
                         strides=[1, 1]),
        helper.make_node("Flatten", ["p2"], ["f"], name="flat", axis=1),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["g1"], name="fc", transB=1),
        helper.make_node("Softmax", ["g1"], ["y"], name="softmax", axis=1),
    ]
    inits = [_w(rng, "w1", 8, 3, 3, 3), _w(rng, "g", 8), _w(rng, "beta", 8),
             _w(rng, "mean", 8), numpy_helper.from_array(np.full(8, 0.5, np.float32), "var"),
             _w(rng, "dw", 8, 1, 3, 3), _w(rng, "fw", 5, 8 * 2 * 2), _w(rng, "fb", 5)]
    return _model(nodes, [("x", [1, 3, 12, 12])], "y", inits)


def _transpose_net(rng: np.random.Generator) -> onnx.ModelProto:
    nodes = [
        helper.make_node("ConvTranspose", ["x", "wt", "bt"], ["t"], name="deconv",
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Pad", ["t", "pads"], ["pd"], name="pad", mode="constant"),
        helper.make_node("Concat", ["pd", "pd"], ["cat"], name="concat", axis=1),
        helper.make_node("LeakyRelu", ["cat"], ["lr"], name="leaky", alpha=0.1),
        helper.make_node("GlobalAveragePool", ["lr"], ["gap"], name="gap"),
        helper.make_node("Reshape", ["gap", "shape"], ["rs"], name="reshape"),
        helper.make_node("MatMul", ["rs", "mw"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "ab"], ["y"], name="add"),
    ]
    inits = [_w(rng, "wt", 4, 3, 3, 3), _w(rng, "bt", 3),
             numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
             numpy_helper.from_array(np.array([1, 6], np.int64), "shape"),
             _w(rng, "mw", 6, 4), _w(rng, "ab", 4)]
    return _model(nodes, [("x", [1, 4, 5, 5])], "y", inits)


def _conv1d_net(rng: np.random.Generator) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv1d", pads=[2, 2], strides=[1],
                         dilations=[2], kernel_shape=[3]),
        helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["bn"],
                         name="bn1d"),
        helper.make_node("Clip", ["bn", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("MaxPool", ["cl"], ["p"], name="pool1d", kernel_shape=[2], strides=[2]),
        helper.make_node("ReduceMean", ["p"], ["y"], name="mean", axes=[2], keepdims=0),
    ]
    inits = [_w(rng, "w", 6, 2, 3), _w(rng, "g", 6), _w(rng, "beta", 6), _w(rng, "mean", 6),
             numpy_helper.from_array(np.full(6, 2.0, np.float32), "var"),
             numpy_helper.from_array(np.array(-1.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(1.0, np.float32), "hi")]
    return _model(nodes, [("x", [1, 2, 16])], "y", inits, opset=13 - 2)


def _movement_net(rng: np.random.Generator) -> onnx.ModelProto:
    nodes = [
        helper.make_node("SpaceToDepth", ["x"], ["s2d"], name="s2d", blocksize=2),
        helper.make_node("DepthToSpace", ["s2d"], ["d2s"], name="d2s", blocksize=2),
        helper.make_node("Transpose", ["d2s"], ["tr"], name="transpose", perm=[0, 2, 3, 1]),
        helper.make_node("Slice", ["tr", "starts", "ends", "axes"], ["sl"], name="slice"),
        helper.make_node("Split", ["sl", "split"], ["s1", "s2"], name="split", axis=3),
        helper.make_node("Mul", ["s1", "s2"], ["m"], name="mul"),
        helper.make_node("HardSigmoid", ["m"], ["hs"], name="hsig", alpha=0.2, beta=0.5),
        helper.make_node("Squeeze", ["hs", "sq"], ["y"], name="squeeze"),
    ]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "starts"),
             numpy_helper.from_array(np.array([5], np.int64), "ends"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(np.array([2, 2], np.int64), "split"),
             numpy_helper.from_array(np.array([0], np.int64), "sq")]
    del rng
    return _model(nodes, [("x", [1, 4, 6, 6])], "y", inits)


def _lstm_net(rng: np.random.Generator) -> onnx.ModelProto:
    hidden = 4
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B"], ["", "h"], name="lstm",
                         hidden_size=hidden),
        helper.make_node("Reshape", ["h", "shape"], ["hr"], name="reshape"),
        helper.make_node("Gemm", ["hr", "fw"], ["y"], name="fc", transB=1),
    ]
    inits = [_w(rng, "W", 1, 4 * hidden, 3), _w(rng, "R", 1, 4 * hidden, hidden),
             _w(rng, "B", 1, 8 * hidden), _w(rng, "fw", 2, hidden),
             numpy_helper.from_array(np.array([1, hidden], np.int64), "shape")]
    return _model(nodes, [("x", [5, 1, 3])], "y", inits)


def _qdq_net(rng: np.random.Generator) -> onnx.ModelProto:
    def q(name: str, scale: float, zp: int, dtype: type = np.int8) -> list[TensorProto]:
        return [numpy_helper.from_array(np.array(scale, np.float32), name + "_s"),
                numpy_helper.from_array(np.array(zp, dtype), name + "_z")]

    w = np.clip(np.round(rng.standard_normal((4, 2, 3, 3)) * 40), -127, 127).astype(np.int8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"], name="dqx"),
        helper.make_node("DequantizeLinear", ["wq", "w_s", "w_z"], ["wd"], name="dqw"),
        helper.make_node("Conv", ["xd", "wd"], ["c"], name="qconv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("QuantizeLinear", ["c", "c_s", "c_z"], ["cq"], name="qc"),
        helper.make_node("DequantizeLinear", ["cq", "c_s", "c_z"], ["y"], name="dqc"),
    ]
    inits = [numpy_helper.from_array(w, "wq"), *q("x", 0.02, 0), *q("w", 0.01, 0),
             *q("c", 0.05, 3)]
    return _model(nodes, [("x", [1, 2, 6, 6])], "y", inits)


SYNTHETIC = {"conv_net": _conv_net, "transpose_net": _transpose_net, "conv1d_net": _conv1d_net,
             "movement_net": _movement_net, "lstm_net": _lstm_net, "qdq_net": _qdq_net}


def synthetic_onnx_seeds(folder: Path, seed: int = 0) -> list[Path]:
    """Write the synthetic ONNX seeds into ``folder``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in SYNTHETIC.items():
        path = folder / f"{name}.onnx"
        path.write_bytes(build(np.random.default_rng(seed)).SerializeToString())
        paths.append(path)
    return paths


def families(folder: Path) -> dict[str, tuple[list[Path], list[Mutator]]]:
    """The campaign families: ``byte`` (byte-level mutators on every seed), ``onnx`` and
    ``tflite`` (structure-aware mutators on the seeds of that format; ``tflite`` is left out
    while ``TFLITE_MUTATORS`` is empty). Synthetic ONNX seeds are written to ``folder``."""
    real = real_seeds()
    onnx_files = synthetic_onnx_seeds(folder) + [p for p in real if p.suffix == ".onnx"]
    tflite_files = [p for p in real if p.suffix == ".tflite"]
    out = {"byte": (onnx_files + tflite_files, list(BYTE_MUTATORS)),
           "onnx": (onnx_files, list(ONNX_MUTATORS))}
    if TFLITE_MUTATORS and tflite_files:
        out["tflite"] = (tflite_files, list(TFLITE_MUTATORS))
    return out
