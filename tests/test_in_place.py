"""In-place layers: a depthwise output written over its input when the input dies there.

Planner part: exact offsets and lifetimes of the merged buffers (codegen/memory.py
``in_place_pairs`` / ``plan_arena``). Emulator part: MobileNet-style blocks whose depthwise
layers run in place give the reference runtime's outputs bit for bit, with a smaller arena.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_cortexm_fast_dwconv import mobilenet_block

from edgenn.backends.cortexm.codegen.memory import in_place_pairs, plan_arena
from edgenn.backends.ref import compile_ref
from edgenn.memory import Buffer


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
