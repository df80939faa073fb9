"""The 16x8 convolution / dense kernels and the transposed-convolution kernels, compiled with
the HOST gcc (ACLE shim), against the reference runtime, on random layers.

The TFLite Micro conformance cases (tests/conformance/cases/int16_conv.py) pin the reference
to TFLite Micro; this file sweeps the C over many more shapes and parameters than a firmware
build could: groups, dilation, strides, asymmetric pads, channel counts that are and are not
multiples of 4, depth multipliers, every accumulation mode (int32 bias; int64 bias with
int32 or int64 sums), scale ratios above 1, and every fused activation. Each case is one
node rendered exactly as the code generator renders it; all go into one shared object.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgenn.arith.fixed_point_s16 import multiply_by_quantized_multiplier_64
from edgenn.backends.cortexm.codegen.emit import render
from edgenn.backends.cortexm.kernels.conv_s16 import WIDE64, epilogue, pair_order
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer
from edgenn.prepared.conv import prepare_conv_s16
from edgenn.prepared.fully_connected import prepare_fully_connected_s16
from edgenn.prepared.s16 import S16Requant

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]
CTYPE = {DType.INT8: "int8_t", DType.INT16: "int16_t"}
PER_KIND = 30

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no host gcc")


@dataclass
class Case:
    kind: str
    graph: Graph
    x: np.ndarray


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _weights(rng: np.random.Generator, shape: tuple[int, ...], limit: int) -> Tensor:
    co = shape[0]
    scales = np.array([_scale(rng, 1e-3, 0.05) for _ in range(co)], np.float32)
    q = QuantParams(scales, np.zeros(co, np.int64), 0) if rng.integers(0, 2) else \
        QuantParams.per_tensor(float(scales[0]), 0)
    return Tensor.const("w", rng.integers(-limit, limit + 1, shape).astype(np.int8), q)


def _bias(rng: np.random.Generator, co: int, dtype: DType | None) -> list[Tensor]:
    if dtype is None:
        return []
    return [Tensor.const("b", rng.integers(-300_000, 300_000, co).astype(dtype.numpy))]


def _graph(op: str, x: Tensor, w: Tensor, bias: list[Tensor], out_scale: float,
           **attrs: object) -> Graph:
    ins = [x, w, *bias]
    node = Node("n0", op, tuple(t.name for t in ins), ("y",), dict(attrs))
    ((shape, dtype),) = infer(node, ins)
    zp = -7 if dtype is DType.INT8 else 0
    y = Tensor("y", shape, dtype, QuantParams.per_tensor(out_scale, zp))
    return Graph("g", {t.name: t for t in [*ins, y]}, (node,), ("x",), ("y",))


def _x(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> tuple[Tensor, np.ndarray]:
    if dtype is DType.INT16:
        q = QuantParams.per_tensor(_scale(rng, 1e-4, 1e-2), 0)
        data = rng.integers(-32768, 32768, shape).astype(np.int16)
    else:
        q = QuantParams.per_tensor(_scale(rng, 0.01, 0.1), int(rng.integers(-20, 20)))
        data = rng.integers(-128, 128, shape).astype(np.int8)
    return Tensor("x", shape, dtype, q), data


def _out_scale(rng: np.random.Generator, x: Tensor, w: Tensor, depth: int) -> float:
    """About 1/8 of the int range for a typical sum, sometimes far smaller (ratio > 1)."""
    assert x.quant is not None and w.quant is not None
    x_std = 18900 if x.dtype is DType.INT16 else 74
    spread = 4000 if x.dtype is DType.INT16 else 16
    real = x_std * 73 * np.sqrt(depth) * x.quant.s * float(w.quant.scale.mean())
    return float(np.float32(real / spread * (1e-3 if rng.integers(0, 8) == 0 else 1.0)))


def conv_case(rng: np.random.Generator, depthwise: bool) -> Case:
    if depthwise:
        ci = int(rng.integers(1, 11))
        co, groups, cig = ci * int(rng.integers(1, 3)), ci, 1
    else:
        groups = int(rng.choice([1, 1, 1, 2, 3]))
        cig = int(rng.choice([1, 3, 4, 5, 8, 12, 16]))
        ci, co = cig * groups, groups * int(rng.integers(1, 6))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    strides = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pads = tuple(int(rng.integers(0, 3)) for _ in range(4))
    h = int(rng.integers((kh - 1) * dil[0] + 1, 9))
    wd = int(rng.integers((kw - 1) * dil[1] + 1, 9))
    x, data = _x(rng, (1, h, wd, ci), DType.INT16)
    w = _weights(rng, (co, kh, kw, cig), 127)
    bias = _bias(rng, co, [DType.INT64, DType.INT64, DType.INT32, None][int(rng.integers(0, 4))])
    g = _graph("Conv2D", x, w, bias, _out_scale(rng, x, w, kh * kw * cig), strides=strides,
               dilations=dil, pads=pads, groups=groups,
               activation=ACTS[int(rng.integers(0, 4))])
    return Case("DepthwiseConv2D" if depthwise else "Conv2D", g, data)


def fc_case(rng: np.random.Generator) -> Case:
    # up to 1400 products: some layers need the int64 (SMLALD) sums
    k, co = int(rng.choice([1, 3, 4, 7, 8, 33, 64, 301, 1400])), int(rng.integers(1, 9))
    x, data = _x(rng, (1, k), DType.INT16)
    w = _weights(rng, (co, k), 127)
    bias = _bias(rng, co, [DType.INT64, DType.INT32, None][int(rng.integers(0, 3))])
    g = _graph("FullyConnected", x, w, bias, _out_scale(rng, x, w, k),
               activation=ACTS[int(rng.integers(0, 4))])
    return Case("FullyConnected", g, data)


def tconv_case(rng: np.random.Generator, dtype: DType) -> Case:
    groups = int(rng.choice([1, 1, 2]))
    cig = int(rng.choice([1, 2, 4, 5, 8]))
    ci, co = cig * groups, groups * int(rng.integers(1, 5))
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    strides = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    h, wd = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    full = ((h - 1) * strides[0] + (kh - 1) * dil[0] + 1,
            (wd - 1) * strides[1] + (kw - 1) * dil[1] + 1)
    pt, pb = (int(v) for v in rng.integers(0, max(1, full[0] // 2), 2))
    pl, pr = (int(v) for v in rng.integers(0, max(1, full[1] // 2), 2))
    extra = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
    x, data = _x(rng, (1, h, wd, ci), dtype)
    w = _weights(rng, (co, kh, kw, cig), 127)
    bias_type = [DType.INT64, DType.INT16, None] if dtype is DType.INT16 else [DType.INT32, None]
    bias = _bias(rng, co, bias_type[int(rng.integers(0, len(bias_type)))])
    if bias and bias[0].dtype is DType.INT16:
        bias = [Tensor.const("b", rng.integers(-30000, 30000, co).astype(np.int16))]
    depth = -(-kh // strides[0]) * -(-kw // strides[1]) * cig
    g = _graph("TransposeConv2D", x, w, bias, _out_scale(rng, x, w, depth), strides=strides,
               dilations=dil, pads=(pt, pl, pb, pr), output_padding=extra, groups=groups,
               activation=ACTS[int(rng.integers(0, 4))])
    return Case(f"TransposeConv2D-{dtype.value}", g, data)


GENERATORS: dict[str, Callable[[np.random.Generator], Case]] = {
    "Conv2D": lambda r: conv_case(r, False),
    "DepthwiseConv2D": lambda r: conv_case(r, True),
    "FullyConnected": fc_case,
    "TransposeConv2D-int16": lambda r: tconv_case(r, DType.INT16),
    "TransposeConv2D-int8": lambda r: tconv_case(r, DType.INT8),
}


def _harness(cases: list[Case]) -> tuple[str, set[str]]:
    """One C function per case: ``void case_i(void *x, void *y, void *scratch)``."""
    core = get_core("cortex-m0plus")  # the portable kernels, through the ACLE shim
    decls, bodies, sources, headers = [], [], set(), set()
    for i, case in enumerate(cases):
        node = case.graph.nodes[0]
        kcall = select_kernel(node, case.graph, core).prepare(node, case.graph, core)
        for s in kcall.sources:
            sources.add(s)
            headers.add(s[:-2] + ".h")
        ct = CTYPE[case.graph.tensor("x").dtype]
        ptrs = {"in0": f"(({ct} *)x)", "out0": f"(({ct} *)y)", "scratch": "scratch"}
        d, call = render(kcall, f"c{i}", ptrs)
        decls += d
        bodies.append(f"void case_{i}(void *x, void *y, void *scratch);\n"
                      f"void case_{i}(void *x, void *y, void *scratch)\n{{\n"
                      f"    (void)scratch;\n    {call}\n}}\n")
    head = "#include <stdint.h>\n#include <stddef.h>\n" + "".join(
        f'#include "{h}"\n' for h in sorted(headers))
    return head + "\n".join(decls) + "\n\n" + "\n".join(bodies), sources


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Case], ctypes.CDLL]:
    rng = np.random.default_rng(16)
    cases = [gen(rng) for gen in GENERATORS.values() for _ in range(PER_KIND)]
    src, sources = _harness(cases)
    d = tmp_path_factory.mktemp("conv_s16_host")
    (d / "harness.c").write_text(src)
    so = d / "harness.so"
    cmd = ["gcc", "-O1", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
           f"-I{C_DIR}", str(d / "harness.c"), *(str(C_DIR / s) for s in sorted(sources)),
           "-o", str(so)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    return cases, ctypes.CDLL(str(so))


@pytest.mark.parametrize("kind", list(GENERATORS))
def test_kernel_matches_reference(kind: str, compiled: tuple[list[Case], ctypes.CDLL]) -> None:
    cases, lib = compiled
    checked = 0
    for i, case in enumerate(cases):
        if case.kind != kind:
            continue
        want = compile_ref(case.graph).run(case.x)[0]
        got = np.zeros_like(want)
        scratch = np.zeros(1 << 12, np.int32)
        x = np.ascontiguousarray(case.x)
        getattr(lib, f"case_{i}")(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(got.ctypes.data),
                                  ctypes.c_void_p(scratch.ctypes.data))
        bad = int(np.count_nonzero(got != want))
        assert bad == 0, f"case {i}: {bad} of {want.size} differ, {case.graph.nodes[0].attrs}"
        checked += 1
    assert checked == PER_KIND


def test_every_accumulation_mode_is_swept(compiled: tuple[list[Case], ctypes.CDLL]) -> None:
    cases, _ = compiled
    modes = set()
    for case in cases:
        if case.kind.endswith("int8"):
            continue
        node = case.graph.nodes[0]
        if node.op == "FullyConnected":
            p: Any = prepare_fully_connected_s16(node, case.graph)
        else:
            p = prepare_conv_s16(node, case.graph, allow_narrow=node.op == "Conv2D")
        modes.add(epilogue(p.requant, p.w).mode)
    assert modes == {0, 1, 2}


def test_multiply_by_quantized_multiplier_64_matches_integer_formula() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-(2**46), 2**46, 2000)
    mult = rng.integers(2**30, 2**31, 2000)
    shift = rng.integers(-31, 8, 2000)
    got = multiply_by_quantized_multiplier_64(x, mult, shift)
    for xi, m, s, g in zip(x.tolist(), mult.tolist(), shift.tolist(), got.tolist(), strict=True):
        red = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
        total = 15 - s
        want = (xi * red + (1 << (total - 1))) >> total  # Python ints: exact, floor shift
        want = ((want + 2**31) % 2**32) - 2**31
        assert g == want


def test_pair_order_lines_weights_up_with_sxtb16() -> None:
    w = np.arange(11, dtype=np.int8)[None, :]
    assert pair_order(w).tolist() == [[0, 2, 1, 3, 4, 6, 5, 7, 8, 9, 10]]


def test_int64_sums_are_chosen_only_when_int32_could_overflow() -> None:
    requant = S16Requant(True, np.zeros(2, np.int64), 1 << 30, -8, -32768, 32767)
    # 32768 * 65535 < 2^31 <= 32768 * 65536
    assert epilogue(requant, np.full((2, 65535), 1, np.int64)).mode != WIDE64
    assert epilogue(requant, np.full((2, 65536), 1, np.int64)).mode == WIDE64
