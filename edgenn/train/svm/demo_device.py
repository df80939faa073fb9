"""Where ``edgenn svm-demo`` runs the combined CNN + SVM firmware: the cycle-model emulator
(unicorn) or a real board's model (QEMU).

Both runners follow the scenario as it unfolds: :meth:`evaluate` after the factory head and
after every step (the device classifies its test digits), :meth:`learn` with each step's
field digits, :meth:`finish` to fill in the report's device figures.

- :class:`UnicornRun` drives :class:`~edgenn.backends.cortexm.svm_cnn_device.SvmCnnDevice`:
  the host calls the firmware's functions image by image, so every step is measured (cycles)
  as it happens.
- :class:`QemuRun` records the same steps as a script for
  :class:`~edgenn.backends.cortexm.svm_cnn_qemu.SvmCnnBoard` and runs it in one boot at the
  end (:meth:`finish`); QEMU counts no cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from edgenn.errors import EdgennError
from edgenn.ir import Graph


def hits(pred: np.ndarray, truth: np.ndarray,
         new: np.ndarray) -> tuple[float, float | None, float | None]:
    """Accuracy on all, the known and the new classes (``new``: mask of new-class digits;
    None for a group with no digit)."""
    hit = np.asarray(pred, np.int64) == truth
    known = float(hit[~new].mean()) if (~new).any() else None
    fresh = float(hit[new].mean()) if new.any() else None
    return float(hit.mean()), known, fresh


@dataclass(frozen=True)
class Probe:
    """The test digits the device classifies after each step: its inputs (the CNN's int8
    images), their labels and which of them are of a new class."""

    inputs: np.ndarray
    truth: np.ndarray
    new: np.ndarray

    def device_accuracy(self, votes: np.ndarray) -> dict[str, Any]:
        acc = hits(votes, self.truth, self.new)
        return dict(zip(("device_accuracy", "device_accuracy_known", "device_accuracy_new"),
                        acc, strict=True))


@dataclass(frozen=True)
class Firmware:
    """What both runners build: the CNN cut at ``feature``, the SVM head's settings and its
    factory weights, the emulated ``core``."""

    cnn: Graph
    feature: str
    capacity: int
    classes: list[int]
    C: float
    w: np.ndarray
    b: np.ndarray
    core: str


def _summary(report: Any, votes: np.ndarray, ref_votes: np.ndarray) -> None:
    """Agreement of the device's final votes with the reference layer's, and the largest
    device vs host-fed accuracy gap on the device's digits over the steps."""
    report.device_agreement = float(np.mean(votes == ref_votes))
    report.max_accuracy_gap = max(abs((s.device_accuracy or 0.0)
                                      - (s.host_accuracy_device_digits or 0.0))
                                  for s in report.steps)


class UnicornRun:
    """The scenario on the cycle-model emulator, step by step."""

    emulator = "unicorn"

    def __init__(self, fw: Firmware, probe: Probe) -> None:
        from edgenn.backends.cortexm.svm_cnn_device import SvmCnnDevice

        self.dev = SvmCnnDevice(fw.cnn, fw.feature, fw.capacity, fw.classes, C=fw.C,
                                core=fw.core, w=fw.w, b=fw.b)
        self.probe = probe
        self.votes = np.zeros(0, np.int64)

    def evaluate(self) -> dict[str, Any]:
        """Classify the probe digits on the device: its accuracy and the cost per image."""
        got = self.dev.classify_inputs(self.probe.inputs)
        self.votes = got.labels.astype(np.int64)
        return {**self.probe.device_accuracy(self.votes),
                "classify_cycles": float(got.cycles.mean())}

    def learn(self, x: np.ndarray, labels: np.ndarray, w_ref: np.ndarray) -> dict[str, Any]:
        """Stage ``x`` and ``labels`` as the reference layer takes them (train whenever the
        buffer fills): the cycles of the CNN, the appends and the trainings, and the largest
        difference of the device's weights from the reference layer's ``w_ref``."""
        dev = self.dev
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
        w_diff = float(np.max(np.abs(dev.w - np.asarray(w_ref, np.float32))))
        return {"train_cycles": cycles, "max_abs_w_diff": w_diff, "extract_cycles": extract,
                "append_cycles": append}

    def finish(self, report: Any, ref_votes: np.ndarray) -> None:
        """Agreement, mean costs, RAM and flash."""
        _summary(report, self.votes, ref_votes)
        samples = report.steps[-1].samples_seen
        if samples:
            report.extract_cycles = sum(s.extract_cycles or 0 for s in report.steps) / samples
        report.inference_cycles = report.steps[-1].classify_cycles
        ram = self.dev.ram()
        report.cnn_arena_bytes, report.svm_ram_bytes = ram.cnn_arena, ram.svm_static
        report.device_ram_bytes = ram.total
        mem = self.dev.memory()
        report.stack_bytes, report.device_flash_bytes = mem.stack_used, mem.flash_bytes


class QemuRun:
    """The scenario on a real board's model: recorded step by step, run in one boot."""

    emulator = "qemu"

    def __init__(self, fw: Firmware, probe: Probe, board: str, steps: int) -> None:
        from edgenn.backends.cortexm.svm_cnn_qemu import SvmCnnBoard

        self.board = SvmCnnBoard(fw.cnn, fw.feature, fw.capacity, fw.classes, C=fw.C,
                                 core=fw.core, w=fw.w, b=fw.b, board=board)
        self.probe = probe
        # why before the scenario runs: fail in seconds, not after every host step
        staged = len(probe.inputs) + steps * fw.capacity
        need = self.board.stage_bytes(staged, 2 * steps + 1)
        if need > self.board.stage_room:
            raise EdgennError(f"the scenario stages {staged:,} digits ({need:,} bytes) for one "
                              f"boot; {board} has {self.board.stage_room:,} bytes of flash left "
                              "after the firmware: use fewer --device-test digits or steps")
        self.script = self.board.script()
        self.test = self.script.stage(probe.inputs)

    def evaluate(self) -> dict[str, Any]:
        self.script.classify(self.test)
        return {}

    def learn(self, x: np.ndarray, labels: np.ndarray, w_ref: np.ndarray) -> dict[str, Any]:
        del w_ref  # why: the board's weights stay on the board; QEMU is checked by its votes
        self.script.learn(self.script.stage(x, labels))
        return {}

    def finish(self, report: Any, ref_votes: np.ndarray) -> None:
        """Boot once: the device's accuracy of every step, agreement, RAM and flash."""
        run = self.board.run(self.script)
        report.steps[:] = [replace(step, **self.probe.device_accuracy(votes.astype(np.int64)))
                           for step, votes in zip(report.steps, run.labels, strict=True)]
        _summary(report, run.labels[-1].astype(np.int64), ref_votes)
        mem = self.board.memory()
        report.cnn_arena_bytes = mem["cnn_arena"]
        report.device_ram_bytes, report.device_flash_bytes = mem["ram_bytes"], mem["flash_bytes"]
        report.device_seconds = run.seconds
