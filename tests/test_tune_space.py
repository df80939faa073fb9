"""The search space: enumeration, decoding, optuna's define-by-run view, and the workload key."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from tune_standin import KERNELS, FakeConfig, fake_space

from edgenn.ir import Graph, Node, Tensor
from edgenn.ir.dtypes import DType
from edgenn.tune.space import LayerSpace, ScheduleChoice, kernel_label, point_key
from edgenn.tune.workload import workload_key


def test_counts_on_one_big_one_little() -> None:
    space = fake_space()
    # default + big alone + LITTLE alone + both with shares 5%..95% (19), per kernel
    assert len(space) == len(KERNELS) * (1 + 1 + 1 + 19)
    assert len({point_key(p) for p in space.points()}) == len(space)


def test_counts_with_four_plus_four_and_a_thread_cap() -> None:
    space = LayerSpace(KERNELS[:1], (4, 4), max_threads=4)
    pairs = sum(1 for a in range(1, 5) for b in range(1, 5) if a + b <= 4)
    assert len(space) == 1 + 4 + 4 + pairs * 19
    assert all(s.threads <= 4 for s in space.schedules())


def test_three_clusters_shares_are_compositions() -> None:
    space = LayerSpace(KERNELS[:1], (1, 1, 1), share_step=0.25)
    triples = [s for s in space.schedules() if len(s.work) == 3]
    assert len(triples) == math.comb(3, 2)  # 4 steps into 3 positive parts
    for s in triples:
        assert sum(share for _, _, share in s.work) == pytest.approx(1.0)


def test_grid_order_starts_with_the_baseline() -> None:
    space = fake_space()
    assert space.points()[0] == space.default_point
    config, schedule = space.decode(space.default_point)
    assert config == KERNELS[0] and schedule.is_default and schedule.threads == 1


@pytest.mark.parametrize("mode", ["all", "kernel", "schedule"])
def test_decode_round_trip(mode: str) -> None:
    space = fake_space(mode)
    for point in space.points():
        config, schedule = space.decode(point)
        assert space.point(kernel_label(config), schedule) == point
        assert space.contains(point)


def test_modes_restrict_the_space() -> None:
    assert len(fake_space("kernel")) == len(KERNELS)  # default schedule only
    assert len(fake_space("schedule")) == 22  # default kernel only
    assert all(space.decode(p)[1].is_default for space in [fake_space("kernel")]
               for p in space.points())


def test_contains_rejects_foreign_points() -> None:
    space = fake_space(max_threads=1)
    both = {"algorithm": "im2col", "variant[im2col]": "im2col/8x12", "clusters": "0+1",
            "threads[0]": 1, "threads[1]": 1, "share[0+1]": 10}
    assert not space.contains(both)  # two threads > max_threads
    assert not space.contains({"algorithm": "gemm", "clusters": "default"})
    assert not space.contains({**space.default_point, "threads[default]": 2})


def test_suggest_through_optuna_stays_in_the_space() -> None:
    space = LayerSpace(KERNELS, (2, 2), max_threads=3)
    keys = {point_key(p) for p in space.points()}
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    for _ in range(300):
        trial = study.ask()
        point = space.suggest(trial)
        assert point_key(point) in keys, point
        assert trial.params == point  # the point is exactly the trial's parameters
        study.tell(trial, 1.0)
    assert space.distributions(space.points()[-1])["clusters"].choices[0] == "default"


def test_share_step_must_divide_one() -> None:
    with pytest.raises(ValueError, match="share step"):
        fake_space(share_step=0.3)
    assert len(fake_space(share_step=0.1)) == len(KERNELS) * (3 + 9)


class _Labelled:
    def __init__(self, label: str, algorithm: str) -> None:
        self.label, self.algorithm = label, algorithm


def test_equal_configs_merge_but_clashing_labels_are_refused() -> None:
    space = LayerSpace([FakeConfig("im2col", "8x12"), FakeConfig("im2col", "8x12")], (1,))
    assert list(space.kernels) == ["im2col/8x12"]
    with pytest.raises(ValueError, match="share the label"):
        LayerSpace([_Labelled("k", "direct"), _Labelled("k", "im2col")], (1,))


def test_kernel_labels() -> None:
    from edgenn.backends.host.kernels import HostKernelConfig

    assert kernel_label(HostKernelConfig("im2col", "8x12")) == "im2col/8x12"
    assert kernel_label(HostKernelConfig("im2col", "8x12", split="rows")) == "im2col/8x12/rows"
    assert ScheduleChoice(((0, 1, 0.55), (1, 1, 0.45))).label == "c0:1t@55%+c1:1t@45%"


# -- workload key ------------------------------------------------------------------------------
def _conv_graph(seed: int, stride: int = 1, cout: int = 8) -> tuple[Node, Graph]:
    rng = np.random.default_rng(seed)
    f32 = DType.FLOAT32
    out_hw = 8 // stride
    tensors = {
        "x": Tensor("x", (1, 8, 8, 4), f32),
        "w": Tensor.const("w", rng.normal(size=(cout, 3, 3, 4)).astype(np.float32)),
        "b": Tensor.const("b", rng.normal(size=(cout,)).astype(np.float32)),
        "y": Tensor("y", (1, out_hw, out_hw, cout), f32),
    }
    node = Node("conv", "Conv2D", ("x", "w", "b"), ("y",),
                {"strides": (stride, stride), "pads": (1, 1, 1, 1), "dilations": (1, 1),
                 "groups": 1})
    return node, Graph("g", tensors, (node,), ("x",), ("y",))


def test_workload_key_ignores_weights_and_names() -> None:
    a, ga = _conv_graph(seed=0)
    b, gb = _conv_graph(seed=1)
    assert workload_key(a, ga) == workload_key(b.with_(name="other"), gb)
    key = workload_key(a, ga)
    assert key.startswith("Conv2D(float32[1,8,8,4],float32[8,3,3,4],float32[8])")
    assert "strides=1x1" in key


def test_workload_key_sees_shapes_and_attributes() -> None:
    base, g = _conv_graph(0)
    strided, gs = _conv_graph(0, stride=2)
    wider, gw = _conv_graph(0, cout=16)
    keys = {workload_key(base, g), workload_key(strided, gs), workload_key(wider, gw)}
    assert len(keys) == 3
    from edgenn.ir import Activation

    relu = base.with_attrs(activation=Activation.RELU)
    assert workload_key(relu, g) != workload_key(base, g)
    assert "activation=relu" in workload_key(relu, g)
