"""Host kernels: every algorithm x micro-kernel agrees with the reference runtime.

Default tests: every variant (both instruction sets this machine runs: the best SIMD one
and the portable scalar C) on small shapes chosen to hit every tail (ragged channels, rows
that do not fill a tile, tiny planes, asymmetric padding), each micro-kernel on two of them
and each shape with every algorithm (the rest of that cross product is marked slow), every
distinct layer shape of the five test models at a reduced input size with the default
configuration, random shapes, partition splits. The slow tests run the whole small-shape
cross product, and every variant on every distinct layer shape of the five models at full
ImageNet size.
"""

from __future__ import annotations

import platform

import numpy as np
import onnxruntime as ort
import pytest
from host_layers import LayerCase, assert_close, case, conv_layer, dense_layer, model_cases
from hypothesis import given, settings
from hypothesis import strategies as st

from edgenn.backends.host.kernels import (
    HostKernelConfig,
    candidate_configs,
    default_config,
    generate,
    host_isa,
    prepare,
    supports,
)
from edgenn.backends.host.kernels.emulated import emulation_available, run_emulated
from edgenn.backends.host.kernels.isa import ISAS
from edgenn.backends.host.kernels.op import build
from edgenn.backends.host.kernels.tiles import tile_for
from edgenn.backends.ref import compile_ref
from edgenn.errors import EdgennError, UnsupportedOperatorError
from edgenn.frontends.onnx import load_onnx
from edgenn.ir import Activation
from edgenn.models.imagenet_zoo import alexnet, googlenet, vgg16
from edgenn.models.zoo import mobilenet_v2, resnet18

R, R6, NO = Activation.RELU, Activation.RELU6, Activation.NONE

# (h, w, cin, cout, k, stride, pads, activation)
CONVS = {
    "3x3-ragged": (9, 9, 5, 7, 3, 1, None, R),
    "3x3-s2-rect": (10, 7, 16, 40, 3, 2, None, R6),
    "1x1-ragged": (8, 8, 32, 19, 1, 1, (0, 0, 0, 0), NO),
    "1x1-s2": (9, 9, 24, 33, 1, 2, (0, 0, 0, 0), R),
    "7x7-s2-cin3": (15, 15, 3, 16, 7, 2, None, R),
    "11x11-s4": (19, 19, 3, 8, 11, 4, (2, 2, 2, 2), R),
    "5x5": (7, 7, 12, 20, 5, 1, (2, 2, 2, 2), NO),
    "3x3-asym-pad": (6, 5, 20, 24, 3, 1, (0, 1, 2, 1), R),
    "3x3-tiny-plane": (3, 3, 48, 64, 3, 1, None, R),
}
DEPTHWISE = {  # (h, w, channels, k, stride)
    "dw3x3": (9, 9, 5, 3, 1),
    "dw3x3-s2": (14, 14, 40, 3, 2),
    "dw3x3-ragged": (7, 7, 33, 3, 1),
    "dw5x5-s2": (10, 10, 24, 5, 2),
    "dw-tiny": (3, 3, 16, 3, 1),
}
DENSE = {"fc-ragged": (37, 10, NO), "fc-relu": (200, 53, R)}
#: The portable fallback runs every variant on these (all tails, every algorithm).
SCALAR_SHAPES = {"3x3-ragged", "1x1-ragged", "3x3-s2-rect", "dw3x3-ragged", "fc-ragged"}


def _small_cases() -> dict[str, LayerCase]:
    cases = {}
    for name, (h, w, cin, cout, k, s, pads, act) in CONVS.items():
        cases[name] = case(*conv_layer(h, w, cin, cout, k, s, pads, act=act))
    for name, (h, w, c, k, s) in DEPTHWISE.items():
        cases[name] = case(*conv_layer(h, w, c, c, k, s, depthwise=True, act=R6))
    for name, (k, n, act) in DENSE.items():
        cases[name] = case(*dense_layer(k, n, act))
    return cases


SMALL = _small_cases()


def _variants() -> list[tuple[str, str, HostKernelConfig]]:
    out = []
    for name, c in SMALL.items():
        isas = ["auto", "scalar"] if name in SCALAR_SHAPES and host_isa().simd else ["auto"]
        for isa in isas:
            for cfg in candidate_configs(c.node, c.graph, isa):
                out.append((name, isa, cfg))
    return out


def _id(v: tuple[str, str, HostKernelConfig]) -> str:
    return f"{v[0]}-{v[2].label}-{v[1]}"


