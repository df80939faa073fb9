"""Runtime layer skipping on Cortex-M: one firmware, every configuration switched by
NAME_set_skip_mask, bit-exact with the reference runtime on apply_skip(graph, config)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.api import load_model
from edgenn.backends.cortexm.build import find_compiler
from edgenn.backends.ref import compile_ref
from edgenn.datasets import dataset_split
from edgenn.errors import EdgennError, ToolchainError
from edgenn.evaluate import images_to_input
from edgenn.ir import Activation, DType, Graph, Node, QuantParams, Tensor
from edgenn.passes.skip import all_configs, apply_skip, config_buffers, find_blocks

try:
    find_compiler()
except ToolchainError:
    pytest.skip("arm-none-eabi-gcc is not installed", allow_module_level=True)
pytest.importorskip("unicorn")

from edgenn.backends.cortexm.executable import compile_cortexm  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "tflite" / "resnet_int8.tflite"
N_DIGITS = 20
SWITCH_CYCLES = 6  # NAME_set_skip_mask on the cortex-m4 cycle model, as docs/skipping.md states


def _digits(graph: Graph, n: int = N_DIGITS) -> np.ndarray:
    """The first ``n`` MNIST test digits as the model's int8 input."""
    test, _ = dataset_split("mnist", "test")
    x = images_to_input(graph, test[:n])
    return x.reshape(n, *graph.external_shape(graph.inputs[0])[1:])


def _ref(graph: Graph, config: frozenset[str], x: np.ndarray) -> np.ndarray:
    return compile_ref(apply_skip(graph, config)).run(x)[0]


@pytest.fixture(scope="module")
def resnet() -> Graph:
    return load_model(FIXTURE)


@pytest.fixture(scope="module")
def resnet_m4(resnet: Graph, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_cortexm(resnet, "cortex-m4", out_dir=tmp_path_factory.mktemp("resnet_m4"),
                           skippable=True)


# ------------------------------------------------------------------ the TF fixture (requantize)
def test_resnet_fixture_has_two_requantize_blocks(resnet_m4) -> None:  # type: ignore[no-untyped-def]
    m = resnet_m4.manifest
    assert [(b["name"], b["bit"], b["layers"]) for b in m["blocks"]] == [
        ("block1", 0, [1, 2, 3]), ("block2", 1, [4, 5, 6])]
    assert all(b["skipped_as"] != "alias" for b in m["blocks"])
    peaks = m["peak_bytes_per_config"]
    assert set(peaks) == {"full", "block1", "block2", "block1,block2"}
    assert m["arena_bytes"] >= max(peaks.values())
    assert peaks["block1,block2"] < peaks["full"]
    model_c = (resnet_m4.out_dir / "model.c").read_text()
    assert model_c.count("EDGENN_MODEL_SKIP_MASK();") == 1  # the mask is read once per invoke


@pytest.mark.parametrize("config", all_configs(find_blocks(load_model(FIXTURE))),
                         ids=lambda c: ",".join(sorted(c)) or "full")
def test_resnet_every_config_bitexact(resnet: Graph, resnet_m4, config) -> None:  # type: ignore[no-untyped-def]
    x = _digits(resnet)
    got = resnet_m4.run(x, skip=config)[0]
    np.testing.assert_array_equal(got, _ref(resnet, config, x))


def test_switching_back_and_forth_in_one_machine(resnet: Graph, resnet_m4) -> None:  # type: ignore[no-untyped-def]
    x = _digits(resnet, 4)
    configs = all_configs(find_blocks(resnet))
    want = {c: _ref(resnet, c, x) for c in configs}
    machine = resnet_m4.machine
    sequence = [configs[k] for k in (3, 0, 2, 0, 1, 3, 1, 2, 0)]
    for config in sequence:
        np.testing.assert_array_equal(resnet_m4.run(x, skip=config)[0], want[config])
    assert resnet_m4.machine is machine  # one loaded machine, never re-initialised
    assert machine.call("model_get_skip_mask").value == resnet_m4.skip_mask(sequence[-1])
    # the firmware keeps a configuration until told otherwise: invoke without a new mask
    machine.call("model_set_skip_mask", 0b10)
    out = machine.invoke([x[0].tobytes()]).outputs[0]
    np.testing.assert_array_equal(np.frombuffer(out, np.int8), want[frozenset({"block2"})][0])


def test_switch_cost_and_per_config_cycles(resnet: Graph, resnet_m4) -> None:  # type: ignore[no-untyped-def]
    x = _digits(resnet, 1)
    call = resnet_m4.machine.call("model_set_skip_mask", 3)
    # docs/skipping.md and README state 6 cycles: a literal load, a store, the return
    assert call.cycles == SWITCH_CYCLES and call.instructions == 3
    benches = {c: resnet_m4.emulate(x, skip=c) for c in all_configs(find_blocks(resnet))}
    full = benches[frozenset()]
    for config, b in benches.items():
        assert b.switch_cycles == SWITCH_CYCLES
        assert b.skip == sorted(config)
        assert b.total_cycles is not None and full.total_cycles is not None
        skipped_layers = {i for blk in resnet_m4.manifest["blocks"] if blk["name"] in config
                          for i in blk["layers"][:-1]}
        for layer in b.layers:  # a skipped layer costs only its mark call
            if layer.index in skipped_layers:
                assert layer.cycles is not None and layer.cycles < 20
    one = benches[frozenset({"block2"})].total_cycles
    assert one is not None and full.total_cycles is not None
    assert one < 0.7 * full.total_cycles  # block 2 is a third of the MACs


def test_unknown_block_is_one_line(resnet_m4) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EdgennError, match="block9.*block1, block2"):
        resnet_m4.run(np.zeros((1, 28, 28, 1), np.int8), skip={"block9"})


