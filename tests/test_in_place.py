"""In-place layers: a depthwise output written over its input when the input dies there.

Planner part: exact offsets and lifetimes of the merged buffers (codegen/memory.py
``in_place_pairs`` / ``plan_arena``). Emulator part: MobileNet-style blocks whose depthwise
layers run in place give the reference runtime's outputs bit for bit, with a smaller arena.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.memory import in_place_pairs, plan_arena
from edgenn.backends.ref import compile_ref
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.memory import Buffer


def _wq(rng: np.random.Generator, c: int) -> QuantParams:
    return QuantParams(rng.uniform(0.002, 0.02, c).astype(np.float32), np.zeros(c, np.int64), 0)


def dw_node(rng: np.random.Generator, name: str, x: str, y: str, c: int, k: tuple[int, int],
            strides: tuple[int, int], pads: tuple[int, int, int, int], act: Activation,
            mult: int = 1) -> tuple[Node, list[Tensor]]:
    """A depthwise Conv2D node (weights [C*mult, KH, KW, 1]) with its constant tensors."""
    w = rng.integers(-127, 128, size=(c * mult, *k, 1)).astype(np.int8)
    wt = Tensor(f"{name}_w", w.shape, DType.INT8, _wq(rng, c * mult), w)
    bt = Tensor.const(f"{name}_b", rng.integers(-20000, 20000, size=c * mult).astype(np.int32))
    node = Node(name, "Conv2D", (x, wt.name, bt.name), (y,),
                {"strides": strides, "pads": pads, "activation": act, "groups": c})
    return node, [wt, bt]


def mobilenet_block(rng: np.random.Generator, hw: int = 12, c: int = 11) -> Graph:
    """conv 3x3 (3 -> c, ReLU6) -> depthwise 3x3 stride 2 (ReLU6) -> pointwise 1x1 (c -> 16)."""
    def q(scale: float, zp: int) -> QuantParams:
        return QuantParams.per_tensor(float(np.float32(scale)), zp)

    x = Tensor("x", (1, hw, hw, 3), DType.INT8, q(0.02, -3))
    w1 = rng.integers(-127, 128, size=(c, 3, 3, 3)).astype(np.int8)
    w1t = Tensor("w1", w1.shape, DType.INT8, _wq(rng, c), w1)
    b1 = Tensor.const("b1", rng.integers(-2000, 2000, size=c).astype(np.int32))
    conv = Node("conv", "Conv2D", ("x", "w1", "b1"), ("a",),
                {"strides": (1, 1), "pads": (1, 1, 1, 1), "activation": Activation.RELU6})
    a = Tensor("a", (1, hw, hw, c), DType.INT8, q(6 / 255, -128))
    dw, dconsts = dw_node(rng, "dw", "a", "b", c, (3, 3), (2, 2), (0, 0, 1, 1),
                          Activation.RELU6)
    oh = -(-hw // 2)
    b = Tensor("b", (1, oh, oh, c), DType.INT8, q(6 / 255, -128))
    w3 = rng.integers(-127, 128, size=(16, 1, 1, c)).astype(np.int8)
    w3t = Tensor("w3", w3.shape, DType.INT8, _wq(rng, 16), w3)
    b3 = Tensor.const("b3", rng.integers(-2000, 2000, size=16).astype(np.int32))
    pw = Node("pw", "Conv2D", ("b", "w3", "b3"), ("y",),
              {"strides": (1, 1), "pads": (0, 0, 0, 0), "activation": Activation.NONE})
    y = Tensor("y", (1, oh, oh, 16), DType.INT8, q(0.1, 4))
    tensors = [x, w1t, b1, a, *dconsts, b, w3t, b3, y]
    return Graph("mnblock", {t.name: t for t in tensors}, (conv, dw, pw), ("x",), ("y",))


def test_in_place_pairs_merge_only_where_the_input_dies() -> None:
    g = mobilenet_block(np.random.default_rng(0))
    names = [n.name for n in g.nodes]
    dw = names.index("dw")
    bufs = [Buffer(g.inputs[0], 432, 0, 0)]
    for i, node in enumerate(g.nodes):
        last = max([j for j, n in enumerate(g.nodes) if node.outputs[0] in n.inputs] or [i])
        bufs.append(Buffer(node.outputs[0], 100 * (i + 1), i, last))
    pairs, merged = in_place_pairs(g, bufs, [dw])
    src = g.nodes[dw].inputs[0]
    assert pairs == {g.nodes[dw].outputs[0]: src}
    by_name = {b.name: b for b in merged}
    assert g.nodes[dw].outputs[0] not in by_name
    assert by_name[src] == Buffer(src, max(100 * dw, 100 * (dw + 1)), dw - 1, dw + 1)
    # a layer whose input lives on after it does not take part
    last = len(g.nodes) - 1
    longer = [Buffer(b.name, b.size, b.first_use, last) if b.name == src else b for b in bufs]
    assert in_place_pairs(g, longer, [dw])[0] == {}


def test_plan_arena_gives_the_output_its_input_offset() -> None:
    g = mobilenet_block(np.random.default_rng(1))
    dw = [n.name for n in g.nodes].index("dw")
    plain = plan_arena(g, [0] * len(g.nodes))
    shared = plan_arena(g, [0] * len(g.nodes), in_place=[dw])
    out, src = g.nodes[dw].outputs[0], g.nodes[dw].inputs[0]
    assert shared.peak_bytes <= plain.peak_bytes
    if shared.peak_bytes < plain.peak_bytes:  # kept only when it pays
        assert shared.offsets[out] == shared.offsets[src]
        assert shared.aliases[out] == src
    else:
        assert out not in shared.aliases and shared.offsets == plain.offsets


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
@pytest.mark.parametrize("hw,c", [(12, 11), (10, 8), (8, 5)])
def test_in_place_depthwise_in_the_emulator_matches_reference(hw: int, c: int) -> None:
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm

    rng = np.random.default_rng(hw * c)
    g = mobilenet_block(rng, hw, c)
    exe = compile_cortexm(g, "cortex-m4")
    dw = [n.name for n in g.nodes].index("dw")
    assert exe.project.calls[dw].in_place
    x = rng.integers(-128, 128, size=(3, hw, hw, 3)).astype(np.int8)
    x[2] = 127
    np.testing.assert_array_equal(np.asarray(exe.run(x)[0]), compile_ref(g).run(x)[0])


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_in_place_lowers_a_real_arena_and_stays_exact() -> None:
    """The dwsep fixture (depthwise between two convolutions): the in-place plan is smaller
    and the firmware built on it is exact."""
    pytest.importorskip("unicorn")
    from pathlib import Path

    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.frontends.tflite import load_tflite

    path = Path(__file__).resolve().parent / "fixtures" / "tflite" / "dwsep_int8.tflite"
    g = load_tflite(path.read_bytes(), path.name)
    exe = compile_cortexm(g, "cortex-m4")
    scratch = [c.scratch_bytes for c in exe.project.calls]
    assert exe.project.plan.peak_bytes < plan_arena(g, scratch).peak_bytes
    assert any(a in exe.project.plan.aliases for n in g.nodes for a in n.outputs
               if n.op == "Conv2D")
    name = g.inputs[0]
    x = np.random.default_rng(2).integers(-128, 128, size=(3, *g.external_shape(name)[1:]),
                                          dtype=np.int8)
    for a, b in zip(exe.run(x), compile_ref(g).run(x), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