def _covering(variants: list[tuple[str, str, HostKernelConfig]]
              ) -> list[tuple[str, str, HostKernelConfig]]:
    """The default run's share of the sweep: every micro-kernel of every algorithm and
    instruction set on its first two shapes (two tails each), and every shape with at least
    one micro-kernel of every algorithm that takes it. Each variant is a C build of its own,
    so the whole cross product (``-m slow``) costs most of this module's time."""
    per_kernel: dict[tuple[str, str, str], int] = {}
    shape_algorithms: set[tuple[str, str, str]] = set()
    keep = []
    for name, isa, cfg in variants:
        kernel = (isa, cfg.algorithm, cfg.microkernel)
        shape = (name, isa, cfg.algorithm)
        if per_kernel.get(kernel, 0) < 2 or shape not in shape_algorithms:
            keep.append((name, isa, cfg))
        per_kernel[kernel] = per_kernel.get(kernel, 0) + 1
        shape_algorithms.add(shape)
    return keep


VARIANTS = _variants()
COVERING = _covering(VARIANTS)


@pytest.mark.parametrize("variant", COVERING, ids=_id)
def test_every_variant_small_shapes(variant: tuple[str, str, HostKernelConfig]) -> None:
    name, _, cfg = variant
    c = SMALL[name]
    op = prepare(c.node, c.graph, cfg)
    assert_close(op.run(c.x), c.ref)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in COVERING], ids=_id)
def test_every_variant_small_shapes_rest_of_the_sweep(
        variant: tuple[str, str, HostKernelConfig]) -> None:
    name, _, cfg = variant
    c = SMALL[name]
    assert_close(prepare(c.node, c.graph, cfg).run(c.x), c.ref)


def test_every_algorithm_and_microkernel_is_covered() -> None:
    from edgenn.backends.host.kernels import KERNELS_FOR

    wanted = {(a, k) for a, ks in KERNELS_FOR.items() for k in ks}
    assert {(cfg.algorithm, cfg.microkernel) for _, _, cfg in COVERING} == wanted
    assert {(n, i, cfg.algorithm) for n, i, cfg in COVERING} == \
        {(n, i, cfg.algorithm) for n, i, cfg in VARIANTS}


# -- model layers -------------------------------------------------------------------------------
MODELS = {"alexnet": alexnet, "vgg16": vgg16, "mobilenet_v2": mobilenet_v2,
          "googlenet": googlenet, "resnet18": resnet18}
REDUCED = {"alexnet": 96, "vgg16": 64, "mobilenet_v2": 64, "googlenet": 64, "resnet18": 64}


@pytest.mark.parametrize("model", MODELS)
def test_model_layers_default_config(model: str) -> None:
    """Every distinct layer shape (at a reduced input size) with the ACL-like default."""
    for c in model_cases(MODELS[model](size=REDUCED[model])):
        cfg = default_config(c.node, c.graph)
        op = prepare(c.node, c.graph, cfg)
        assert_close(op.run(c.x), c.ref)


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_model_layers_every_variant_full_size(model: str) -> None:
    """Every variant on every distinct layer shape at ImageNet size (about half an hour)."""
    failures = []
    for c in model_cases(MODELS[model]()):
        for cfg in candidate_configs(c.node, c.graph):
            y = prepare(c.node, c.graph, cfg).run(c.x)
            try:
                assert_close(y, c.ref)
            except AssertionError:
                failures.append(f"{c.shape} {cfg.label}")
    assert not failures, failures


# -- random shapes, partitions ------------------------------------------------------------------
@st.composite
def conv_shapes(draw: st.DrawFn) -> LayerCase:
    depthwise = draw(st.booleans())
    k = draw(st.sampled_from([1, 2, 3, 5]))
    stride = draw(st.integers(1, 3))
    pads = tuple(draw(st.integers(0, k - 1)) for _ in range(4))
    h = draw(st.integers(max(1, k - pads[0] - pads[2]), 13))
    w = draw(st.integers(max(1, k - pads[1] - pads[3]), 13))
    cin = draw(st.integers(1, 20))
    cout = cin if depthwise else draw(st.integers(1, 40))
    act = draw(st.sampled_from([NO, R, R6]))
    return case(*conv_layer(h, w, cin, cout, k, stride, pads, depthwise, act,  # type: ignore[arg-type]
                            bias=draw(st.booleans())))


@settings(max_examples=25)
@given(c=conv_shapes(), pick=st.integers(0, 10**6))
def test_random_shapes(c: LayerCase, pick: int) -> None:
    configs = candidate_configs(c.node, c.graph)
    cfg = configs[pick % len(configs)]
    assert_close(prepare(c.node, c.graph, cfg).run(c.x), c.ref)


