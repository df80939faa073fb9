"""The fast int8 AvgPool2D / Mean kernels (kernels/pool_simd.py) against the reference.

Host part: random one-node graphs (any channel count, clipped windows, strides, padding,
activations, requantized outputs, global pools with and without the specialised code, windows
of more than 256 taps) rendered for cortex-m4 exactly as the code generator renders them and
built with the host gcc (plain-C twin of SXTAB16); every output must equal the reference
runtime's. The division identity is checked on its own for every window size up to 300.
Emulator part: the same kernels built for the emulated Cortex-M4.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.emit import render
from edgenn.backends.cortexm.kernels.pool_simd import count_record
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.ir.shapes import infer

C_DIR = Path(__file__).resolve().parents[1] / "edgenn" / "backends" / "cortexm" / "c"
M4 = get_core("cortex-m4")
ACTS = [Activation.NONE, Activation.RELU, Activation.RELU6, Activation.RELU_N1_TO_1]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no host gcc")
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="no arm-none-eabi-gcc")


def qp(scale: float, zp: int) -> QuantParams:
    return QuantParams.per_tensor(float(np.float32(scale)), zp)


def avg_graph(hw: tuple[int, int], c: int, k: tuple[int, int], strides: tuple[int, int],
              pads: tuple[int, int, int, int], act: Activation, zp: int,
              out_q: QuantParams | None = None, include_pad: bool = False,
              name: str = "x") -> Graph:
    x = Tensor(name, (1, *hw, c), DType.INT8, qp(0.05, zp))
    node = Node("pool", "AvgPool2D", (name,), ("y",),
                {"kernel": k, "strides": strides, "pads": pads, "activation": act,
                 "count_include_pad": include_pad})
    ((shape, dtype),) = infer(node, [x])
    y = Tensor("y", shape, dtype, out_q or x.quant)
    return Graph("g", {name: x, "y": y}, (node,), (name,), ("y",))


def mean_graph(hw: tuple[int, int], c: int, zp: int, out_q: QuantParams, keep: bool,
               axes: tuple[int, ...] = (1, 2)) -> Graph:
    x = Tensor("x", (1, *hw, c), DType.INT8, qp(0.05, zp))
    node = Node("mean", "Mean", ("x",), ("y",), {"axes": axes, "keepdims": keep})
    ((shape, dtype),) = infer(node, [x])
    y = Tensor("y", shape, dtype, out_q)
    return Graph("g", {"x": x, "y": y}, (node,), ("x",), ("y",))


def random_case(rng: np.random.Generator) -> Graph:
    kind = int(rng.integers(0, 5))
    if kind == 4:
        hw = (int(rng.integers(1, 17)), int(rng.integers(1, 17)))
        c = int(rng.choice([1, 3, 4, 6, 16, 19, 32, 40]))
        out_q = qp(0.05, int(rng.integers(-128, 128))) if rng.integers(0, 2) else \
            qp(float(rng.uniform(0.005, 0.2)), int(rng.integers(-128, 128)))
        return mean_graph(hw, c, int(rng.integers(-128, 128)), out_q, bool(rng.integers(0, 2)),
                          ((1, 2), (2, 1), (-3, -2))[int(rng.integers(0, 3))])
    c = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 20, 33, 48, 64]))
    act = ACTS[int(rng.integers(0, 4))]
    zp = int(rng.integers(-128, 128))
    out_q = None if rng.integers(0, 3) else qp(float(rng.uniform(0.02, 0.1)),
                                               int(rng.integers(-50, 50)))
    if kind == 0:  # global
        hw = (int(rng.integers(1, 17)), int(rng.integers(1, 17)))
        return avg_graph(hw, c, hw, hw, (0, 0, 0, 0), act, zp, out_q)
    if kind == 1:  # global over more than 256 taps (several passes)
        hw = (int(rng.integers(17, 40)), int(rng.integers(16, 30)))
        return avg_graph(hw, c, hw, hw, (0, 0, 0, 0), act, zp, out_q)
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    pads = tuple(int(rng.integers(0, min(kh, kw))) for _ in range(4))
    h, w = int(rng.integers(kh, 12)), int(rng.integers(kw, 12))
    include = kind == 3 and not any(pads)
    return avg_graph((h, w), c, (kh, kw), (sh, sw), pads, act, zp, out_q,  # type: ignore[arg-type]
                     include)


def _harness(graphs: list[Graph]) -> tuple[str, set[str]]:
    decls: list[str] = []
    bodies: list[str] = []
    sources: set[str] = set()
    for i, g in enumerate(graphs):
        node = g.nodes[0]
        kcall = select_kernel(node, g, M4).prepare(node, g, M4)
        sources |= {s for s in kcall.sources if s.endswith(".c")}
        ptrs = {"scratch": "scratch", "out0": "((int8_t *)out)", "in0": "((int8_t *)in)"}
        d, call = render(kcall, f"c{i}", ptrs)
        decls += d
        bodies.append(f"void case_{i}(void *in, void *out, void *scratch);\n"
                      f"void case_{i}(void *in, void *out, void *scratch)\n{{\n"
                      f"    (void)scratch;\n    {call}\n}}\n")
    head = ('#include <stdint.h>\n#include "edgenn_avgpool_s8_dsp.h"\n'
            '#include "edgenn_unary_s8.h"\n')
    return head + "\n".join(decls) + "\n\n" + "\n".join(bodies), sources


@needs_gcc
def test_host_random_layers_match_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(21)
    graphs = [random_case(rng) for _ in range(150)]
    names = {select_kernel(g.nodes[0], g, M4).prepare(g.nodes[0], g, M4).kernel_name
             for g in graphs}
    assert names == {"edgenn_avgpool_s8_global_dsp", "edgenn_avgpool_s8_dsp", "edgenn_mean_s8_dsp"}
    src, sources = _harness(graphs)
    (tmp_path / "h.c").write_text(src)
    so = tmp_path / "h.so"
    res = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-Wextra",
                          "-Werror", f"-I{C_DIR}", str(tmp_path / "h.c"),
                          *(str(C_DIR / s) for s in sorted(sources)), "-o", str(so)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    lib = ctypes.CDLL(str(so))
    scratch = np.zeros(4096, np.int32)
    for i, g in enumerate(graphs):
        for extreme in (None, -128, 127):
            shape = g.tensor("x").shape
            x = rng.integers(-128, 128, size=shape).astype(np.int8) if extreme is None \
                else np.full(shape, extreme, np.int8)
            want = compile_ref(g).run(x)[0]
            out = np.zeros(want.shape, np.int8)
            getattr(lib, f"case_{i}")(ctypes.c_void_p(x.ctypes.data),
                                      ctypes.c_void_p(out.ctypes.data),
                                      ctypes.c_void_p(scratch.ctypes.data))
            bad = int(np.count_nonzero(out != want))
            assert bad == 0, f"case {i}: {bad} differ, {g.nodes[0].attrs} {shape}"


def test_division_identity_for_every_window_size() -> None:
    assert all(count_record(n) is not None for n in range(1, 301))
    assert all(count_record(n) is not None for n in (625, 1024, 2000))


def test_refusals() -> None:
    g = avg_graph((5, 5), 8, (3, 3), (1, 1), (1, 1, 1, 1), Activation.NONE, 0,
                  include_pad=True)
    assert select_kernel(g.nodes[0], g, M4).name == "edgenn_avgpool_s8"
    g = avg_graph((2, 300), 4, (1, 300), (1, 1), (0, 0, 0, 0), Activation.NONE, 0)
    assert select_kernel(g.nodes[0], g, M4).name == "edgenn_avgpool_s8"  # a row > 256 taps
    g = avg_graph((5, 5), 8, (3, 3), (1, 1), (0, 0, 0, 0), Activation.NONE, 0)
    assert select_kernel(g.nodes[0], g, get_core("cortex-m0plus")).name == "edgenn_avgpool_s8"
    g = mean_graph((4, 5), 8, 0, qp(0.05, 0), True, (1,))
    assert select_kernel(g.nodes[0], g, M4).name == "edgenn_mean_s8"
    g = mean_graph((17, 16), 8, 0, qp(0.05, 0), True)
    assert select_kernel(g.nodes[0], g, M4).name == "edgenn_mean_s8"  # > 256 pixels


@needs_arm
def test_emulator_matches_reference() -> None:
    pytest.importorskip("unicorn")
    from edgenn.api import compile_model

    rng = np.random.default_rng(4)
    graphs = [
        avg_graph((25, 5), 64, (25, 5), (25, 5), (0, 0, 0, 0), Activation.NONE, -128),
        avg_graph((3, 3), 37, (3, 3), (3, 3), (0, 0, 0, 0), Activation.RELU, 5,
                  qp(0.07, 3)),
        avg_graph((9, 7), 21, (3, 3), (2, 2), (1, 1, 1, 1), Activation.RELU6, -3),
        avg_graph((20, 20), 6, (20, 20), (1, 1), (0, 0, 0, 0), Activation.NONE, 10),
        mean_graph((7, 7), 36, -7, qp(0.03, 2), False),
    ]
    for g in graphs:
        x = rng.integers(-128, 128, size=(2, *g.tensor("x").shape[1:])).astype(np.int8)
        x[1, :] = -128  # the most negative sums
        np.testing.assert_array_equal(compile_model(g, target="cortex-m4").run(x)[0],
                                      compile_ref(g).run(x)[0])
