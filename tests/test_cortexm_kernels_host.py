"""The Cortex-M C kernels, compiled with the HOST gcc (ACLE shim), against the ref runtime.

Every case is a one-node int8 graph with random parameters and data; the kernel the registry
picks (portable kernels on cortex-m0plus, which has no DSP) is rendered exactly as the code
generator renders it, all cases go into one shared object (one compile), and each output
must equal the numpy reference runtime's (itself bit-exact with TFLite Micro) byte for byte.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.emit import render
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]
CTYPE = {DType.INT8: "int8_t", DType.FLOAT32: "float"}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no host gcc")


@dataclass
class Case:
    op: str
    graph: Graph
    inputs: list[np.ndarray]  # batch-1 arrays for the graph inputs, internal layout


def qt(name: str, shape: tuple[int, ...], scale: float, zp: int) -> Tensor:
    return Tensor(name, shape, DType.INT8, QuantParams.per_tensor(float(np.float32(scale)), zp))


def one_node(op: str, inputs: list[Tensor], out_quant: QuantParams | None,
             out_dtype: DType | None = None, **attrs: object) -> Graph:
    node = Node("n0", op, tuple(t.name for t in inputs), ("y",), dict(attrs))
    ((shape, dtype),) = infer(node, inputs)
    out = Tensor("y", shape, out_dtype or dtype, out_quant)
    tensors = {t.name: t for t in [*inputs, out]}
    return Graph("g", tensors, (node,), tuple(t.name for t in inputs if not t.is_const), ("y",))


def rand_i8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def rscale(rng: np.random.Generator, lo: float = 1e-3, hi: float = 0.2) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def zp(rng: np.random.Generator) -> int:
    return int(rng.integers(-128, 128))


def pq(rng: np.random.Generator) -> QuantParams:
    return QuantParams.per_tensor(rscale(rng), zp(rng))


# -- case generators ------------------------------------------------------------------------
def conv_case(rng: np.random.Generator, depthwise: bool) -> Case:
    if depthwise:
        ci = int(rng.integers(1, 9))
        co, groups, cig = ci * int(rng.integers(1, 3)), ci, 1
    else:
        groups = int(rng.choice([1, 1, 1, 2, 3]))
        cig = int(rng.integers(1, 6))
        ci, co = cig * groups, groups * int(rng.integers(1, 5))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    strides = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pads = tuple(int(rng.integers(0, 3)) for _ in range(4))
    h = int(rng.integers((kh - 1) * dil[0] + 1, 10))
    w = int(rng.integers((kw - 1) * dil[1] + 1, 10))
    x = qt("x", (1, h, w, ci), rscale(rng), zp(rng))
    per_channel = bool(rng.integers(0, 2))
    wscale = np.array([rscale(rng, 1e-3, 0.05) for _ in range(co)], np.float32)
    wq = QuantParams(wscale, np.zeros(co, np.int64), 0) if per_channel else \
        QuantParams.per_tensor(float(wscale[0]), 0)
    wt = Tensor.const("w", rand_i8(rng, (co, kh, kw, cig)), wq)
    ins = [x, wt]
    if rng.integers(0, 4):
        bias = rng.integers(-20000, 20000, size=co).astype(np.int32)
        ins.append(Tensor.const("b", bias))
    act = ACTS[int(rng.integers(0, 4))]
    g = one_node("Conv2D", ins, pq(rng), strides=strides, dilations=dil, pads=pads,
                 groups=groups, activation=act)
    return Case("DepthwiseConv2D" if depthwise else "Conv2D", g, [rand_i8(rng, x.shape)])


def fc_case(rng: np.random.Generator) -> Case:
    k, co = int(rng.integers(1, 70)), int(rng.integers(1, 20))
    x = qt("x", (1, k), rscale(rng), zp(rng))
    per_channel = bool(rng.integers(0, 2))
    wscale = np.array([rscale(rng, 1e-3, 0.05) for _ in range(co)], np.float32)
    wq = QuantParams(wscale, np.zeros(co, np.int64), 0) if per_channel else \
        QuantParams.per_tensor(float(wscale[0]), 0)
    ins = [x, Tensor.const("w", rand_i8(rng, (co, k)), wq)]
    if rng.integers(0, 4):
        ins.append(Tensor.const("b", rng.integers(-20000, 20000, size=co).astype(np.int32)))
    g = one_node("FullyConnected", ins, pq(rng), activation=ACTS[int(rng.integers(0, 4))])
    return Case("FullyConnected", g, [rand_i8(rng, x.shape)])


def rand_shape(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
    return (1, *(int(rng.integers(1, 6)) for _ in range(rank - 1)))


def binary_case(rng: np.random.Generator, op: str) -> Case:
    rank = int(rng.integers(2, 5))
    shape = rand_shape(rng, rank)
    kind = int(rng.integers(0, 3))
    if kind == 0:
        sb = shape
    else:  # broadcast some axes
        sb = tuple(d if rng.integers(0, 2) else 1 for d in shape)
        if kind == 2:
            sb = sb[int(rng.integers(0, rank)):]  # lower rank operand
    a, b = qt("a", shape, rscale(rng), zp(rng)), qt("b", sb, rscale(rng), zp(rng))
    if rng.integers(0, 2):
        a, b = b, a
    if rng.integers(0, 4) == 0:  # a constant operand
        b = Tensor.const(b.name, rand_i8(rng, b.shape), b.quant)
    g = one_node(op, [a, b], pq(rng), activation=ACTS[int(rng.integers(0, 4))])
    data = [rand_i8(rng, t.shape) for t in (a, b) if not t.is_const]
    return Case(op, g, data)


def pool_case(rng: np.random.Generator, op: str) -> Case:
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pads = tuple(int(rng.integers(0, min(kh, kw))) for _ in range(4))
    h, w, c = int(rng.integers(kh, 9)), int(rng.integers(kw, 9)), int(rng.integers(1, 6))
    q_in = pq(rng)
    x = qt("x", (1, h, w, c), q_in.s, q_in.zp)
    attrs: dict[str, object] = dict(kernel=(kh, kw), strides=(sh, sw), pads=pads,
                                    activation=ACTS[int(rng.integers(0, 4))])
    if op == "AvgPool2D":
        attrs["count_include_pad"] = bool(rng.integers(0, 2))
    out_q = q_in if rng.integers(0, 2) else pq(rng)
    return Case(op, one_node(op, [x], out_q, **attrs), [rand_i8(rng, x.shape)])


def unary_case(rng: np.random.Generator, op: str) -> Case:
    shape = rand_shape(rng, int(rng.integers(2, 5)))
    q_in = pq(rng)
    x = qt("x", shape, q_in.s, q_in.zp)
    attrs: dict[str, object] = {}
    out_q: QuantParams | None = q_in if rng.integers(0, 2) else pq(rng)
    out_dtype = None
    if op == "Clip":
        attrs = dict(min=float(rng.uniform(-3, 0)), max=float(rng.uniform(0.1, 3)))
    elif op == "Sigmoid":
        out_q = QuantParams.per_tensor(1 / 256, -128)
    elif op == "Tanh":
        out_q = QuantParams.per_tensor(1 / 128, 0)
    elif op == "Softmax":
        out_q = QuantParams.per_tensor(1 / 256, -128)
        attrs = dict(beta=float(rng.choice([1.0, 0.5, 2.0])))
        x = qt("x", shape, rscale(rng, 0.01, 0.2), q_in.zp)
    elif op == "Dequantize":
        out_q, out_dtype = None, DType.FLOAT32
    elif op == "Quantize":
        out_q = pq(rng)
    g = one_node(op, [x], out_q, out_dtype, **attrs)
    return Case(op, g, [rand_i8(rng, x.shape)])


def quantize_float_case(rng: np.random.Generator) -> Case:
    shape = rand_shape(rng, 4)
    x = Tensor("x", shape, DType.FLOAT32)
    q = pq(rng)
    vals = rng.normal(0, 3, size=shape).astype(np.float32)
    # exact halves, to check round-half-away
    vals.flat[: vals.size // 3] = (np.round(vals.flat[: vals.size // 3] / q.s * 2) / 2 * q.s)
    return Case("Quantize(float)", one_node("Quantize", [x], q), [vals])


def mean_case(rng: np.random.Generator) -> Case:
    shape = rand_shape(rng, 4)
    axes = sorted({int(a) for a in rng.choice([1, 2, 3], size=int(rng.integers(1, 4)))})
    q_in = pq(rng)
    x = qt("x", shape, q_in.s, q_in.zp)
    out_q = q_in if rng.integers(0, 2) else pq(rng)
    g = one_node("Mean", [x], out_q, axes=axes, keepdims=bool(rng.integers(0, 2)))
    return Case("Mean", g, [rand_i8(rng, shape)])


def move_case(rng: np.random.Generator, op: str) -> Case:
    rank = int(rng.integers(2, 5))
    shape = rand_shape(rng, rank)
    q_in = pq(rng)
    out_q = q_in if rng.integers(0, 2) else pq(rng)
    x = qt("x", shape, q_in.s, q_in.zp)
    if op == "Transpose":
        perm = (0, *(int(p) + 1 for p in rng.permutation(rank - 1)))
        g = one_node(op, [x], out_q, perm=perm)
    elif op == "Pad":
        pads = [(0, 0)] + [(int(rng.integers(0, 3)), int(rng.integers(0, 3)))
                           for _ in range(rank - 1)]
        g = one_node(op, [x], out_q, pads=pads, value=float(rng.choice([0.0, 0.5])))
    elif op == "Reshape":
        g = one_node(op, [x], out_q, shape=(1, int(np.prod(shape))))
    else:  # Concat
        axis = int(rng.integers(1, rank))
        parts = []
        for i in range(int(rng.integers(1, 4))):
            s = list(shape)
            s[axis] = int(rng.integers(1, 4))
            q = q_in if rng.integers(0, 2) else pq(rng)
            t = qt(f"x{i}", tuple(s), q.s, q.zp)
            if rng.integers(0, 5) == 0:
                t = Tensor.const(f"x{i}", rand_i8(rng, t.shape), t.quant)
            parts.append(t)
        g = one_node(op, parts, out_q, axis=axis - rank if rng.integers(0, 2) else axis)
        return Case(op, g, [rand_i8(rng, t.shape) for t in parts if not t.is_const])
    return Case(op, g, [rand_i8(rng, x.shape)])


GENERATORS: dict[str, Callable[[np.random.Generator], Case]] = {
    "Conv2D": lambda r: conv_case(r, False),
    "DepthwiseConv2D": lambda r: conv_case(r, True),
    "FullyConnected": fc_case,
    "Add": lambda r: binary_case(r, "Add"),
    "Mul": lambda r: binary_case(r, "Mul"),
    "MaxPool2D": lambda r: pool_case(r, "MaxPool2D"),
    "AvgPool2D": lambda r: pool_case(r, "AvgPool2D"),
    "Relu": lambda r: unary_case(r, "Relu"),
    "Relu6": lambda r: unary_case(r, "Relu6"),
    "Clip": lambda r: unary_case(r, "Clip"),
    "Sigmoid": lambda r: unary_case(r, "Sigmoid"),
    "Tanh": lambda r: unary_case(r, "Tanh"),
    "Softmax": lambda r: unary_case(r, "Softmax"),
    "Quantize": lambda r: unary_case(r, "Quantize"),
    "Quantize(float)": quantize_float_case,
    "Dequantize": lambda r: unary_case(r, "Dequantize"),
    "Mean": mean_case,
    "Transpose": lambda r: move_case(r, "Transpose"),
    "Pad": lambda r: move_case(r, "Pad"),
    "Concat": lambda r: move_case(r, "Concat"),
    "Reshape": lambda r: move_case(r, "Reshape"),
}
CASES_PER_OP = 40


# -- host harness ---------------------------------------------------------------------------
def harness_source(cases: list[Case], core: str) -> tuple[str, set[str]]:
    """One C function per case: ``void case_i(void **ins, void **outs, void *scratch)``."""
    decls: list[str] = []
    bodies: list[str] = []
    sources: set[str] = set()
    headers: set[str] = set()
    for i, case in enumerate(cases):
        node = case.graph.nodes[0]
        kcall = select_kernel(node, case.graph, get_core(core)).prepare(node, case.graph,
                                                                         get_core(core))
        for s in kcall.sources:
            (sources if s.endswith(".c") else headers).add(s)
            headers.add(s[:-2] + ".h")
        ptrs = {"scratch": "scratch"}
        for k, name in enumerate(node.inputs):
            t = case.graph.tensor(name)
            if not t.is_const:
                ptrs[f"in{k}"] = f"(({CTYPE[t.dtype]} *)ins[{k}])"
        for k, name in enumerate(node.outputs):
            t = case.graph.tensor(name)
            ptrs[f"out{k}"] = f"(({CTYPE[t.dtype]} *)outs[{k}])"
        d, call = render(kcall, f"c{i}", ptrs)
        decls += d
        bodies.append(f"void case_{i}(void **ins, void **outs, void *scratch);\n"
                      f"void case_{i}(void **ins, void **outs, void *scratch)\n{{\n"
                      f"    (void)ins; (void)outs; (void)scratch;\n    {call}\n}}\n")
    head = "#include <stdint.h>\n#include <stddef.h>\n#include <string.h>\n" + "".join(
        f'#include "{h}"\n' for h in sorted(headers))
    return head + "\n".join(decls) + "\n\n" + "\n".join(bodies), sources


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Case], ctypes.CDLL]:
    rng = np.random.default_rng(1234)
    cases = [GENERATORS[op](rng) for op in GENERATORS for _ in range(CASES_PER_OP)]
    src, sources = harness_source(cases, "cortex-m0plus")
    d = tmp_path_factory.mktemp("cortexm_host")
    (d / "harness.c").write_text(src)
    so = d / "harness.so"
    cmd = ["gcc", "-O1", "-shared", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror",
           f"-I{C_DIR}", str(d / "harness.c"), *(str(C_DIR / s) for s in sorted(sources)),
           "-o", str(so), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    return cases, ctypes.CDLL(str(so))


def run_case(lib: ctypes.CDLL, i: int, case: Case) -> np.ndarray:
    g = case.graph
    node = g.nodes[0]
    feeds = iter(case.inputs)
    keep: list[np.ndarray] = []
    ins = (ctypes.c_void_p * max(1, len(node.inputs)))()
    for k, name in enumerate(node.inputs):
        if not g.tensor(name).is_const:
            arr = np.ascontiguousarray(next(feeds))
            keep.append(arr)
            ins[k] = arr.ctypes.data
    y = g.tensor("y")
    out = np.zeros(y.shape, y.dtype.numpy)
    outs = (ctypes.c_void_p * 1)(out.ctypes.data)
    scratch = np.zeros(1 << 16, np.uint8)
    getattr(lib, f"case_{i}")(ins, outs, ctypes.c_void_p(scratch.ctypes.data))
    return out


@pytest.mark.parametrize("op", list(GENERATORS))
def test_kernel_matches_reference(op: str, compiled: tuple[list[Case], ctypes.CDLL]) -> None:
    cases, lib = compiled
    checked = 0
    for i, case in enumerate(cases):
        if case.op != op:
            continue
        want = compile_ref(case.graph).run(*case.inputs)[0]
        got = run_case(lib, i, case)
        node = case.graph.nodes[0]
        assert got.shape == want.shape
        if want.dtype == np.float32:
            same_bits = np.array_equal(got.view(np.uint32), want.view(np.uint32))
            assert same_bits, f"case {i} {node.attrs}"
        else:
            bad = int(np.count_nonzero(got != want))
            assert bad == 0, f"case {i}: {bad} of {want.size} mismatches, attrs {node.attrs}"
        checked += 1
    assert checked == CASES_PER_OP
