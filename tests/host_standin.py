"""A tiny stand-in kernel library for the host backend's thread / schedule / executable tests.

It follows the kernel ABI of ``edgenn.backends.host`` (``<name>_run(in, weights, bias, out,
scratch, part_begin, part_end)``) with plain C loops: direct Conv2D (grouped and depthwise,
any stride, padding and dilation) partitioned by output rows, and FullyConnected partitioned by
blocks of 8 output channels. Slow but exact, so tests of threading, pinning, shares and
emulation do not depend on the real kernels (``edgenn.backends.host.kernels``).
"""

from __future__ import annotations

import ctypes
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.cc import Source, load_library
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Activation, Graph, Node

FC_BLOCK = 8
CACHE = Path(__file__).resolve().parents[1] / "out" / "host_standin_cache"


@dataclass(frozen=True)
class StandinConfig:
    """``algorithm``: ``direct`` computes the layer; ``skip_last`` never writes the last
    partition and ``off`` adds 0.01 everywhere (broken kernels that ``check`` must catch)."""

    algorithm: str = "direct"
    microkernel: str = "scalar"

    def describe(self) -> str:
        return f"{self.algorithm} (stand-in)"


@dataclass(frozen=True)
class Plan:
    partition_count: int
    partition_axis: str
    scratch_floats: int


@dataclass
class StandinOp:
    node: Node
    plan: Plan
    lib: ctypes.CDLL
    fn: Any
    weights_packed: np.ndarray
    bias: np.ndarray
    out_shape: tuple[int, ...]
    calls: list[tuple[int, int]] = field(default_factory=list)

    def run_partition(self, x: np.ndarray, out: np.ndarray, begin: int, end: int) -> None:
        scratch = np.zeros(max(1, self.plan.scratch_floats), np.float32)
        self.fn(x.ctypes.data, self.weights_packed.ctypes.data, self.bias.ctypes.data,
                out.ctypes.data, scratch.ctypes.data, begin, end)


def _clamp(node: Node) -> tuple[float, float]:
    act = node.attr("activation", Activation.NONE)
    act = act if isinstance(act, Activation) else Activation(act or "none")
    return {Activation.RELU: (0.0, 3.0e38), Activation.RELU6: (0.0, 6.0),
            Activation.RELU_N1_TO_1: (-1.0, 1.0)}.get(act, (-3.0e38, 3.0e38))


def candidate_configs(node: Node, graph: Graph) -> list[StandinConfig]:
    if node.op in ("Conv2D", "FullyConnected") and graph.tensor(node.inputs[1]).is_const:
        return [StandinConfig()]
    return []


def default_config(node: Node, graph: Graph) -> StandinConfig:
    return StandinConfig()


def prepare(node: Node, graph: Graph, config: StandinConfig) -> StandinOp:
    if config.algorithm not in ("direct", "skip_last", "off"):
        raise UnsupportedOperatorError(f"{node}: no stand-in algorithm {config.algorithm!r}")
    w = graph.tensor(node.inputs[1]).data
    assert w is not None
    bias_name = node.inputs[2] if len(node.inputs) > 2 else ""
    bias = (graph.tensor(bias_name).data if bias_name else None)
    out_shape = graph.tensor(node.outputs[0]).shape
    lo, hi = _clamp(node)
    name = f"standin_{config.algorithm}_" + re.sub(r"\W", "_", node.name)
    if node.op == "Conv2D":
        co = w.shape[0]
        b = np.zeros(co, np.float32) if bias is None else np.asarray(bias, np.float32)
        src = _conv_source(name, node, graph, lo, hi, config.algorithm)
        plan = Plan(out_shape[1], "rows", 1)
    else:
        co, k = w.shape
        b = np.zeros(co, np.float32) if bias is None else np.asarray(bias, np.float32)
        src = _fc_source(name, co, k, lo, hi, config.algorithm)
        plan = Plan(math.ceil(co / FC_BLOCK), "channels", 1)
    lib = load_library([Source(f"{name}.c", src)], ["-O2", "-std=c99"], cache_dir=CACHE,
                       name=name)
    fn = getattr(lib, f"{name}_run")
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int32, ctypes.c_int32]
    packed = np.ascontiguousarray(w, np.float32)
    return StandinOp(node, plan, lib, fn, packed, np.ascontiguousarray(b), out_shape)


_SIG = ("void {n}_run(const float *in, const float *w, const float *bias, float *out, "
        "float *scratch, int32_t pb, int32_t pe)")


def _broken(algorithm: str, last: int) -> tuple[str, str]:
    """(statement skipping the last partition, term added to every value)."""
    skip = f"if (oy == {last}) continue;" if algorithm == "skip_last" else ""
    return skip, "0.01f" if algorithm == "off" else "0.0f"


def _conv_source(name: str, node: Node, graph: Graph, lo: float, hi: float,
                 algorithm: str) -> str:
    x = graph.tensor(node.inputs[0])
    w = graph.tensor(node.inputs[1])
    _, ih, iw, ci = x.shape
    co, kh, kw, cig = w.shape
    _, oh, ow, _ = graph.tensor(node.outputs[0]).shape
    groups = int(node.attr("groups", 1))
    sh, sw = (int(s) for s in node.attr("strides", (1, 1)))
    dh, dw = (int(d) for d in node.attr("dilations", (1, 1)))
    pt, pl = (int(p) for p in node.attr("pads", (0, 0, 0, 0))[:2])
    cog = co // groups
    skip, off = _broken(algorithm, oh - 1)
    return f"""#include <stdint.h>
{_SIG.format(n=name)} {{
  (void)scratch;
  for (int32_t oy = pb; oy < pe; ++oy) {{
    {skip}
    for (int ox = 0; ox < {ow}; ++ox)
      for (int oc = 0; oc < {co}; ++oc) {{
        int g = oc / {cog};
        float acc = bias[oc];
        for (int ky = 0; ky < {kh}; ++ky) {{
          int iy = oy * {sh} - {pt} + ky * {dh};
          if (iy < 0 || iy >= {ih}) continue;
          for (int kx = 0; kx < {kw}; ++kx) {{
            int ix = ox * {sw} - {pl} + kx * {dw};
            if (ix < 0 || ix >= {iw}) continue;
            const float *px = in + ((iy * {iw} + ix) * {ci}) + g * {cig};
            const float *pw = w + ((oc * {kh} + ky) * {kw} + kx) * {cig};
            for (int c = 0; c < {cig}; ++c) acc += px[c] * pw[c];
          }}
        }}
        acc = acc < {lo:e}f ? {lo:e}f : acc;
        out[(oy * {ow} + ox) * {co} + oc] = (acc > {hi:e}f ? {hi:e}f : acc) + {off};
      }}
  }}
}}
"""


def _fc_source(name: str, co: int, k: int, lo: float, hi: float, algorithm: str) -> str:
    skip, off = _broken(algorithm, math.ceil(co / FC_BLOCK) - 1)
    return f"""#include <stdint.h>
{_SIG.format(n=name)} {{
  (void)scratch;
  for (int32_t blk = pb; blk < pe; ++blk) {{
    {skip.replace("oy", "blk")}
    for (int o = blk * {FC_BLOCK}; o < (blk + 1) * {FC_BLOCK} && o < {co}; ++o) {{
      float acc = bias[o];
      for (int i = 0; i < {k}; ++i) acc += in[i] * w[o * {k} + i];
      acc = acc < {lo:e}f ? {lo:e}f : acc;
      out[o] = (acc > {hi:e}f ? {hi:e}f : acc) + {off};
    }}
  }}
}}
"""
