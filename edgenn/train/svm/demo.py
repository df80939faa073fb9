"""The on-device learning scenario behind ``edgenn svm-demo``.

A device ships with the int8 MNIST CNN as a frozen feature extractor and an SVM head that was
trained at the factory on a few digits of the *known* classes only (0-4 by default): it never
saw the other classes and cannot predict them. In the field, labelled digits of every class
arrive one by one; the SVM layer appends them to its training buffer and, each time the buffer
is full, runs SMO for every one-vs-one pair on the device, keeps its support vectors for the
next batch and clears the rest. The scenario measures test accuracy (old classes, new classes,
all) after every batch on the reference runtime (the features computed on the host: the
"host-fed" accuracy), and runs the same stream on the emulated Cortex-M4 firmware that holds
both the int8 CNN and the SVM head
(:class:`~edgenn.backends.cortexm.svm_cnn_device.SvmCnnDevice`): the host only stages raw
images and labels, the device computes the features, trains and classifies the test digits.
It reports the device's accuracy next to the host-fed one, the cycles of each batch (CNN,
training, classification per image), the RAM (CNN arena + SVM arrays) and checks that the
device learns the same weights.
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
    # the combined firmware (CNN + SVM on the device), on the device's test digits
    device_accuracy: float | None = None
    device_accuracy_known: float | None = None
    device_accuracy_new: float | None = None
    host_accuracy_device_digits: float | None = None  # host-fed, on the device's test digits
    extract_cycles: int | None = None  # the CNN on this step's field samples (all of them)
    append_cycles: int | None = None  # copying their features into the training buffer
    classify_cycles: float | None = None  # one test digit: CNN + vote, mean


@dataclass
class DemoReport:
    known: list[int]
    new: list[int]
    capacity: int
    C: float
    steps: list[DemoStep] = field(default_factory=list)
    core: str | None = None  # the emulated device; None: reference runtime only
    device_test_digits: int = 0  # test digits the device classifies after each step
    device_agreement: float | None = None  # same votes on them, device vs reference layer
    inference_cycles: float | None = None  # one test digit on the device: CNN + vote
    extract_cycles: float | None = None  # the CNN on one image
    cnn_arena_bytes: int | None = None
    svm_ram_bytes: int | None = None  # the SVM layer's static arrays (buffer, SMO, weights)
    stack_bytes: int | None = None  # stack high-water mark
    device_ram_bytes: int | None = None  # .data + .bss + reserved stack
    device_flash_bytes: int | None = None
    max_accuracy_gap: float | None = None  # max |device - host-fed| accuracy over the steps

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


def _device_learn(dev: Any, x: np.ndarray, labels: np.ndarray) -> tuple[int, int, int | None]:
    """Stage ``x`` and ``labels`` on the device as the reference layer takes them (train
    whenever the buffer fills); the cycles of the CNN, of the appends and of the training
    steps this triggered (None on cores without the cycle model)."""
    extract = append = 0
    cycles: int | None = 0
    start = 0
    while start < len(x):
        take = min(dev.config.capacity - dev.count, len(x) - start)
        cost = dev.learn(x[start:start + take], labels[start:start + take])
        extract += int(cost.extract_cycles.sum())
        append += int(cost.append_cycles.sum())
        start += take
        if dev.count == dev.config.capacity:
            res = dev.fit_buffer()
            cycles = None if res.cycles is None or cycles is None else cycles + res.cycles
    return extract, append, cycles


def _hits(pred: np.ndarray, truth: np.ndarray,
          new: np.ndarray) -> tuple[float, float | None, float | None]:
    """Accuracy on all, the known and the new classes (``new``: mask of new-class digits;
    None for a group with no digit)."""
    hit = np.asarray(pred, np.int64) == truth
    known = float(hit[~new].mean()) if (~new).any() else None
    fresh = float(hit[new].mean()) if new.any() else None
    return float(hit.mean()), known, fresh


def run_scenario(known: Sequence[int] = (0, 1, 2, 3, 4), capacity: int = 100, steps: int = 6,
                 C: float = 0.1, device: bool = True, seed: int = 0,
                 on_step: Callable[[DemoStep], None] | None = None, core: str = "cortex-m4",
                 device_test: int | None = None) -> DemoReport:
    """Run the scenario; ``device=False`` skips the emulated firmware (``core``), which
    classifies the first ``device_test`` test digits after each step (default: all)."""
    from edgenn.backends.ref import compile_ref
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.train.svm import SMOClassifier, attach_svm_head, penultimate_features

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
    n_dev = len(y_test) if device_test is None else int(device_test)
    if device and not 1 <= n_dev <= len(y_test):
        raise EdgennError(f"device test digits must be 1 to {len(y_test)}, got {n_dev}")
    # why evenly spaced: the test split is ordered by class, a prefix would miss classes
    probe = np.arange(n_dev) * len(y_test) // n_dev

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

    def accuracy() -> dict[str, Any]:
        """The host-fed accuracy: all, known, new (and on the device's test digits)."""
        pred = exe.run(xq_test)[0].argmax(axis=1)
        acc: dict[str, Any] = dict(zip(("accuracy", "accuracy_known", "accuracy_new"),
                                       _hits(pred, y_test, new_mask), strict=True))
        if device:
            acc["host_accuracy_device_digits"] = _hits(pred[probe], y_test[probe],
                                                       new_mask[probe])[0]
        return acc

    dev = None
    report = DemoReport(known=known, new=new, capacity=capacity, C=C)
    if device:
        from edgenn.backends.cortexm.svm_cnn_device import SvmCnnDevice

        # the factory head is flashed with the firmware; everything after it is learned there
        dev = SvmCnnDevice(cnn, feature, capacity, classes, C=C, core=core,
                           w=np.array(svm.weight, np.float32), b=np.array(svm.bias, np.float32))
        report.core, report.device_test_digits = core, n_dev
    last: list[np.ndarray] = []  # the device's votes on its test digits, latest step

    def on_device() -> dict[str, Any]:
        """Classify the device's test digits on the device: its accuracy and cost."""
        assert dev is not None
        got = dev.classify_inputs(xq_test[probe])
        last[:] = [got.labels.astype(np.int64)]
        acc = _hits(last[0], y_test[probe], new_mask[probe])
        return {"device_accuracy": acc[0], "device_accuracy_known": acc[1],
                "device_accuracy_new": acc[2], "classify_cycles": float(got.cycles.mean())}

    step0 = DemoStep(0, 0, **accuracy(), **(on_device() if dev is not None else {}))
    report.steps.append(step0)
    if on_step is not None:
        on_step(step0)
    for k in range(steps):
        idx = stream[k * capacity:(k + 1) * capacity]
        results = exe.train(xq_train[idx], labels=y_train[idx])
        trained = results[svm.node.name]
        carried = trained[-1].carried_out if trained else svm.buffer.count
        extra: dict[str, Any] = {}
        if dev is not None:
            extract, append, cycles = _device_learn(dev, xq_train[idx], y_train[idx])
            w_diff = float(np.max(np.abs(dev.w - np.asarray(svm.weight, np.float32))))
            extra = {"train_cycles": cycles, "max_abs_w_diff": w_diff,
                     "extract_cycles": extract, "append_cycles": append, **on_device()}
        step = DemoStep(k + 1, (k + 1) * capacity, **accuracy(), carried=carried, **extra)
        report.steps.append(step)
        if on_step is not None:
            on_step(step)
    if dev is not None:
        _device_summary(report, dev, svm, _features(extractor, feature, xq_test[probe]),
                        last[0])
    return report


def _device_summary(report: DemoReport, dev: Any, svm: SVM, f_probe: np.ndarray,
                    votes: np.ndarray) -> None:
    """Agreement of the device's final ``votes`` with the reference layer's vote on the same
    digits (``f_probe``: their features on the host), mean costs, RAM and flash."""
    from edgenn.train.svm.ovo import vote_predict

    # why: the device votes with ties to the lowest class index (LIBSVM's svm_predict);
    # compare with the same vote of the reference layer, not the argmax of its scores
    dec = svm.features(f_probe) @ svm.weight.T + svm.bias
    ref_votes = vote_predict(dec, len(svm.classes), svm.active_pairs)
    report.device_agreement = float(np.mean(votes == ref_votes))
    samples = report.steps[-1].samples_seen
    if samples:
        report.extract_cycles = sum(s.extract_cycles or 0 for s in report.steps) / samples
    report.inference_cycles = report.steps[-1].classify_cycles
    report.max_accuracy_gap = max(abs((s.device_accuracy or 0.0) - (s.host_accuracy_device_digits
                                                                    or 0.0))
                                  for s in report.steps)
    ram = dev.ram()
    report.cnn_arena_bytes, report.svm_ram_bytes = ram.cnn_arena, ram.svm_static
    report.device_ram_bytes = ram.total
    mem = dev.memory()
    report.stack_bytes, report.device_flash_bytes = mem.stack_used, mem.flash_bytes
