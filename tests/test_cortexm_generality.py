"""Seeded random int8 graphs on the emulated Cortex-M4 against the reference runtime.

The generated DSP kernels (pointwise, conv_gemm, depthwise, dense, eltwise_simd, pool_simd)
and the flash policy are tested shape by shape in their own files; this sweep builds whole
chains the way another real model might look: conv (KxK, stride 1/2, SAME/VALID, few input
channels) -> depthwise (3x3/5x5/1x7/7x1, stride 1/2, multiplier 1/2) -> pointwise (odd
channel counts) -> residual Add -> average pool -> fully connected -> softmax, with random
per-channel scales from tiny to >= 0.5 effective multipliers (left shifts), zero points over
the whole int8 range, every activation, extreme and all-zero weight channels and huge
biases. Each graph is compiled with the default flash policy and with compact code, and run
on random and constant (-128 / 127) inputs; every output must equal the reference runtime's
(bit-exact with TFLite Micro).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import numpy as np
import pytest

from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

ACTS = (Activation.NONE, Activation.RELU, Activation.RELU6)

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def _f32(v: float) -> float:
    return float(np.float32(v))


def _wq(scales: np.ndarray) -> QuantParams:
    """Per-tensor weight quantization when every channel has one scale, else per-channel."""
    if len(scales) > 1 and np.all(scales == scales[0]):
        return QuantParams.per_tensor(float(scales[0]), 0)
    return QuantParams(scales, np.zeros(len(scales), np.int64), 0)


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TF 'SAME' padding of one axis: (before, after)."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


@dataclass
class Builder:
    """Appends int8 layers to a graph with random quantization (seeded ``rng``)."""

    rng: np.random.Generator
    tensors: dict[str, Tensor] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    cur: str = "x"

    def start(self, shape: tuple[int, ...]) -> None:
        zp = int(self.rng.choice([-128, 127, int(self.rng.integers(-128, 128))]))
        self.tensors["x"] = Tensor("x", shape, DType.INT8,
                                   QuantParams.per_tensor(_f32(self.rng.uniform(0.01, 0.1)), zp))
        self.cur = "x"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensors[self.cur].shape

    def _name(self, stem: str) -> str:
        return f"{stem}{len(self.nodes)}"

    def _out(self, node: Node, inputs: list[Tensor], scale: float, zp: int | None = None) -> str:
        ((shape, dtype),) = infer(node, inputs)
        if zp is None:  # -128: TFLite's usual ReLU output, which the fast paths specialise
            zp = int(self.rng.choice([-128, -128, 127, 0, int(self.rng.integers(-128, 128))]))
        name = node.outputs[0]
        self.tensors[name] = Tensor(name, shape, dtype, QuantParams.per_tensor(_f32(scale), zp))
        self.nodes.append(node)
        self.cur = name
        return name

    def _weights(self, shape: tuple[int, ...], taps: int, extremes: bool) -> tuple[
            np.ndarray, np.ndarray, np.ndarray, float]:
        """Weights, per-channel scales, biases and the output scale of a MAC layer.

        Effective multipliers (in * w / out) span tiny to >= 0.5 (left shifts) across
        channels; some channels are all zero with a huge bias, some use -127 / 127 only.
        """
        rng = self.rng
        cout = shape[0]
        w = rng.integers(-127, 128, size=shape).astype(np.int8)
        in_scale = self.tensors[self.cur].quant.scale[0]
        # the output scale that keeps a typical accumulator in range, then per-channel
        # effective multipliers spread around it by 2^-6 .. 2^3 (and 2^-14 sometimes)
        base = 1.0 / (127.0 * 2.0 * np.sqrt(max(taps, 1)))
        spread = rng.uniform(-6.0, 3.0, cout)
        if rng.random() < 0.3:
            spread[rng.integers(0, cout)] = -14.0
        eff = base * 2.0 ** spread
        if rng.random() < 0.3:
            eff[rng.integers(0, cout)] = rng.uniform(0.5, 4.0)  # shift >= 0: left shifts
        out_scale = float(rng.uniform(0.01, 0.2))
        if rng.random() < 0.25:  # per-tensor weights: one multiplier for every channel
            eff = np.full(cout, eff[0])
        wscale = (eff * out_scale / in_scale).astype(np.float32)
        bias = rng.integers(-20000, 20000, size=cout).astype(np.int64)
        if extremes and cout > 1:
            flat = w.reshape(cout, -1)
            flat[rng.integers(0, cout)] = rng.choice([-127, 127], size=flat.shape[1])
            dead = rng.integers(0, cout)
            flat[dead] = 0
            bias[dead] = rng.choice([-(2**30), 2**30, 2**31 - 1, -(2**31)])
            if rng.random() < 0.5:
                big = rng.integers(0, cout)
                bias[big] = rng.integers(-(2**24), 2**24)
        return w, wscale, bias.astype(np.int32), out_scale

    def conv(self, cout: int, k: tuple[int, int], stride: int, same: bool, act: Activation,
             depthwise: int = 0, extremes: bool = True) -> str:
        """Conv2D (``depthwise``: the depth multiplier of a depthwise conv instead)."""
        _, h, w_, cin = self.shape
        if depthwise:
            cout = cin * depthwise
            wshape: tuple[int, ...] = (cout, *k, 1)
            taps = k[0] * k[1]
        else:
            wshape = (cout, *k, cin)
            taps = k[0] * k[1] * cin
        w, ws, b, out_scale = self._weights(wshape, taps, extremes)
        name = self._name("l")
        wt = Tensor(f"{name}_w", w.shape, DType.INT8,
                    _wq(ws), w)
        bt = Tensor.const(f"{name}_b", b)
        self.tensors[wt.name] = wt
        self.tensors[bt.name] = bt
        if same:
            t, bo = same_pads(h, k[0], stride)
            le, r = same_pads(w_, k[1], stride)
            pads = (t, le, bo, r)
        else:
            pads = (0, 0, 0, 0)
        attrs: dict[str, object] = {"strides": (stride, stride), "pads": pads,
                                    "activation": act}
        if depthwise:
            attrs["groups"] = cin
        node = Node(name, "Conv2D", (self.cur, wt.name, bt.name), (f"{name}_y",), attrs)
        return self._out(node, [self.tensors[self.cur], wt, bt], out_scale)

    def fc(self, cout: int, act: Activation, extremes: bool = True) -> str:
        depth = self.shape[-1]
        w, ws, b, out_scale = self._weights((cout, depth), depth, extremes)
        name = self._name("fc")
        wt = Tensor(f"{name}_w", w.shape, DType.INT8,
                    _wq(ws), w)
        bt = Tensor.const(f"{name}_b", b)
        self.tensors[wt.name] = wt
        self.tensors[bt.name] = bt
        node = Node(name, "FullyConnected", (self.cur, wt.name, bt.name), (f"{name}_y",),
                    {"activation": act})
        return self._out(node, [self.tensors[self.cur], wt, bt], out_scale)

    def add(self, other: str, act: Activation) -> str:
        name = self._name("add")
        a, b = self.tensors[self.cur], self.tensors[other]
        scale = max(a.quant.scale[0], b.quant.scale[0]) * self.rng.uniform(0.3, 3)
        node = Node(name, "Add", (a.name, b.name), (f"{name}_y",), {"activation": act})
        return self._out(node, [a, b], scale)

    def avgpool(self, k: tuple[int, int], stride: int, same: bool, act: Activation) -> str:
        _, h, w_, _ = self.shape
        pads = (0, 0, 0, 0)
        if same:
            t, bo = same_pads(h, k[0], stride)
            le, r = same_pads(w_, k[1], stride)
            pads = (t, le, bo, r)
        name = self._name("pool")
        x = self.tensors[self.cur]
        node = Node(name, "AvgPool2D", (x.name,), (f"{name}_y",),
                    {"kernel": k, "strides": (stride, stride), "pads": pads,
                     "activation": act, "count_include_pad": False})
        keep = self.rng.random() < 0.5  # TFLite keeps the quantization; requantize otherwise
        scale = float(x.quant.scale[0]) * (1.0 if keep else self.rng.uniform(0.5, 2.0))
        zp = int(x.quant.zero_point[0]) if keep else None
        return self._out(node, [x], scale, zp)

    def flatten(self) -> str:
        n = int(np.prod(self.shape[1:]))
        name = self._name("flat")
        x = self.tensors[self.cur]
        node = Node(name, "Reshape", (x.name,), (f"{name}_y",), {"shape": (1, n)})
        return self._out(node, [x], x.quant.scale[0], int(x.quant.zero_point[0]))

    def softmax(self) -> str:
        name = self._name("sm")
        x = self.tensors[self.cur]
        node = Node(name, "Softmax", (x.name,), (f"{name}_y",), {"beta": 1.0})
        return self._out(node, [x], 1.0 / 256.0, -128)

    def graph(self) -> Graph:
        return Graph("gen", dict(self.tensors), tuple(self.nodes), ("x",), (self.cur,))


def random_chain(seed: int) -> Graph:
    """conv -> depthwise -> pointwise -> Add residual -> avg pool -> FC -> FC -> softmax."""
    rng = np.random.default_rng(seed)
    b = Builder(rng)

    def act() -> Activation:
        return ACTS[int(rng.integers(0, 3))]

    hi = 25 if rng.random() < 0.3 else 13
    hw = (int(rng.integers(1, hi)), int(rng.integers(1, hi)))
    cin = int(rng.choice([1, 2, 3, 5, 17]))
    b.start((1, *hw, cin))
    k = int(rng.choice([1, 2, 3, 5]))
    same = bool(rng.random() < 0.6) or min(hw) < k
    b.conv(int(rng.choice([1, 3, 4, 8, 9, 16])), (k, k), int(rng.integers(1, 3)), same, act())
    dk = [(3, 3), (5, 5), (1, 7), (7, 1)][int(rng.integers(0, 4))]
    h, w = b.shape[1:3]
    dsame = bool(rng.random() < 0.7) or h < dk[0] or w < dk[1]
    b.conv(0, dk, int(rng.integers(1, 3)), dsame, act(), depthwise=int(rng.integers(1, 3)))
    b.conv(int(rng.integers(1, 131)), (1, 1), 1, False, act())
    if rng.random() < 0.7:  # residual: pointwise C -> C, added to its own input
        skip = b.cur
        b.conv(b.shape[-1], (1, 1), 1, False, act())
        b.add(skip, act())
    h, w = b.shape[1:3]
    if h > 1 or w > 1:
        if rng.random() < 0.5:
            b.avgpool((h, w), 1, False, Activation.NONE)  # global
        else:
            pk = (int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1)))
            b.avgpool(pk, int(rng.integers(1, 3)), bool(rng.random() < 0.5), Activation.NONE)
    b.flatten()
    b.fc(int(rng.integers(1, 71)), act())
    if rng.random() < 0.5:
        b.fc(int(rng.integers(1, 71)), Activation.NONE)
    b.softmax()
    return b.graph()


def inputs_for(g: Graph, rng: np.random.Generator, n: int = 2) -> np.ndarray:
    shape = g.tensor("x").shape[1:]
    xs = [np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)]
    xs += [rng.integers(-128, 128, size=shape).astype(np.int8) for _ in range(n)]
    return np.stack(xs)


def mismatches(g: Graph, x: np.ndarray, **kw: object) -> list[str]:
    """Compile for cortex-m4 with ``kw`` and list the outputs that differ from the reference."""
    from edgenn.backends.cortexm.executable import compile_cortexm

    exe = compile_cortexm(g, "cortex-m4", **kw)  # type: ignore[arg-type]
    got = exe.run(x)
    want = compile_ref(g).run(x)
    kernels = [str(m["kernel"]) for m in exe.manifest["layers"]]
    bad = []
    for a, b in zip(got, want, strict=True):
        if not np.array_equal(np.asarray(a), b):
            bad.append(f"{kw}: {int((np.asarray(a) != b).sum())} differ; kernels {kernels}")
    return bad


def random_layer(seed: int) -> Graph:
    """One or two layers at the edges: 1x1 planes, one output channel, Cin 1 pointwise,
    long / short fully connected layers, strided pointwise, any depthwise kernel."""
    rng = np.random.default_rng(seed)
    b = Builder(rng)
    kind = seed % 5
    act = ACTS[int(rng.integers(0, 3))]
    if kind == 0:  # fully connected, depth 1..300, 1..70 outputs
        b.start((1, int(rng.integers(1, 301))))
        b.fc(int(rng.integers(1, 71)), act)
        return b.graph()
    hw = (int(rng.choice([1, 1, 2, 3, 7])), int(rng.choice([1, 1, 2, 5, 9])))
    if kind == 1:  # pointwise, Cin 1 / odd, Cout 1 / odd, stride 1 or 2
        b.start((1, *hw, int(rng.choice([1, 1, 2, 3, 5, 7, 33]))))
        b.conv(int(rng.choice([1, 1, 2, 3, 5, 17, 130])), (1, 1), int(rng.integers(1, 3)),
               False, act)
    elif kind == 2:  # KxK conv, Cin 1/2/3/5/17, cout 1 possible
        b.start((1, *hw, int(rng.choice([1, 2, 3, 5, 17]))))
        k = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        b.conv(int(rng.choice([1, 2, 3, 8, 13])), k, int(rng.integers(1, 3)), True, act)
    elif kind == 3:  # depthwise, any kernel, multiplier 1/2, SAME
        b.start((1, *hw, int(rng.choice([1, 2, 3, 5, 8, 17]))))
        k = [(3, 3), (5, 5), (1, 7), (7, 1), (1, 1), (2, 2)][int(rng.integers(0, 6))]
        b.conv(0, k, int(rng.integers(1, 3)), True, act, depthwise=int(rng.integers(1, 3)))
    else:  # residual add / average pool on odd channel counts and tiny planes
        b.start((1, *hw, int(rng.choice([1, 2, 3, 5, 17]))))
        skip = b.cur
        b.conv(b.shape[-1], (1, 1), 1, False, act)
        b.add(skip, ACTS[int(rng.integers(0, 3))])
        h, w = b.shape[1:3]
        b.avgpool((int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))),
                  int(rng.integers(1, 3)), bool(rng.random() < 0.5), Activation.NONE)
    return b.graph()


def _check(g: Graph, seed: int, **kw: object) -> None:
    pytest.importorskip("unicorn")
    x = inputs_for(g, np.random.default_rng(seed))
    assert mismatches(g, x, **kw) == []


BUILDS: list[dict[str, object]] = [{}, {"compact": True}]


@needs_arm
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("build", range(len(BUILDS)))
def test_random_chains(seed: int, build: int) -> None:
    _check(random_chain(100 + seed), seed, **BUILDS[build])


@needs_arm
@pytest.mark.parametrize("seed", range(10))
def test_random_edge_layers(seed: int) -> None:
    _check(random_layer(200 + seed), seed)


@needs_arm
def test_depthwise_1x1_one_channel_two_wide() -> None:
    """Regression: depthwise 1x1, one channel, rows of 2, requant mode 2; gcc 12.2 -O2 deleted
    the call of the channel function's IPA-CP clone (outputs left as the inputs)."""
    from test_cortexm_depthwise import dw_graph  # type: ignore[import-not-found]

    rng = np.random.default_rng(0)
    g = dw_graph(rng, (5, 2), 1, (1, 1), (1, 1), (0, 0, 0, 0), Activation.NONE, 127, 127)
    _check(g, 0)


@needs_arm
@pytest.mark.slow
@pytest.mark.parametrize("build", range(len(BUILDS)))
def test_random_sweep_slow(build: int) -> None:
    for seed in range(60):
        _check(random_chain(1000 + seed), seed, **BUILDS[build])
        _check(random_layer(1000 + seed), seed, **BUILDS[build])