SPLIT_CASES = [("3x3-ragged", "winograd_2x2", "6x16"), ("3x3-ragged", "winograd_4x4", "8x12"),
               ("3x3-s2-rect", "im2col", "8x6"), ("3x3-s2-rect", "indirect", "4x24"),
               ("5x5", "direct", "6x16"), ("1x1-ragged", "gemm", "8x4"),
               ("dw3x3-ragged", "depthwise", "dw4x16"), ("fc-relu", "gemm", "6x16")]


@pytest.mark.parametrize("split", ["rows", "channels"])
@pytest.mark.parametrize("name,algorithm,kernel", SPLIT_CASES)
def test_any_partition_split_gives_the_same_output(name: str, algorithm: str, kernel: str,
                                                    split: str) -> None:
    c = SMALL[name]
    op = prepare(c.node, c.graph, HostKernelConfig(algorithm, kernel, split=split))
    whole = op.run(c.x)
    parts = op.plan.partition_count
    rng = np.random.default_rng(parts)
    for _ in range(3):
        cuts = sorted(rng.integers(0, parts + 1, size=2))
        out = np.full(op.out_shape, np.nan, np.float32)
        for begin, end in zip([0, *cuts], [*cuts, parts], strict=True):
            op.run_partition(c.x, out, int(begin), int(end))
        np.testing.assert_array_equal(out, whole)
    one_by_one = np.full(op.out_shape, np.nan, np.float32)
    for p in range(parts):  # what the emulated LITTLE core does: one partition per call
        op.run_partition(c.x, one_by_one, p, p + 1)
    np.testing.assert_array_equal(one_by_one, whole)


# -- configuration, rules, errors ---------------------------------------------------------------
def test_candidates_and_defaults_for_resnet18() -> None:
    graph = load_onnx(resnet18(size=64).SerializeToString())
    labels = {}
    for node in graph.nodes:
        if supports(node, graph):
            labels[node.name] = (default_config(node, graph).label,
                                 {c.algorithm for c in candidate_configs(node, graph)})
        else:
            assert candidate_configs(node, graph) == []
    winograd = [algos for label, algos in labels.values() if label.startswith("winograd")]
    assert len(winograd) == 13  # every 3x3 stride-1 convolution with >= 16 channels
    assert all({"direct", "im2col", "indirect", "winograd_2x2"} <= a for a in winograd)
    assert ("im2col/6x16", {"direct", "im2col", "indirect"}) in labels.values()  # 7x7 stem
    assert ("gemm/6x16", {"gemm"}) in labels.values()  # the classifier is a GEMV


def test_default_rules_mirror_acl() -> None:
    from edgenn.backends.host.kernels.rules import gemm_kernel

    assert gemm_kernel(1, 4096, 4096) == "6x16"
    assert gemm_kernel(3136, 64, 64) == "6x16"
    assert gemm_kernel(3136, 576, 64) == "8x12"
    assert gemm_kernel(4, 512, 512, batched=True) == "6x16"
    c = SMALL["3x3-tiny-plane"]
    assert default_config(c.node, c.graph).algorithm == "winograd_2x2"
    c = SMALL["3x3-ragged"]  # 5 input channels: ACL keeps GEMM below 16
    assert default_config(c.node, c.graph).label == "im2col/6x16"
    c = SMALL["dw3x3"]
    assert default_config(c.node, c.graph).label == "depthwise/dw4x16"


def test_config_errors_are_one_line() -> None:
    for bad in (dict(algorithm="fft", microkernel="6x16"),
                dict(algorithm="direct", microkernel="8x12"),
                dict(algorithm="gemm", microkernel="6x16", split="diagonal")):
        with pytest.raises(EdgennError) as err:
            HostKernelConfig(**bad)
        assert "\n" not in str(err.value)
    c = SMALL["3x3-s2-rect"]
    with pytest.raises(UnsupportedOperatorError, match="does not apply"):
        prepare(c.node, c.graph, HostKernelConfig("winograd_2x2", "6x16"))
    assert HostKernelConfig.from_dict(HostKernelConfig("gemm", "8x4").as_dict()) == \
        HostKernelConfig("gemm", "8x4")


