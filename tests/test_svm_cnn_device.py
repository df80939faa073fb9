"""The int8 CNN and the SVM head in one Cortex-M firmware, run in the emulator
(svm_cnn_device.py): the device computes the features itself.

Oracles:
- the reference runtime (``compile_ref``) of the same quantized CNN: the device's feature
  vectors must equal its feature tensor bit for bit;
- the host float32 build of the SVM's C (edgenn.svm.native), trained on the reference
  runtime's features of the same images: w, b, iterations and every vote, score and decision
  must be identical (the same float32 arithmetic);
- the reference layer of ``edgenn svm-demo``: the scenario on the device stays within a point.
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest

from edgenn.backends.cortexm.codegen.svm_cnn_project import (
    feature_extractor,
    feature_spec,
    generate_svm_cnn,
)
from edgenn.backends.cortexm.codegen.svm_project import SvmConfig
from edgenn.backends.cortexm.targets import get_core
from edgenn.errors import GraphValidationError, PlanError, ShapeError
from edgenn.svm.errors import BufferFullError, SvmParameterError
from edgenn.svm.native import NativeSvmLayer, available

pytestmark = [
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                       reason="arm-none-eabi-gcc is not installed"),
    pytest.mark.skipif(not available(), reason="no host C compiler"),
]

CLASSES = list(range(10))
CAPACITY = 24


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    """The quantized MNIST CNN, its feature tensor, some int8 images and the reference
    runtime's features of them, and the device built once."""
    from edgenn.backends.cortexm.svm_cnn_device import SvmCnnDevice
    from edgenn.backends.ref import compile_ref
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.svm import penultimate_features
    from edgenn.train.svm.demo import quantized_cnn

    graph = quantized_cnn(calibration_digits=100)
    feature = penultimate_features(graph)
    x, y = mnist_split("train")
    idx = np.random.default_rng(5).permutation(len(y))[:70]
    images = images_to_input(graph, x[idx])
    ref = compile_ref(graph)
    ref.run(images, keep=True)
    ref_features = np.asarray(ref.values[feature]).reshape(len(idx), -1)
    dev = SvmCnnDevice(graph, feature, CAPACITY, CLASSES, C=0.1)
    return {"graph": graph, "feature": feature, "images": images, "labels": y[idx],
            "ref_features": ref_features, "dev": dev}


def test_device_features_equal_the_reference_runtime(setup: dict[str, Any]) -> None:
    got = setup["dev"].extract(setup["images"][:6])
    assert got.features.dtype == np.int8
    np.testing.assert_array_equal(got.features, setup["ref_features"][:6])
    assert (got.cycles > 100_000).all()  # a whole CNN per image, not a copy


def test_on_device_training_matches_the_host_binding(setup: dict[str, Any]) -> None:
    """Two batches learned from images on the device vs the float32 host build trained on
    the reference runtime's features of the same images: bit-identical model and votes."""
    dev, images, labels, feats = (setup[k] for k in ("dev", "images", "labels",
                                                     "ref_features"))
    spec = feature_spec(setup["graph"], setup["feature"])
    host = NativeSvmLayer(spec.n_features, CLASSES, CAPACITY, C=0.1, storage="int8",
                          scale=spec.scale, zero_point=spec.zero_point, precision="float32")
    pos = 0
    for _ in range(2):
        room = CAPACITY - dev.count
        assert room == CAPACITY - host.count
        batch = slice(pos, pos + room)
        pos += room
        cost = dev.learn(images[batch], labels[batch])
        assert len(cost.extract_cycles) == room and (cost.append_cycles > 0).all()
        res = dev.fit_buffer()
        host.append(feats[batch], labels[batch])
        host_res = host.train()
        np.testing.assert_array_equal(res.w, host.w)
        np.testing.assert_array_equal(res.b, host.b)
        np.testing.assert_array_equal(res.iterations, host_res.iterations)
        assert res.carried == host_res.carried
    test = slice(pos, pos + 12)
    got = dev.classify_inputs(images[test])
    want_labels, want_scores, want_decision = host.predict(feats[test])
    np.testing.assert_array_equal(got.labels, want_labels)
    np.testing.assert_array_equal(got.scores, want_scores)
    np.testing.assert_array_equal(got.decision, want_decision)
    assert (got.cycles > 100_000).all()
    ram = dev.ram()
    assert ram.cnn_arena == dev.project.manifest["cnn"]["arena_bytes"]
    assert ram.cnn_arena + ram.svm_static + ram.stack_reserved <= ram.total


def test_bad_input_and_full_buffer_are_one_line_errors(setup: dict[str, Any]) -> None:
    dev, images, labels = setup["dev"], setup["images"], setup["labels"]
    with pytest.raises(ShapeError, match="expected int8 data, got float32"):
        dev.extract(images[:1].astype(np.float32))
    with pytest.raises(ShapeError, match=r"expected shape \[N, 28, 28, 1\], got \[1, 784\]"):
        dev.extract(images[:1].reshape(1, -1))
    with pytest.raises(BufferFullError, match=f"of {CAPACITY} samples"):
        dev.learn(images[:CAPACITY + 1], labels[:CAPACITY + 1])


def test_generator_checks(setup: dict[str, Any], tmp_path: Any) -> None:
    graph, feature = setup["graph"], setup["feature"]
    cnn = feature_extractor(graph, feature)
    assert cnn.outputs == (feature,) and len(cnn.nodes) < len(graph.nodes)
    with pytest.raises(GraphValidationError, match="must be computed by a node"):
        feature_extractor(graph, graph.inputs[0])
    spec = feature_spec(graph, feature)
    core = get_core("cortex-m4")
    wrong = SvmConfig(CAPACITY, spec.n_features + 1, 10, storage="int8")
    with pytest.raises(SvmParameterError, match="takes 65 int8 features, the CNN gives 64"):
        generate_svm_cnn(cnn, wrong, core, tmp_path / "a")
    big = SvmConfig(2000, spec.n_features, 10, storage="int8", scale=spec.scale,
                    zero_point=spec.zero_point)
    with pytest.raises(PlanError, match="CNN arena .* do not fit the 64 KiB"):
        generate_svm_cnn(cnn, big, core, tmp_path / "b", ram_kb=64)


def test_small_scenario_end_to_end() -> None:
    """``edgenn svm-demo``'s scenario with the combined firmware: the device's accuracy on its
    test digits is the host-fed accuracy within a point, with the same votes."""
    from edgenn.train.svm.demo import run_scenario

    report = run_scenario(capacity=30, steps=1, device_test=60)
    assert report.device_test_digits == 60 and report.core == "cortex-m4"
    last = report.steps[-1]
    assert last.device_accuracy is not None and last.host_accuracy_device_digits is not None
    assert report.max_accuracy_gap is not None and report.max_accuracy_gap <= 0.01
    assert report.device_agreement == 1.0
    assert last.extract_cycles is not None and last.extract_cycles > 30 * 100_000
    assert last.train_cycles is not None and last.train_cycles > 0
    assert report.cnn_arena_bytes and report.svm_ram_bytes and report.device_ram_bytes
    assert report.device_ram_bytes > report.cnn_arena_bytes + report.svm_ram_bytes