def test_union_lifetimes_agree_with_plan_for_configs(resnet_m4, resnet: Graph) -> None:  # type: ignore[no-untyped-def]
    from edgenn.backends.cortexm.codegen.skip import _config_buffers

    layout = resnet_m4.project.skip
    scratch = [c.scratch_bytes for c in resnet_m4.project.calls]
    for config in layout.configs:
        mine = {b.name: (b.first_use, b.last_use) for b in
                _config_buffers(resnet, layout, layout.config_mask(config), scratch)
                if not b.name.startswith("__scratch_")}
        theirs, _, _ = config_buffers(resnet, config)
        assert mine == {b.name: (b.first_use, b.last_use) for b in theirs}


def test_firmware_without_skipping_is_unchanged(resnet: Graph, tmp_path: Path) -> None:
    """Skip support is opt-in: the default build of a model with blocks is the plain one."""
    exe = compile_cortexm(resnet, "cortex-m4", out_dir=tmp_path)
    assert "blocks" not in exe.manifest
    assert "skip_mask" not in (tmp_path / "model.c").read_text()
    with pytest.raises(EdgennError, match="without skip support.*--skippable"):
        exe.run(np.zeros((1, 28, 28, 1), np.int8), skip="block1")


@pytest.mark.parametrize(("core", "skip"), [("cortex-m0plus", "block2"), ("cortex-m7", "block1")])
def test_other_cores(resnet: Graph, core: str, skip: str, tmp_path: Path) -> None:
    exe = compile_cortexm(resnet, core, out_dir=tmp_path, skippable=True)
    x = _digits(resnet)
    np.testing.assert_array_equal(exe.run(x, skip=skip)[0], _ref(resnet, frozenset({skip}), x))
    b = exe.emulate(x, skip="block1,block2")
    assert b.switch_cycles is None and b.switch_instructions is not None
    assert b.switch_instructions <= 4


# ------------------------------------------------------------ synthetic alias blocks (equal params)
def _conv(tensors: dict[str, Tensor], rng: np.random.Generator, name: str, x: str, out: str,
          cout: int, k: int, q_out: QuantParams, act: Activation) -> Node:
    t = tensors[x]
    assert t.quant is not None
    cin = t.shape[-1]
    w = rng.integers(-127, 128, (cout, k, k, cin)).astype(np.int8)
    ws = rng.uniform(0.002, 0.01, cout).astype(np.float32)
    tensors[f"{name}_w"] = Tensor(f"{name}_w", w.shape, DType.INT8,
                                  QuantParams(ws, np.zeros(cout, np.int64), 0), w)
    b = rng.integers(-500, 500, cout).astype(np.int32)
    tensors[f"{name}_b"] = Tensor(f"{name}_b", b.shape, DType.INT32,
                                  QuantParams(ws * t.quant.s, np.zeros(cout, np.int64), 0), b)
    tensors[out] = Tensor(out, (*t.shape[:-1], cout), DType.INT8, q_out)
    p = k // 2
    return Node(name, "Conv2D", (x, f"{name}_w", f"{name}_b"), (out,), {
        "strides": (1, 1), "dilations": (1, 1), "pads": (p, p, p, p), "groups": 1,
        "activation": act})


