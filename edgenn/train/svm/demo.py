"""The on-device learning scenario behind ``edgenn svm-demo``.

A device ships with the int8 MNIST CNN as a frozen feature extractor and an SVM head that was
trained at the factory on a few digits of the *known* classes only (0-4 by default): it never
saw the other classes and cannot predict them. In the field, labelled digits of every class
arrive one by one; the SVM layer appends them to its training buffer and, each time the buffer
is full, runs SMO for every one-vs-one pair on the device, keeps its support vectors for the
next batch and clears the rest. The scenario measures test accuracy (old classes, new classes,
all) after every batch on the reference runtime, and runs the same stream on the emulated
Cortex-M4 firmware (:class:`~edgenn.backends.cortexm.svm_device.SvmDevice`) to report the
cycles of each training step and check that the device learns the same weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from edgenn.backends.ref.kernels.svm import SVM
from edgenn.errors import EdgennError
from edgenn.ir import Graph

FACTORY_SAMPLES_PER_CLASS = 40
TEST_DIGITS_ON_DEVICE = 200  # test digits classified by the emulated firmware (agreement check)


@dataclass(frozen=True)
class DemoStep:
    """Accuracy after a training step (step 0: the factory head, before any field data)."""

    step: int
    samples_seen: int
    accuracy: float
    accuracy_known: float
    accuracy_new: float
    carried: int = 0
    train_cycles: int | None = None  # device cycles of the SMO runs this step triggered
    max_abs_w_diff: float | None = None  # device w vs reference layer w after this step


@dataclass
class DemoReport:
    known: list[int]
    new: list[int]
    capacity: int
    C: float
    steps: list[DemoStep] = field(default_factory=list)
    device_agreement: float | None = None  # same test predictions, device vs reference
    inference_cycles: float | None = None
    device_ram_bytes: int | None = None
    device_flash_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def quantized_cnn(calibration_digits: int = 500) -> Graph:
    """The shipped MNIST CNN quantized to int8 on the first training digits."""
    from edgenn.api import load_model, quantize_model
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.models import shipped_model_path

    graph = load_model(shipped_model_path("mnist_cnn"))
    train, _ = mnist_split("train")
    return quantize_model(graph, images_to_input(graph, train[:calibration_digits]))


def _features(exe: Any, tensor: str, x: np.ndarray) -> np.ndarray:
    """The int8 feature vectors [N, d] the extractor gives for ``x``."""
    exe.run(x, keep=True)
    return np.asarray(exe.values[tensor]).reshape(len(x), -1)


def _svm_layer(exe: Any) -> SVM:
    layer = next(layer for layer in exe.layers if layer.node.op == "SVM")
    assert isinstance(layer, SVM)
    return layer


def _device_feed(dev: Any, x: np.ndarray, labels: np.ndarray) -> int | None:
    """Append ``x`` to the device's buffer as the reference layer does (train whenever the
    buffer fills); the cycles of the training steps this triggered."""
    cycles: int | None = 0
    start = 0
    while start < len(x):
        take = min(dev.config.capacity - dev.count, len(x) - start)
        dev.append(x[start:start + take], labels[start:start + take])
        start += take
        if dev.count == dev.config.capacity:
            res = dev.fit_buffer()
            cycles = None if res.cycles is None or cycles is None else cycles + res.cycles
    return cycles


def run_scenario(known: Sequence[int] = (0, 1, 2, 3, 4), capacity: int = 100, steps: int = 6,
                 C: float = 0.1, device: bool = True, seed: int = 0,
                 on_step: Callable[[DemoStep], None] | None = None) -> DemoReport:
    """Run the scenario; ``device=False`` skips the emulated firmware."""
    from edgenn.backends.ref import compile_ref
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.train.svm import SMOClassifier, attach_svm_head, penultimate_features
    from edgenn.train.svm.ovo import vote_predict

    classes = list(range(10))
    known = sorted(set(int(k) for k in known))
    if not known or any(k not in classes for k in known) or len(known) > 9:
        raise EdgennError(f"known classes must be 1-9 distinct digits 0-9, got {known}")
    new = [c for c in classes if c not in known]
    rng = np.random.default_rng(seed)
    cnn = quantized_cnn()
    feature = penultimate_features(cnn)
    extractor = compile_ref(cnn)
    (x_train, y_train), (x_test, y_test) = mnist_split("train"), mnist_split("test")
    xq_train, xq_test = images_to_input(cnn, x_train), images_to_input(cnn, x_test)

    # the factory: a few digits of the known classes, trained on the host
    factory = np.concatenate([rng.permutation(np.flatnonzero(y_train == k))[
        :FACTORY_SAMPLES_PER_CLASS] for k in known])
    head = attach_svm_head(cnn, feature, classes, capacity=capacity, C=C)
    exe = compile_ref(head)
    svm = _svm_layer(exe)
    f_factory = svm.features(_features(extractor, feature, xq_train[factory]))
    if len(known) > 1:  # one known class: nothing to separate, the head starts empty
        init = SMOClassifier(C=C).fit(f_factory, y_train[factory])
        exe = compile_ref(attach_svm_head(cnn, feature, classes, capacity=capacity, C=C,
                                          init=init))
        svm = _svm_layer(exe)

    rest = rng.permutation(np.setdiff1d(np.arange(len(y_train)), factory))
    stream = rest[: capacity * steps]
    new_mask = np.isin(y_test, new)

    def accuracy() -> tuple[float, float, float]:
        pred = exe.run(xq_test)[0].argmax(axis=1)
        hit = pred == y_test
        return float(hit.mean()), float(hit[~new_mask].mean()), float(hit[new_mask].mean())

    dev = None
    if device:
        from edgenn.backends.cortexm.svm_device import SvmDevice

        t = head.tensor(svm.node.inputs[0])
        assert t.quant is not None
        dev = SvmDevice(capacity, svm.weight.shape[1], classes, C=C, storage="int8",
                        scale=float(t.quant.scale[0]), zero_point=int(t.quant.zero_point[0]),
                        w=np.array(svm.weight, np.float32), b=np.array(svm.bias, np.float32))
    report = DemoReport(known=known, new=new, capacity=capacity, C=C)
    step0 = DemoStep(0, 0, *accuracy())
    report.steps.append(step0)
    if on_step is not None:
        on_step(step0)
    for k in range(steps):
        idx = stream[k * capacity:(k + 1) * capacity]
        results = exe.train(xq_train[idx], labels=y_train[idx])
        trained = results[svm.node.name]
        carried = trained[-1].carried_out if trained else svm.buffer.count
        cycles = w_diff = None
        if dev is not None:
            cycles = _device_feed(dev, _features(extractor, feature, xq_train[idx]), y_train[idx])
            w_diff = float(np.max(np.abs(dev.w - np.asarray(svm.weight, np.float32))))
        step = DemoStep(k + 1, (k + 1) * capacity, *accuracy(), carried=carried,
                        train_cycles=cycles, max_abs_w_diff=w_diff)
        report.steps.append(step)
        if on_step is not None:
            on_step(step)
    if dev is not None:
        probe = xq_test[:TEST_DIGITS_ON_DEVICE]
        f_probe = _features(extractor, feature, probe)
        labels, cycles_per = dev.predict(f_probe)
        # why: the device votes with ties to the lowest class index (LIBSVM's svm_predict);
        # compare with the same vote of the reference layer, not the argmax of its scores
        dec = svm.features(f_probe) @ svm.weight.T + svm.bias
        ref_votes = vote_predict(dec, len(classes), svm.active_pairs)
        report.device_agreement = float(np.mean(np.asarray(labels, np.int64) == ref_votes))
        report.inference_cycles = float(cycles_per)
        mem = dev.memory()
        report.device_ram_bytes = mem.ram_bytes
        report.device_flash_bytes = mem.flash_bytes
    return report
