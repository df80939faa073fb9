"""The on-device learning scenario behind ``edgenn svm-demo``.

A device ships with the int8 MNIST CNN as a frozen feature extractor and an SVM head that was
trained at the factory on a few digits of the *known* classes only (0-4 by default): it never
saw the other classes and cannot predict them. In the field, labelled digits of every class
arrive one by one; the SVM layer appends them to its training buffer and, each time the buffer
is full, runs SMO for every one-vs-one pair on the device, keeps its support vectors for the
next batch and clears the rest. The scenario measures test accuracy (old classes, new classes,
all) after every batch on the reference runtime (the features computed on the host: the
"host-fed" accuracy), and runs the same stream on the Cortex-M4 firmware that holds both the
int8 CNN and the SVM head: the host only stages raw images and labels, the device computes
the features, trains and classifies its test digits (evenly spaced over the test split; the
host-fed accuracy is reported on the same digits too). The firmware runs in the cycle-model
emulator (``emulator="unicorn"``: the cycles of each batch -- CNN, training, classification
per image -- and a check that the device learns the same weights) or on a real board's model
in QEMU (``emulator="qemu"``: one boot for the whole scenario, no cycles); see
:mod:`edgenn.train.svm.demo_device`. It reports the device's accuracy next to the host-fed
one and the RAM and flash of the firmware.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from edgenn.backends.ref.kernels.svm import SVM
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.train.svm.demo_device import Firmware, Probe, QemuRun, UnicornRun, hits

FACTORY_SAMPLES_PER_CLASS = 40
EMULATORS = ("unicorn", "qemu")


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
    host_accuracy_device_digits_known: float | None = None
    host_accuracy_device_digits_new: float | None = None
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
    emulator: str | None = None  # "unicorn" (cycle model) or "qemu" (a board's model)
    board: str | None = None  # "generic" (the emulator's firmware) or the QEMU board
    device_seconds: float | None = None  # QEMU: wall time of the one boot
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
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.frontends import load as load_model
    from edgenn.models import shipped_model_path
    from edgenn.quantize import quantize as quantize_model

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


def run_scenario(known: Sequence[int] = (0, 1, 2, 3, 4), capacity: int = 100, steps: int = 6,
                 C: float = 0.1, device: bool = True, seed: int = 0,
                 on_step: Callable[[DemoStep], None] | None = None, core: str = "cortex-m4",
                 device_test: int | None = None, emulator: str = "unicorn",
                 board: str = "mps2-an386") -> DemoReport:
    """Run the scenario; ``device=False`` skips the firmware (``core``), which classifies
    ``device_test`` evenly spaced test digits after each step (default: all). ``emulator``:
    ``"unicorn"`` (the cycle model) or ``"qemu"`` (``board``'s model, one boot; the steps'
    device figures are filled in after it, so ``on_step`` sees the host-fed ones only)."""
    from edgenn.backends.ref import compile_ref
    from edgenn.data.mnist import mnist_split
    from edgenn.evaluate import images_to_input
    from edgenn.svm import SMOClassifier, attach_svm_head, penultimate_features

    classes = list(range(10))
    known = sorted(set(int(k) for k in known))
    if not known or any(k not in classes for k in known) or len(known) > 9:
        raise EdgennError(f"known classes must be 1-9 distinct digits 0-9, got {known}")
    if emulator not in EMULATORS:
        raise EdgennError(f"emulator must be one of {', '.join(EMULATORS)}, got {emulator!r}")
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
    new_mask = np.isin(y_test, new)

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

    def accuracy() -> dict[str, Any]:
        """The host-fed accuracy: all, known, new (and on the device's test digits)."""
        pred = exe.run(xq_test)[0].argmax(axis=1)
        acc: dict[str, Any] = dict(zip(("accuracy", "accuracy_known", "accuracy_new"),
                                       hits(pred, y_test, new_mask), strict=True))
        if device:
            acc.update(zip(("host_accuracy_device_digits", "host_accuracy_device_digits_known",
                            "host_accuracy_device_digits_new"),
                           hits(pred[probe], y_test[probe], new_mask[probe]), strict=True))
        return acc

    report = DemoReport(known=known, new=new, capacity=capacity, C=C)
    runner: UnicornRun | QemuRun | None = None
    if device:
        # the factory head is flashed with the firmware; everything after it is learned there
        fw = Firmware(cnn, feature, capacity, classes, C, np.array(svm.weight, np.float32),
                      np.array(svm.bias, np.float32), core)
        where = Probe(xq_test[probe], y_test[probe], new_mask[probe])
        runner = (UnicornRun(fw, where) if emulator == "unicorn"
                  else QemuRun(fw, where, board, steps))
        report.core, report.device_test_digits = core, n_dev
        report.emulator = emulator
        report.board = "generic" if emulator == "unicorn" else board

    step0 = DemoStep(0, 0, **accuracy(), **(runner.evaluate() if runner is not None else {}))
    report.steps.append(step0)
    if on_step is not None:
        on_step(step0)
    for k in range(steps):
        idx = stream[k * capacity:(k + 1) * capacity]
        results = exe.train(xq_train[idx], labels=y_train[idx])
        trained = results[svm.node.name]
        carried = trained[-1].carried_out if trained else svm.buffer.count
        extra: dict[str, Any] = {}
        if runner is not None:
            extra = runner.learn(xq_train[idx], y_train[idx], np.asarray(svm.weight))
            extra.update(runner.evaluate())
        step = DemoStep(k + 1, (k + 1) * capacity, **accuracy(), carried=carried, **extra)
        report.steps.append(step)
        if on_step is not None:
            on_step(step)
    if runner is not None:
        runner.finish(report, _reference_votes(svm, _features(extractor, feature,
                                                              xq_test[probe])))
    return report


def _reference_votes(svm: SVM, f_probe: np.ndarray) -> np.ndarray:
    """The reference layer's vote on the device's test digits (``f_probe``: their features
    on the host)."""
    from edgenn.svm.ovo import vote_predict

    # why: the device votes with ties to the lowest class index (LIBSVM's svm_predict);
    # compare with the same vote of the reference layer, not the argmax of its scores
    dec = svm.features(f_probe) @ svm.weight.T + svm.bias
    return np.asarray(vote_predict(dec, len(svm.classes), svm.active_pairs), np.int64)
