"""Synthetic int8 conv-chain graphs for the fusion tests (random weights and quantization)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import conv_out_dim


@dataclass(frozen=True)
class ConvSpec:
    cout: int  # ignored for depthwise (multiplier 1)
    kh: int
    kw: int
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    depthwise: bool = False
    activation: Activation = Activation.RELU


def conv_chain_graph(h: int, w: int, cin: int, specs: list[ConvSpec], seed: int = 0,
                     tail_consumers: int = 0) -> Graph:
    """Input -> conv ... conv -> output. ``tail_consumers`` > 0 makes the first intermediate
    also a graph output (so it cannot be fused)."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, Tensor] = {}
    q_in = QuantParams.per_tensor(float(rng.uniform(0.01, 0.05)), int(rng.integers(-20, 20)))
    tensors["x"] = Tensor("x", (1, h, w, cin), DType.INT8, q_in)
    nodes = []
    cur, ch, cw, cc, q = "x", h, w, cin, q_in
    for i, s in enumerate(specs):
        co = cc if s.depthwise else s.cout
        groups = cc if s.depthwise else 1
        wdata = rng.integers(-127, 128, (co, s.kh, s.kw, cc // groups)).astype(np.int8)
        w_scale = rng.uniform(0.002, 0.02, co).astype(np.float32)
        tensors[f"w{i}"] = Tensor(f"w{i}", wdata.shape, DType.INT8,
                                  QuantParams(w_scale, np.zeros(co, np.int64), 0), wdata)
        bias = rng.integers(-2000, 2000, co).astype(np.int32)
        tensors[f"b{i}"] = Tensor(f"b{i}", bias.shape, DType.INT32,
                                  QuantParams(w_scale * q.s, np.zeros(co, np.int64), 0), bias)
        oh = conv_out_dim(ch, s.kh, s.stride[0], 1, s.pads[0], s.pads[2])
        ow = conv_out_dim(cw, s.kw, s.stride[1], 1, s.pads[1], s.pads[3])
        # why: an output scale near the accumulator's spread keeps values off the clamps
        depth = s.kh * s.kw * (cc // groups)
        out_scale = float(q.s * w_scale.mean() * 127 * np.sqrt(depth) * rng.uniform(0.5, 2.0))
        q = QuantParams.per_tensor(out_scale, int(rng.integers(-30, 30)))
        out = f"y{i}"
        tensors[out] = Tensor(out, (1, oh, ow, co), DType.INT8, q)
        nodes.append(Node(f"conv{i}", "Conv2D", (cur, f"w{i}", f"b{i}"), (out,), {
            "strides": s.stride, "dilations": (1, 1), "pads": s.pads, "groups": groups,
            "activation": s.activation}))
        cur, ch, cw, cc = out, oh, ow, co
    outputs = (cur,) if not tail_consumers else (cur, "y0")
    return Graph("chain", tensors, tuple(nodes), ("x",), outputs).validate()


def random_input(graph: Graph, n: int, seed: int = 1) -> np.ndarray:
    shape = graph.tensor(graph.inputs[0]).shape[1:]
    return np.random.default_rng(seed).integers(-128, 128, (n, *shape)).astype(np.int8)


def inverted_residual_graph(h: int, w: int, cin: int, blocks: list[tuple[int, int, int]],
                            seed: int = 0) -> Graph:
    """MobileNetV2-style blocks: pointwise expand (ReLU6) -> depthwise 3x3 'same' (ReLU6,
    the block's stride) -> pointwise project (no activation), and an Add of the block input
    (an identity shortcut) when the block keeps the shape. ``blocks``: (expanded channels,
    output channels, stride) each; random weights and quantization (the Add's three scales
    differ, so its rescaling is exercised)."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, Tensor] = {}
    q_in = QuantParams.per_tensor(float(rng.uniform(0.02, 0.06)), int(rng.integers(-20, 20)))
    tensors["x"] = Tensor("x", (1, h, w, cin), DType.INT8, q_in)
    nodes: list[Node] = []
    cur, ch, cw, cc, q = "x", h, w, cin, q_in
    idx = 0

    def conv(src: str, c_in: int, c_out: int, k: int, stride: int, dw: bool,
             act: Activation, hh: int, ww: int, qx: QuantParams) -> tuple[str, int, int,
                                                                           QuantParams]:
        nonlocal idx
        i = idx
        idx += 1
        pad = (k - 1) // 2
        pads = (pad, pad, k - 1 - pad, k - 1 - pad) if stride == 1 else (0, 0, 1, 1)
        groups = c_in if dw else 1
        wdata = rng.integers(-127, 128, (c_out, k, k, c_in // groups)).astype(np.int8)
        depth = k * k * (c_in // groups)
        # why these scales: an accumulator of sqrt(depth) * ~50 input steps * ~73 weight
        # steps; a ReLU6 output is TFLite's (6/255, -128), its weights scaled so the real
        # sums spread over ~2 (else the clamp at 6 leaves a few levels); other outputs ~40
        # steps of spread
        spread = float(np.sqrt(depth) * 50 * 73 * qx.s)
        if act is Activation.RELU6:
            w_scale = (2.0 / spread * rng.uniform(0.5, 1.5, c_out)).astype(np.float32)
            qy = QuantParams.per_tensor(6.0 / 255, -128)
        else:
            w_scale = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
            qy = QuantParams.per_tensor(float(spread * w_scale.mean() / 40
                                              * rng.uniform(0.7, 1.4)),
                                        int(rng.integers(-30, 30)))
        tensors[f"w{i}"] = Tensor(f"w{i}", wdata.shape, DType.INT8,
                                  QuantParams(w_scale, np.zeros(c_out, np.int64), 0), wdata)
        bias = rng.integers(-2000, 2000, c_out).astype(np.int32)
        tensors[f"b{i}"] = Tensor(f"b{i}", bias.shape, DType.INT32,
                                  QuantParams(w_scale * qx.s, np.zeros(c_out, np.int64), 0), bias)
        oh = conv_out_dim(hh, k, stride, 1, pads[0], pads[2])
        ow = conv_out_dim(ww, k, stride, 1, pads[1], pads[3])
        tensors[f"y{i}"] = Tensor(f"y{i}", (1, oh, ow, c_out), DType.INT8, qy)
        nodes.append(Node(f"conv{i}", "Conv2D", (src, f"w{i}", f"b{i}"), (f"y{i}",), {
            "strides": (stride, stride), "dilations": (1, 1), "pads": pads, "groups": groups,
            "activation": act}))
        return f"y{i}", oh, ow, qy

    for b, (expand, cout, stride) in enumerate(blocks):
        e, eh, ew, qe = conv(cur, cc, expand, 1, 1, False, Activation.RELU6, ch, cw, q)
        d, dh, dw_, qd = conv(e, expand, expand, 3, stride, True, Activation.RELU6, eh, ew, qe)
        p, ph, pw, qp = conv(d, expand, cout, 1, 1, False, Activation.NONE, dh, dw_, qd)
        if stride == 1 and cout == cc:
            qa = QuantParams.per_tensor(float(max(q.s, qp.s) * rng.uniform(1.0, 1.5)),
                                        int(rng.integers(-20, 20)))
            out = f"add{b}"
            tensors[out] = Tensor(out, (1, ph, pw, cout), DType.INT8, qa)
            operands = (cur, p) if b % 2 == 0 else (p, cur)  # both operand orders
            nodes.append(Node(f"add{b}", "Add", operands, (out,),
                              {"activation": Activation.NONE}))
            p, qp = out, qa
        cur, ch, cw, cc, q = p, ph, pw, cout, qp
    return Graph("blocks", tensors, tuple(nodes), ("x",), (cur,)).validate()