def alias_graph(graph_output_is_block: bool = False, seed: int = 0) -> Graph:
    """stem conv -> 2 residual blocks whose Add keeps x's parameters (skipping = alias) ->
    Reshape -> FullyConnected; or, with ``graph_output_is_block``, block 2's output is the
    graph output (its skip must copy, as an alias would move the output)."""
    rng = np.random.default_rng(seed)
    q = QuantParams.per_tensor
    tensors = {"x": Tensor("x", (1, 6, 6, 3), DType.INT8, q(0.02, -5))}
    qs = q(0.05, -20)  # x of every block and every block output
    nodes = [_conv(tensors, rng, "stem", "x", "s", 8, 3, qs, Activation.NONE)]
    cur = "s"
    for i in (1, 2):
        nodes.append(_conv(tensors, rng, f"a{i}", cur, f"a{i}", 8, 3, q(0.04, -128),
                           Activation.RELU))
        nodes.append(_conv(tensors, rng, f"b{i}", f"a{i}", f"b{i}", 8, 1, q(0.03, 3),
                           Activation.NONE))
        tensors[f"o{i}"] = Tensor(f"o{i}", (1, 6, 6, 8), DType.INT8, qs)
        nodes.append(Node(f"add{i}", "Add", (cur, f"b{i}"), (f"o{i}",),
                          {"activation": Activation.NONE}))
        cur = f"o{i}"
    if graph_output_is_block:
        return Graph("alias_out", tensors, tuple(nodes), ("x",), (cur,)).validate()
    tensors["flat"] = Tensor("flat", (1, 288), DType.INT8, qs)
    nodes.append(Node("flatten", "Reshape", (cur,), ("flat",), {"shape": (1, 288)}))
    w = rng.integers(-127, 128, (10, 288)).astype(np.int8)
    ws = np.full(10, 0.004, np.float32)
    tensors["fc_w"] = Tensor("fc_w", w.shape, DType.INT8,
                             QuantParams(ws, np.zeros(10, np.int64), 0), w)
    b = rng.integers(-500, 500, 10).astype(np.int32)
    tensors["fc_b"] = Tensor("fc_b", b.shape, DType.INT32,
                             QuantParams(ws * qs.s, np.zeros(10, np.int64), 0), b)
    tensors["y"] = Tensor("y", (1, 10), DType.INT8, q(0.2, 0))
    nodes.append(Node("fc", "FullyConnected", ("flat", "fc_w", "fc_b"), ("y",),
                      {"activation": Activation.NONE}))
    return Graph("alias", tensors, tuple(nodes), ("x",), ("y",)).validate()


def _random_x(graph: Graph, n: int) -> np.ndarray:
    shape = graph.tensor(graph.inputs[0]).shape[1:]
    return np.random.default_rng(7).integers(-128, 128, (n, *shape)).astype(np.int8)


@pytest.mark.parametrize("graph_output_is_block", [False, True])
def test_alias_blocks_bitexact(graph_output_is_block: bool, tmp_path: Path) -> None:
    g = alias_graph(graph_output_is_block)
    blocks = find_blocks(g)
    assert [b.name for b in blocks] == ["block1", "block2"]
    for b in blocks:
        assert apply_skip(g, {b.name}).producer(b.output).op == "Reshape"  # type: ignore[union-attr]
    exe = compile_cortexm(g, "cortex-m4", out_dir=tmp_path, skip_copy=False, skippable=True)
    kinds = [b["skipped_as"] for b in exe.manifest["blocks"]]
    assert kinds == (["alias", "reshape"] if graph_output_is_block else ["alias", "alias"])
    model_c = (tmp_path / "model.c").read_text()
    assert "skip_block1_out = (mask & 0x1u)" in model_c  # skip-aware buffer indexing
    x = _random_x(g, 8)
    for config in [*all_configs(blocks), frozenset()]:
        np.testing.assert_array_equal(exe.run(x, skip=config)[0], _ref(g, config, x))
    # an alias skip runs no arithmetic at all: only the mark calls of the skipped layers
    both = exe.bench(x, skip="block1,block2")
    assert all(layer.cycles is not None and layer.cycles < 20
               for layer in both.layers if 1 <= layer.index <= 3)


def test_alias_plan_keeps_x_alive(tmp_path: Path) -> None:
    """When block 1 is skipped, the FC's input lives in x's bytes until the Reshape/FC read it:
    the union plan must not reuse x's bytes for anything alive in between."""
    g = alias_graph()
    exe = compile_cortexm(g, "cortex-m4", out_dir=tmp_path, skip_copy=False, skippable=True)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    layout = exe.project.skip
    by_name = {b.name: b for b in layout.plan.buffers}
    assert by_name["s"].last_use == len(g.nodes) - 1  # read by the FC when both are skipped
    assert manifest["arena_bytes"] == layout.plan.peak_bytes


