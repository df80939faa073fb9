"""The fast int8 Add / Mul kernels (kernels/eltwise_simd.py) against the reference runtime.

Host part: random one-node graphs (same shapes, single values, per-channel and suffix
broadcasts, odd sizes, every activation, equal and unequal scales) are rendered for
cortex-m4 exactly as the code generator renders them (per-layer code included) and built
with the host gcc (plain-C twins of the DSP instructions); every output must equal the
reference runtime's byte for byte. The slower requantization forms (modes 1 and 0) are run
directly with the tables the plug-in builds. Emulator part: graphs compiled for the emulated
Cortex-M4 (the hand-scheduled assembly) must give the reference's outputs.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.emit import render
from edgenn.backends.cortexm.kernels import eltwise_simd
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer
from edgenn.prepared.binary import prepare_binary

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
M4 = get_core("cortex-m4")
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no host gcc")
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def qt(name: str, shape: tuple[int, ...], scale: float, zp: int) -> Tensor:
    return Tensor(name, shape, DType.INT8, QuantParams.per_tensor(float(np.float32(scale)), zp))


def rscale(rng: np.random.Generator, lo: float = 1e-3, hi: float = 0.2) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def rand_i8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def binary_graph(op: str, a: Tensor, b: Tensor, out_scale: float, out_zp: int,
                 act: Activation) -> Graph:
    node = Node("n0", op, (a.name, b.name), ("y",), {"activation": act})
    ((shape, dtype),) = infer(node, [a, b])
    y = qt("y", shape, out_scale, out_zp)
    return Graph("g", {t.name: t for t in (a, b, y)}, (node,),
                 tuple(t.name for t in (a, b) if not t.is_const), ("y",))


def random_case(rng: np.random.Generator, op: str) -> tuple[Graph, list[np.ndarray]]:
    """A one-node Add / Mul in a layout the fast kernel handles."""
    rank = int(rng.integers(2, 5))
    shape = (1, *(int(rng.integers(1, 12)) for _ in range(rank - 1)))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        sb: tuple[int, ...] = shape
    elif kind == 1:
        sb = (1,)  # a single value (made constant below)
    else:  # a suffix of the output shape, broadcast over the leading axes
        sb = shape[int(rng.integers(1, rank)):]
        if kind == 3:
            sb = (1,) * (rank - len(sb)) + sb
    s_a = rscale(rng)
    s_b = s_a if rng.integers(0, 4) == 0 else rscale(rng)  # equal scales are common
    a, b = qt("a", shape, s_a, int(rng.integers(-128, 128))), \
        qt("b", sb, s_b, int(rng.integers(-128, 128)))
    if int(np.prod(sb)) == 1 or rng.integers(0, 5) == 0:  # single values are constants
        b = Tensor.const("b", rand_i8(rng, sb), b.quant)
    if rng.integers(0, 2):
        a, b = b, a
    out_scale = rscale(rng) if op == "Mul" else float(np.float32(max(s_a, s_b) *
                                                                  rng.uniform(0.5, 3.0)))
    g = binary_graph(op, a, b, out_scale, int(rng.integers(-128, 128)),
                     ACTS[int(rng.integers(0, 4))])
    return g, [rand_i8(rng, t.shape) for t in (a, b) if not t.is_const]


def _harness(graphs: list[Graph]) -> str:
    decls: list[str] = []
    bodies: list[str] = []
    for i, g in enumerate(graphs):
        node = g.nodes[0]
        kcall = select_kernel(node, g, M4).prepare(node, g, M4)
        ptrs = {"scratch": "scratch", "out0": "((int8_t *)outs[0])"}
        for k, name in enumerate(node.inputs):
            if not g.tensor(name).is_const:
                ptrs[f"in{k}"] = f"((int8_t *)ins[{k}])"
        d, call = render(kcall, f"c{i}", ptrs)
        decls += d
        bodies.append(f"void case_{i}(void **ins, void **outs, void *scratch);\n"
                      f"void case_{i}(void **ins, void **outs, void *scratch)\n{{\n"
                      f"    (void)ins; (void)outs; (void)scratch;\n    {call}\n}}\n")
    head = '#include <stdint.h>\n#include "edgenn_eltwise_s8_dsp.h"\n'
    return head + "\n".join(decls) + "\n\n" + "\n".join(bodies)


def _build(tmp: Path, src: str) -> ctypes.CDLL:
    (tmp / "h.c").write_text(src)
    so = tmp / "h.so"
    res = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-Wextra",
                          "-Werror", f"-I{C_DIR}", str(tmp / "h.c"),
                          str(C_DIR / "edgenn_eltwise_s8_dsp.c"), "-o", str(so)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    return ctypes.CDLL(str(so))


def _run(lib: ctypes.CDLL, i: int, g: Graph, feeds: list[np.ndarray]) -> np.ndarray:
    node = g.nodes[0]
    it = iter(feeds)
    keep = []
    ins = (ctypes.c_void_p * 2)()
    for k, name in enumerate(node.inputs):
        if not g.tensor(name).is_const:
            arr = np.ascontiguousarray(next(it))
            keep.append(arr)
            ins[k] = arr.ctypes.data
    out = np.zeros(g.tensor("y").shape, np.int8)
    outs = (ctypes.c_void_p * 1)(out.ctypes.data)
    getattr(lib, f"case_{i}")(ins, outs, None)
    return out


@needs_gcc
@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_host_random_layers_match_reference(op: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(7 if op == "Add" else 8)
    cases = [random_case(rng, op) for _ in range(60)]
    for g, _ in cases:
        assert select_kernel(g.nodes[0], g, M4).priority == 30, g.nodes[0]
    lib = _build(tmp_path, _harness([g for g, _ in cases]))
    for i, (g, feeds) in enumerate(cases):
        want = compile_ref(g).run(*feeds)[0]
        got = _run(lib, i, g, feeds)
        bad = int(np.count_nonzero(got != want))
        assert bad == 0, f"case {i}: {bad} of {want.size} differ ({g.nodes[0].inputs})"


@needs_gcc
@pytest.mark.parametrize("max_mode", [1, 0])
def test_host_mul_slower_forms(max_mode: int, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    real = eltwise_simd.mul_plan
    monkeypatch.setattr(eltwise_simd, "mul_plan", lambda layer, mm=2: real(layer, max_mode))
    rng = np.random.default_rng(30 + max_mode)
    cases = [random_case(rng, "Mul") for _ in range(25)]
    lib = _build(tmp_path, _harness([g for g, _ in cases]))
    for i, (g, feeds) in enumerate(cases):
        np.testing.assert_array_equal(_run(lib, i, g, feeds), compile_ref(g).run(*feeds)[0])


def test_unhandled_broadcasts_are_refused() -> None:
    a = qt("a", (1, 4, 5, 6), 0.05, 3)
    for sb in [(1, 4, 1, 6), (1, 1, 5, 1), (4, 1, 1)]:
        g = binary_graph("Add", a, qt("b", sb, 0.04, -2), 0.08, 1, Activation.NONE)
        assert select_kernel(g.nodes[0], g, M4).name == "edgenn_add_s8"
    # a computed (non-constant) single value
    g = binary_graph("Add", a, qt("b", (1,), 0.04, -2), 0.08, 1, Activation.NONE)
    assert select_kernel(g.nodes[0], g, M4).name == "edgenn_add_s8"
    # no DSP: the portable kernel
    g = binary_graph("Add", a, qt("b", a.shape, 0.04, -2), 0.08, 1, Activation.NONE)
    assert select_kernel(g.nodes[0], g, get_core("cortex-m0plus")).name == "edgenn_add_s8"


def _grid_check(g: Graph, mode: int, plan: dict[str, np.ndarray | int],
                lib: ctypes.CDLL) -> None:
    """Run ews_add<mode>_s8 on all 65,536 input pairs against the reference."""
    layer = prepare_binary(g.nodes[0], g)
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    want = compile_ref(g).run(a.reshape(1, 256, 256, 1), b.reshape(1, 256, 256, 1))[0].ravel()
    out = np.zeros(a.size, np.int8)
    ta = np.ascontiguousarray(plan["ta"], np.int32)
    tb = np.ascontiguousarray(plan["tb"], np.int32)
    p = [ctypes.c_void_p(x.ctypes.data) for x in (a, b, out, ta, tb)]
    ci = ctypes.c_int32
    if mode == 1:
        lib.edgenn_add_s8_dsp_smmulr(p[0], p[1], p[2], ci(a.size), ci(a.size), p[3], p[4],
                        ci(int(plan["mult"])), ci(int(plan["rshift"])), ci(int(plan["half"])),
                        ci(int(layer.act_min)), ci(int(layer.act_max)))
    else:
        lib.edgenn_add_s8_dsp(p[0], p[1], p[2], ci(a.size), ci(a.size), p[3], p[4],
                        ci(layer.out_mult), ci(layer.out_shift), ci(layer.out_zp),
                        ci(int(layer.act_min)), ci(int(layer.act_max)))
    np.testing.assert_array_equal(out, want)


@needs_gcc
def test_host_slow_forms_exhaustive(tmp_path: Path) -> None:
    lib = _build(tmp_path, "#include <stdint.h>\n")
    rng = np.random.default_rng(3)
    for i in range(6):
        s_a = rscale(rng)
        s_b = s_a if i % 3 == 0 else rscale(rng)
        a = qt("a", (1, 256, 256, 1), s_a, int(rng.integers(-128, 128)))
        b = qt("b", (1, 256, 256, 1), s_b, int(rng.integers(-128, 128)))
        g = binary_graph("Add", a, b, float(np.float32(max(s_a, s_b) * rng.uniform(0.5, 3))),
                         int(rng.integers(-128, 128)), ACTS[i % 4])
        layer = prepare_binary(g.nodes[0], g)
        for max_mode in (1, 0):
            mode, plan = eltwise_simd.add_plan(layer, max_mode)
            assert mode == max_mode
            _grid_check(g, mode, plan, lib)


def test_fast_form_is_chosen_for_resnet_like_adds() -> None:
    """Mode 2 (ADD + SSAT per element) holds for typical residual Add quantizations."""
    rng = np.random.default_rng(5)
    modes = []
    for _ in range(20):
        s = rscale(rng, 0.01, 0.1)
        a = qt("a", (1, 8, 8, 16), s, int(rng.integers(-128, 0)))
        b = qt("b", (1, 8, 8, 16), rscale(rng, 0.01, 0.1), int(rng.integers(-10, 10)))
        g = binary_graph("Add", a, b, float(np.float32(s * 2)), -128, Activation.NONE)
        modes.append(eltwise_simd.add_plan(prepare_binary(g.nodes[0], g))[0])
    assert modes.count(2) >= 18


@needs_arm
def test_emulator_chain_matches_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    rng = np.random.default_rng(11)
    shape = (1, 5, 7, 13)  # 455 elements: the 8-wide loop plus a tail of 7
    x, y = qt("x", shape, 0.05, -20), qt("y", shape, 0.03, 7)
    bias = Tensor.const("c", rand_i8(rng, (13,)), QuantParams.per_tensor(0.02, 3))
    one = Tensor.const("k", np.array([57], np.int8), QuantParams.per_tensor(0.01, -5))
    ts = [x, y, bias, one, qt("t1", shape, 0.06, -128), qt("t2", shape, 0.06, -100),
          qt("t3", shape, 0.1, 4), qt("t4", shape, 0.1, 0), qt("t5", shape, 0.12, 9)]
    nodes = (
        Node("add1", "Add", ("x", "y"), ("t1",), {"activation": Activation.NONE}),
        Node("add2", "Add", ("t1", "c"), ("t2",), {"activation": Activation.RELU}),
        Node("mul1", "Mul", ("t2", "y"), ("t3",), {"activation": Activation.RELU}),
        Node("add3", "Add", ("t3", "k"), ("t4",), {"activation": Activation.NONE}),
        Node("add4", "Add", ("t4", "x"), ("t5",), {"activation": Activation.RELU6}),
    )
    g = Graph("g", {t.name: t for t in ts}, nodes, ("x", "y"), ("t5",))
    feeds = [rand_i8(rng, (3, *shape[1:])), rand_i8(rng, (3, *shape[1:]))]
    want = compile_ref(g).run(*feeds)[0]
    names = [select_kernel(n, g, M4).prepare(n, g, M4).kernel_name for n in nodes]
    assert names == ["edgenn_add_s8_gen_dsp", "edgenn_add_s8_gen_dsp", "edgenn_mul_s8_gen_dsp",
                     "edgenn_lut_s8_dsp", "edgenn_add_s8_gen_dsp"]
    np.testing.assert_array_equal(compile_model(g, target="cortex-m4").run(*feeds)[0], want)
    # the slower forms on the target too
    real = eltwise_simd.add_plan
    monkeypatch.setattr(eltwise_simd, "add_plan", lambda layer, max_mode=1: real(layer, 1))
    np.testing.assert_array_equal(compile_model(g, target="cortex-m4").run(*feeds)[0], want)
    monkeypatch.setattr(eltwise_simd, "add_plan", lambda layer, max_mode=0: real(layer, 0))
    np.testing.assert_array_equal(compile_model(g, target="cortex-m4").run(*feeds)[0], want)