def test_grouped_and_int8_layers_are_left_to_the_reference() -> None:
    graph, node = conv_layer(6, 6, 8, 8, 3)
    grouped = node.with_attrs(groups=2)
    w = graph.tensor("w")
    g2 = graph.replace(nodes=(grouped,), tensors={**graph.tensors,
                                                   "w": w.with_(data=w.data[..., :4].copy(),
                                                                shape=(8, 3, 3, 4))})
    assert not supports(grouped, g2) and candidate_configs(grouped, g2) == []
    with pytest.raises(UnsupportedOperatorError):
        default_config(grouped, g2)


def test_tiles_fit_the_register_file() -> None:
    avx2 = ISAS["avx2"]
    assert tile_for("6x16", avx2).accumulators == 12
    assert tile_for("8x12", avx2).along_m and tile_for("8x12", avx2).lanes == 8
    assert not tile_for("8x12", ISAS["neon"]).along_m  # ACL's own 8 x 3 q-register tile
    assert tile_for("8x4", avx2).lanes == 4
    for isa in ISAS.values():
        for name in ("8x12", "8x6", "6x16", "4x24", "8x4"):
            t = tile_for(name, isa)
            assert t.mr * t.nr % t.lanes == 0


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 compiler flags")
@pytest.mark.parametrize("cfg", [HostKernelConfig("winograd_4x4", "8x12", "avx512"),
                                 HostKernelConfig("direct", "6x16", "avx512"),
                                 HostKernelConfig("im2col", "4x24", "avx512")], ids=str)
def test_avx512_code_compiles(cfg: HostKernelConfig, tmp_path: object) -> None:
    """AVX-512 code is generated and compiled everywhere; it runs only where the CPU has it."""
    c = SMALL["3x3-asym-pad"]
    gen = generate(c.node, c.graph, cfg)
    build(gen, str(tmp_path))
    if not {"avx512f", "avx512vl"} <= _flags():
        with pytest.raises(UnsupportedOperatorError, match="cannot run avx512"):
            prepare(c.node, c.graph, cfg)


NEON_CASES = {"conv": conv_layer(9, 9, 13, 37, 3), "dw": conv_layer(9, 9, 33, 33, 3,
                                                                depthwise=True, act=R6),
              "pointwise": conv_layer(5, 7, 20, 30, 1, pads=(0, 0, 0, 0)),
              "dense": dense_layer(50, 37, R)}


def _neon_variants() -> list[tuple[str, HostKernelConfig]]:
    return [(name, cfg) for name, (g, node) in NEON_CASES.items()
            for cfg in candidate_configs(node, g, "neon")]


@pytest.mark.skipif(not emulation_available("neon"),
                    reason="needs gcc-aarch64-linux-gnu and qemu-user-static")
@pytest.mark.parametrize("name,cfg", _neon_variants(), ids=lambda v: getattr(v, "label", v))
def test_neon_kernels_under_emulation(name: str, cfg: HostKernelConfig) -> None:
    """The NEON build of every variant, cross-compiled for aarch64 and run in qemu."""
    c = case(*NEON_CASES[name])
    assert_close(run_emulated(generate(c.node, c.graph, cfg), c.x, c.ref.shape), c.ref)


def _flags() -> set[str]:
    from edgenn.backends.host.kernels.isa import _cpu_flags

    return set(_cpu_flags())


def test_run_partition_checks_arguments() -> None:
    c = SMALL["1x1-ragged"]
    op = prepare(c.node, c.graph, HostKernelConfig("gemm", "6x16"))
    out = np.empty(op.out_shape, np.float32)
    with pytest.raises(EdgennError, match="partitions"):
        op.run_partition(c.x, out, 0, op.plan.partition_count + 1)
    with pytest.raises(EdgennError, match="input must be"):
        op.run_partition(c.x.astype(np.float64), out, 0, 1)
    assert op.address != 0 and op.plan.scratch_floats % 16 == 0


# -- the ImageNet model builders against onnxruntime ---------------------------------------------
def _against_ort(model: object, size: int) -> None:
    m = model(size=size)  # type: ignore[operator]
    x = np.random.default_rng(0).random((1, 3, size, size), np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"input": x})[0]
    got = compile_ref(load_onnx(m.SerializeToString())).run(x)[0]
    assert got.shape == want.shape == (1, 1000)
    assert_close(got, want)


@pytest.mark.parametrize("model,size", [(alexnet, 224), (googlenet, 224), (vgg16, 64)],
                         ids=["alexnet", "googlenet", "vgg16-64"])
def test_imagenet_builders_match_onnxruntime(model: object, size: int) -> None:
    _against_ort(model, size)


@pytest.mark.slow
def test_vgg16_full_size_matches_onnxruntime() -> None:
    _against_ort(vgg16, 224)
