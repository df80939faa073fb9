"""int16 layers against their int8 twins of the same shape on the emulated Cortex-M4.

Issue 25 asks for 16x8 convolution, depthwise, pointwise and transposed convolution at the
MAC/cycle of their int8 twins. The converter-made fixtures (mbv3_int16 / mbv3_int8) cannot
show it: their "twin" layers have different shapes. Here every layer shape of ``SHAPES`` is
built twice with the same seeded int8 weights and biases: once int8 (int8 activations, int32
bias) and once 16x8 (int16 activations, int8 weights, int64 bias). Each twin is a firmware of
its own (code and data placement move a layer's cycles, so a layer measured beside other
layers would not be measured like its twin); its cycles come from the per-layer bench of one
emulated inference. The same run checks every layer bit-exact against the reference runtime
(``compile_model(graph, "ref")``) on seeded random inputs.

    .venv/bin/python benchmarks/s16_vs_s8.py [--json PATH]

Writes benchmarks/results/s16_vs_s8.json (atomically); docs/operators.md renders its table
(``tools/doc_sections/twins.py``, through tools/results_doc.py and tools/operators_doc.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edgenn.api import compile_model  # noqa: E402
from edgenn.cli.console import console, table  # noqa: E402
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor  # noqa: E402
from edgenn.ir.shapes import infer  # noqa: E402
from edgenn.utils import atomic_write_bytes  # noqa: E402
from edgenn.version import with_version  # noqa: E402

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "s16_vs_s8.json"
CORE = "cortex-m4"
SAMPLES = 2  # random inputs per layer for the bit-exactness check (the first is benched)
BIAS = {DType.INT8: DType.INT32, DType.INT16: DType.INT64}  # TFLite's bias type per activation


@dataclass(frozen=True)
class Shape:
    """One layer: ``kind`` conv / dw / pw / tconv, NHWC input ``h x w x cin``, ``cout``
    outputs (``cin`` for depthwise), a ``kh x kw`` kernel, ``stride`` on both axes."""

    kind: str
    h: int
    w: int
    cin: int
    cout: int
    kh: int = 3
    kw: int = 3
    stride: tuple[int, int] = (1, 1)
    activation: Activation = Activation.RELU
    attrs: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        kind = {"conv": "conv", "dw": "depthwise", "pw": "pointwise", "tconv": "transposed"}
        stride = "" if self.stride == (1, 1) else f" s{self.stride[0]}x{self.stride[1]}"
        return (f"{kind[self.kind]} {self.kh}x{self.kw}{stride} {self.cin}->{self.cout} "
                f"@{self.h}x{self.w}")


def _same(n: int, k: int, s: int) -> tuple[int, int]:
    """TFLite's SAME padding of one axis: before, after."""
    total = max((-(-n // s) - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def conv(h: int, w: int, cin: int, cout: int, kh: int = 3, kw: int = 3, s: int = 1,
         kind: str = "conv", act: Activation = Activation.RELU) -> Shape:
    """A SAME-padded convolution (depthwise with ``kind="dw"``, ``cout == cin``)."""
    (top, bottom), (left, right) = _same(h, kh, s), _same(w, kw, s)
    return Shape(kind, h, w, cin, cout, kh, kw, (s, s), act, {"pads": (top, left, bottom, right)})


def pw(h: int, w: int, cin: int, cout: int) -> Shape:
    return Shape("pw", h, w, cin, cout, 1, 1, (1, 1), Activation.NONE, {"pads": (0, 0, 0, 0)})


def tconv(h: int, w: int, cin: int, cout: int, kh: int, kw: int, s: tuple[int, int]) -> Shape:
    """A transposed convolution of output ``stride * input`` (TFLite's SAME cropping)."""
    ch, cw = kh - s[0], kw - s[1]
    pads = (ch // 2, cw // 2, ch - ch // 2, cw - cw // 2)
    return Shape("tconv", h, w, cin, cout, kh, kw, s, Activation.NONE,
                 {"pads": pads, "output_padding": (0, 0)})


SHAPES: list[Shape] = [
    # first layers of vision / spectrogram models: few input channels
    conv(32, 32, 1, 8), conv(32, 32, 1, 16, s=2), conv(32, 32, 3, 16, s=2),
    conv(16, 16, 3, 16), conv(16, 16, 8, 16), conv(16, 16, 8, 32, s=2),
    conv(16, 16, 16, 16), conv(8, 8, 16, 32), conv(16, 16, 16, 32, s=2),
    # depthwise 3x3 and the 1-D 9x1 / 1x9 of audio models
    conv(16, 16, 8, 8, kind="dw"), conv(16, 16, 16, 16, kind="dw"),
    conv(16, 16, 16, 16, s=2, kind="dw"), conv(8, 8, 32, 32, kind="dw"),
    conv(8, 8, 64, 64, kind="dw"), conv(16, 16, 32, 32, s=2, kind="dw"),
    conv(32, 8, 16, 16, kh=9, kw=1, kind="dw"), conv(8, 32, 16, 16, kh=1, kw=9, kind="dw"),
    # pointwise
    pw(16, 16, 8, 8), pw(16, 16, 16, 16), pw(8, 8, 64, 16), pw(8, 8, 16, 64),
    pw(8, 8, 32, 32),
    # transposed convolution: 2-D upsampling and a 1-D SEANet-style decoder step
    tconv(8, 8, 16, 8, 3, 3, (2, 2)), tconv(1, 16, 16, 8, 1, 4, (1, 2)),
]


# --------------------------------------------------------------------------- the layers
def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


@dataclass(frozen=True)
class Weights:
    """What both twins of a shape share: int8 weights, per-channel scales, integer bias."""

    w: np.ndarray
    w_scales: np.ndarray
    bias: np.ndarray


def _weights(shape: Shape, seed: list[int]) -> Weights:
    rng = np.random.default_rng(seed)
    cig = 1 if shape.kind == "dw" else shape.cin
    w = rng.integers(-127, 128, (shape.cout, shape.kh, shape.kw, cig)).astype(np.int8)
    scales = np.array([_scale(rng, 1e-3, 0.05) for _ in range(shape.cout)], np.float32)
    return Weights(w, scales, rng.integers(-30_000, 30_000, shape.cout))


def _layer(i: int, shape: Shape, weights: Weights, dtype: DType, rng: np.random.Generator
           ) -> tuple[Node, list[Tensor], np.ndarray]:
    """Layer ``i`` of a model in ``dtype`` (int8 or int16 activations), with its inputs."""
    x_shape = (1, shape.h, shape.w, shape.cin)
    if dtype is DType.INT16:  # symmetric int16 activations (zero point 0), full range
        xq = QuantParams.per_tensor(_scale(rng, 1e-4, 1e-2), 0)
        data = rng.integers(-32768, 32768, (SAMPLES, *x_shape[1:])).astype(np.int16)
    else:
        xq = QuantParams.per_tensor(_scale(rng, 0.01, 0.1), int(rng.integers(-20, 20)))
        data = rng.integers(-128, 128, (SAMPLES, *x_shape[1:])).astype(np.int8)
    x = Tensor(f"x{i}", x_shape, dtype, xq)
    co = shape.cout
    wq = QuantParams(weights.w_scales, np.zeros(co, np.int64), 0)
    w = Tensor.const(f"w{i}", weights.w, wq)
    b = Tensor.const(f"b{i}", weights.bias.astype(BIAS[dtype].numpy))
    op = "TransposeConv2D" if shape.kind == "tconv" else "Conv2D"
    attrs: dict[str, Any] = {"strides": shape.stride, "dilations": (1, 1),
                             "groups": shape.cin if shape.kind == "dw" else 1,
                             "activation": shape.activation, **shape.attrs}
    node = Node(f"l{i}", op, (x.name, w.name, b.name), (f"y{i}",), attrs)
    ((y_shape, y_type),) = infer(node, [x, w, b])
    # an output scale that spreads the accumulator over the output range (no saturation
    # everywhere, no collapse to zero), from the expected spread of a random dot product
    depth = int(np.prod(weights.w.shape[1:]))
    x_std = 18900 if dtype is DType.INT16 else 74
    real = x_std * 73 * np.sqrt(depth) * xq.s * float(weights.w_scales.mean())
    spread, zp = (4000, 0) if dtype is DType.INT16 else (16, -7)
    y = Tensor(f"y{i}", y_shape, y_type,
               QuantParams.per_tensor(float(np.float32(real / spread)), zp))
    return node, [x, w, b, y], data


def build(shapes: list[Shape], dtype: DType, seed: int = 0) -> tuple[Graph, list[np.ndarray]]:
    """One model of every shape in ``dtype`` (weights seeded per shape: both twins share
    them), and ``SAMPLES`` random inputs per layer (seeded per shape and dtype)."""
    nodes, tensors, xs = [], {}, []
    for i, shape in enumerate(shapes):
        # why seeded by the layer's name: a layer is the same wherever it stands in the list
        key = zlib.crc32(shape.name.encode())
        rng = np.random.default_rng([seed, key, 16 if dtype is DType.INT16 else 8])
        node, ts, data = _layer(i, shape, _weights(shape, [seed, key]), dtype, rng)
        nodes.append(node)
        tensors.update({t.name: t for t in ts})
        xs.append(data)
    graph = Graph(f"twins_{dtype.name.lower()}", tensors, tuple(nodes),
                  tuple(n.inputs[0] for n in nodes), tuple(n.outputs[0] for n in nodes))
    return graph.validate(), xs


def mismatches(got: np.ndarray, want: np.ndarray) -> int:
    """Output elements that differ (every element when the shape or type differ)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return int(max(got.size, want.size))
    return int((got != want).sum())


def measure_layer(shape: Shape, dtype: DType, seed: int = 0) -> dict[str, Any]:
    """The ``dtype`` twin of ``shape`` in a firmware of its own: kernel, MACs, cycles of one
    inference of the first input, output mismatches against ref on every input."""
    graph, xs = build([shape], dtype, seed)
    firmware = compile_model(graph, CORE)
    want = compile_model(graph, "ref").run(*xs)
    got = firmware.run(*xs)
    layers = firmware.emulate(*(x[:1] for x in xs)).layers
    if len(layers) != 1:
        raise RuntimeError(f"{shape.name} ({dtype.name}): {len(layers)} layers built from one "
                           "node")
    (layer,) = layers
    if layer.cycles is None:
        raise RuntimeError(f"{CORE}: no cycle model")
    return {"kernel": layer.kernel, "macs": layer.macs, "cycles": layer.cycles,
            "mismatches": mismatches(got[0], want[0]), "values": int(want[0].size)}


def measure(shapes: list[Shape], seed: int = 0) -> list[dict[str, Any]]:
    """Both twins of every shape, side by side. Why one firmware per layer: code and data
    placement move a layer's cycles, so a layer sharing a firmware with others would be
    measured with neighbours that are not its twin's."""
    out = []
    for shape in shapes:
        a, b = measure_layer(shape, DType.INT8, seed), measure_layer(shape, DType.INT16, seed)
        out.append({"layer": shape.name, "kind": shape.kind, "int8": a, "int16": b,
                    "ratio": b["cycles"] / a["cycles"],
                    "mac_per_cycle_int8": a["macs"] / a["cycles"],
                    "mac_per_cycle_int16": b["macs"] / b["cycles"]})
    return out


def print_table(doc: dict[str, Any]) -> None:
    rows = [[r["layer"], r["int8"]["kernel"], r["int16"]["kernel"], f"{r['int8']['macs']:,}",
             f"{r['int8']['cycles']:,}", f"{r['int16']['cycles']:,}", f"{r['ratio']:.2f}",
             f"{r['mac_per_cycle_int8']:.3f}", f"{r['mac_per_cycle_int16']:.3f}",
             f"{r['int8']['mismatches']} / {r['int16']['mismatches']}"]
            for r in doc["layers"]]
    console.print(table(f"int16 (16x8) against int8, same shapes, {CORE} (zero wait states)",
                        ["layer", "int8 kernel", "int16 kernel", "MACs", "cycles int8",
                         "cycles int16", "int16/int8", "MAC/cyc int8", "MAC/cyc int16",
                         "mismatches 8 / 16"], rows, right_align_from=3))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    doc = {"core": CORE, "cycle_model": "Cortex-M4 TRM cycle rules, zero wait states",
           "date": dt.date.today().isoformat(), "seed": args.seed, "samples": SAMPLES,
           "layers": measure(SHAPES, args.seed)}
    print_table(doc)
    atomic_write_bytes(args.json, (json.dumps(with_version(doc), indent=1) + "\n").encode())
    console.print(f"wrote {args.json}")
    bad = sum(r["int8"]["mismatches"] + r["int16"]["mismatches"] for r in doc["layers"])
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