# ------------------------------------------------------------------------- fused chains too
def test_fused_chain_inside_blocks(resnet: Graph, tmp_path: Path) -> None:
    from edgenn.fusion import fuse_for_target

    # a build with skip support fuses with residuals=False (edgenn.api): a chain that took
    # its block's Add would leave no Add to find the block by
    assert not find_blocks(fuse_for_target(resnet, "cortex-m4", "all").graph)
    fused = fuse_for_target(resnet, "cortex-m4", "all", residuals=False).graph
    if not any(n.op == "FusedConvChain" for n in fused.nodes):
        pytest.skip("the planner fused nothing here")
    blocks = find_blocks(fused)
    assert blocks, "fusing the convs of a block must keep the block skippable"
    exe = compile_cortexm(fused, "cortex-m4", out_dir=tmp_path, skippable=True)
    x = _digits(fused, 8)
    for config in all_configs(blocks):
        np.testing.assert_array_equal(exe.run(x, skip=config)[0], _ref(fused, config, x))


def nested_graph(seed: int = 3) -> Graph:
    """stem -> outer block [conv a -> inner block [conv c -> conv d -> Add(a, d)] -> conv e
    -> Add(s, e)] -> output: the inner block (block1) requantizes, the outer (block2) aliases."""
    rng = np.random.default_rng(seed)
    q = QuantParams.per_tensor
    tensors = {"x": Tensor("x", (1, 5, 5, 4), DType.INT8, q(0.02, 0))}
    qs = q(0.05, -10)
    nodes = [_conv(tensors, rng, "stem", "x", "s", 8, 3, qs, Activation.NONE),
             _conv(tensors, rng, "a", "s", "a", 8, 3, q(0.04, -20), Activation.NONE),
             _conv(tensors, rng, "c", "a", "c", 8, 1, q(0.03, -128), Activation.RELU),
             _conv(tensors, rng, "d", "c", "d", 8, 3, q(0.03, 5), Activation.NONE)]
    tensors["u"] = Tensor("u", (1, 5, 5, 8), DType.INT8, q(0.06, 2))
    nodes.append(Node("add_in", "Add", ("a", "d"), ("u",), {"activation": Activation.NONE}))
    nodes.append(_conv(tensors, rng, "e", "u", "e", 8, 3, q(0.04, 0), Activation.NONE))
    tensors["o"] = Tensor("o", (1, 5, 5, 8), DType.INT8, qs)
    nodes.append(Node("add_out", "Add", ("s", "e"), ("o",), {"activation": Activation.NONE}))
    nodes.append(_conv(tensors, rng, "head", "o", "y", 4, 1, q(0.1, 0), Activation.NONE))
    return Graph("nested", tensors, tuple(nodes), ("x",), ("y",)).validate()


def test_nested_blocks_bitexact(tmp_path: Path) -> None:
    g = nested_graph()
    blocks = find_blocks(g)
    assert [(b.name, b.add) for b in blocks] == [("block1", "add_in"), ("block2", "add_out")]
    exe = compile_cortexm(g, "cortex-m4", out_dir=tmp_path, skip_copy=False, skippable=True)
    assert [b["skipped_as"] for b in exe.manifest["blocks"]] == ["quantize", "alias"]
    x = _random_x(g, 6)
    for config in [*all_configs(blocks), frozenset({"block1"})]:
        np.testing.assert_array_equal(exe.run(x, skip=config)[0], _ref(g, config, x))


def test_copying_skipped_blocks_when_that_shrinks_the_shared_arena(tmp_path: Path) -> None:
    """An alias keeps x alive across later blocks; a copy does not. The generator plans both
    and keeps the smaller arena; the copy firmware is as exact as the alias one."""
    g = alias_graph()
    alias = compile_cortexm(g, "cortex-m4", out_dir=tmp_path / "alias", skip_copy=False,
                            skippable=True)
    copy = compile_cortexm(g, "cortex-m4", out_dir=tmp_path / "copy", skip_copy=True,
                           skippable=True)
    auto = compile_cortexm(g, "cortex-m4", out_dir=tmp_path / "auto", skippable=True)
    sizes = [int(e.manifest["arena_bytes"]) for e in (alias, copy, auto)]
    assert sizes[2] == min(sizes[:2])
    assert all(b["skipped_as"] != "alias" for b in copy.manifest["blocks"])
    x = _random_x(g, 4)
    for config in all_configs(find_blocks(g)):
        np.testing.assert_array_equal(copy.run(x, skip=config)[0], _ref(g, config, x))
