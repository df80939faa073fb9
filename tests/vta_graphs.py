"""int8 graphs for the VTA network tests: single Conv2D / FullyConnected nodes and real models."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer


def _weight_quant(rng: np.random.Generator, co: int, per_channel: bool) -> QuantParams:
    scales = rng.uniform(2e-3, 2e-2, co if per_channel else 1).astype(np.float32)
    return QuantParams(scales, np.zeros(scales.shape, np.int64), 0 if per_channel else None)


def _graph(rng: np.random.Generator, op: str, x: Tensor, w: np.ndarray, wq: QuantParams,
           bias: bool, **attrs: object) -> Graph:
    in_s = float(x.quant.s) if x.quant is not None else 1.0
    inputs = [x, Tensor("w", w.shape, DType.INT8, wq, w)]
    if bias:
        b = rng.integers(-20000, 20000, size=w.shape[0]).astype(np.int32)
        bq = QuantParams(np.float32(in_s) * np.broadcast_to(wq.scale, (w.shape[0],)),
                         np.zeros(w.shape[0], np.int64), 0)
        inputs.append(Tensor("b", b.shape, DType.INT32, bq, b))
    node = Node("n0", op, tuple(t.name for t in inputs), ("y",), dict(attrs))
    ((shape, dtype),) = infer(node, inputs)
    out_q = QuantParams.per_tensor(float(np.float32(rng.uniform(0.02, 0.2))),
                                   int(rng.integers(-30, 30)))
    out = Tensor("y", shape, dtype, out_q)
    return Graph(f"{op.lower()}_case", {t.name: t for t in [*inputs, out]}, (node,), ("x",), ("y",))


def conv_graph(
    seed: int, hw: tuple[int, int], ci: int, co: int, k: tuple[int, int],
    strides: tuple[int, int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
    dilations: tuple[int, int] = (1, 1), groups: int = 1, act: Activation = Activation.NONE,
    per_channel: bool = True, bias: bool = True, in_zp: int | None = None,
) -> Graph:
    """One int8 Conv2D over a ``[1, H, W, Cin]`` input, random weights and quantization."""
    rng = np.random.default_rng(seed)
    zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    x = Tensor("x", (1, *hw, ci), DType.INT8, QuantParams.per_tensor(0.05, zp))
    w = rng.integers(-127, 128, size=(co, *k, ci // groups)).astype(np.int8)
    return _graph(rng, "Conv2D", x, w, _weight_quant(rng, co, per_channel), bias,
                  strides=tuple(strides), dilations=tuple(dilations), pads=tuple(pads),
                  groups=groups, activation=act)


def fc_graph(seed: int, k: int, co: int, act: Activation = Activation.NONE,
             per_channel: bool = True, bias: bool = True) -> Graph:
    """One int8 FullyConnected over a ``[1, K]`` input."""
    rng = np.random.default_rng(seed)
    x = Tensor("x", (1, k), DType.INT8, QuantParams.per_tensor(0.05, int(rng.integers(-128, 128))))
    w = rng.integers(-127, 128, size=(co, k)).astype(np.int8)
    return _graph(rng, "FullyConnected", x, w, _weight_quant(rng, co, per_channel), bias,
                  activation=act)


def random_input(graph: Graph, batch: int, seed: int = 1) -> np.ndarray:
    shape = graph.external_shape(graph.inputs[0])[1:]
    rng = np.random.default_rng(seed)
    return rng.integers(-128, 128, size=(batch, *shape), dtype=np.int64).astype(np.int8)


def quantized_zoo_model(tmp: Path, name: str, size: int, seed: int = 0,
                        calibration: int = 4) -> Graph:
    """A zoo model (float ONNX, random weights) quantized on random calibration images."""
    import onnx

    from edgenn.api import load_model, quantize_model
    from edgenn.models import zoo

    model = getattr(zoo, name)(seed=seed, size=size)
    path = tmp / f"{name}_{size}.onnx"
    onnx.save(model, path)
    graph = load_model(path)
    rng = np.random.default_rng(seed)
    cal = rng.standard_normal((calibration, 3, size, size)).astype(np.float32)
    return quantize_model(graph, cal)
