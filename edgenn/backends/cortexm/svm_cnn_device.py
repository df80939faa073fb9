"""A device that learns from raw inputs: the int8 CNN feature extractor and the SVM layer in one
firmware, run in the emulator.

    dev = SvmCnnDevice(graph, "features", capacity=100, classes=range(10), C=0.1)
    cost = dev.learn(images, labels)    # the CNN runs on the device; its features are appended
    res = dev.fit_buffer()              # SMO for every pair on the device (as SvmDevice)
    got = dev.classify_inputs(images)   # CNN + vote per input: labels, scores, cycles
    dev.extract(images)                 # the device's feature vectors (tests)

The host writes each input (the graph's input tensor, e.g. an int8 image) into the CNN's input
buffer and calls the firmware's functions (:mod:`edgenn.backends.cortexm.codegen.svm_cnn_project`);
it never computes a feature. Everything :class:`~edgenn.backends.cortexm.svm_device.SvmDevice`
does (train on the buffer, read w and b, host-fed ``append`` / ``classify``, memory) works on
this firmware too. On a real board's model (QEMU) the same functions run from a board main:
:mod:`edgenn.backends.cortexm.svm_cnn_qemu`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.backends.cortexm.build import build_project
from edgenn.backends.cortexm.codegen.svm_cnn_project import (
    SvmCnnProject,
    feature_extractor,
    feature_spec,
    generate_svm_cnn,
)
from edgenn.backends.cortexm.svm_device import DeviceClassification, SvmDevice, _check
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.ir.layout import to_internal
from edgenn.svm.errors import BufferFullError, SvmDataError


@dataclass(frozen=True)
class DeviceFeatures:
    """Feature vectors the device's CNN computed [N, d] (the SVM's storage type) and the
    cycles of each extraction (instructions on cores without the cycle model)."""

    features: np.ndarray
    cycles: npt.NDArray[np.int64]


@dataclass(frozen=True)
class LearnCost:
    """What appending inputs cost on the device, per input: the CNN (``extract_cycles``) and
    the copy into the training buffer (``append_cycles``)."""

    extract_cycles: npt.NDArray[np.int64]
    append_cycles: npt.NDArray[np.int64]


@dataclass(frozen=True)
class RamBreakdown:
    """RAM of the combined firmware in bytes: the CNN's arena, the SVM layer's static arrays
    (buffer, SMO workspace, kernel cache, weights, I/O), the stack reserved and the total
    (.data + .bss + stack, from the ELF)."""

    cnn_arena: int
    svm_static: int
    stack_reserved: int
    total: int


class SvmCnnDevice(SvmDevice):
    """Build the combined firmware for ``graph`` cut at ``feature_tensor`` (an int8 or float32
    activation) and an SVM layer of ``capacity`` samples over ``classes``.

    ``options``: :class:`~edgenn.backends.cortexm.svm_device.SvmDevice`'s keyword settings
    (``tol``, ``max_iter``, ``carry``, ``carry_limit``, ``w``, ``b``, ``core``, ``ram_kb``,
    ``cache_len``, ``kernel_memo``, ``opt``, ``stack_bytes``, ``out_dir``); the buffer's
    storage, scale and zero point are the feature tensor's.
    """

    project: SvmCnnProject

    def __init__(self, graph: Graph, feature_tensor: str, capacity: int, classes: Any,
                 C: float = 1.0, **options: Any) -> None:
        self.graph = graph
        self.cnn = feature_extractor(graph, feature_tensor)
        spec = feature_spec(graph, feature_tensor)
        super().__init__(capacity, spec.n_features, classes, C, storage=spec.storage,
                         scale=spec.scale, zero_point=spec.zero_point, **options)
        res = self.machine.call("edgenn_svm_cnn_init")
        _check(res.value, "edgenn_svm_cnn_init")
        self._input = self.project.cnn_input
        self._in_name = self.cnn.inputs[0]

    def _generate(self, out_dir: Path, **options: Any) -> SvmCnnProject:
        """The combined project, with the feature library's archive already built (the
        SVM firmware links it)."""
        project = generate_svm_cnn(self.cnn, self.config, self.core, out_dir, **options)
        assert project.cnn is not None
        build_project(project.cnn)
        return project

    # ------------------------------------------------------------------ inputs
    def inputs(self, x: npt.ArrayLike) -> np.ndarray:
        """``x`` [N, ...] in the graph's declared input layout -> the CNN's buffers [N, ...]
        (NHWC), checked against the input tensor's dtype and shape."""
        return to_internal(self.graph, self._in_name, np.asarray(x))

    def _stage(self, row: np.ndarray) -> None:
        self.machine.write(self._input["arena_symbol"], row.tobytes(), int(self._input["offset"]))

    def _call(self, symbol: str, *args: int) -> tuple[int, int]:
        """Call ``symbol``; (its signed return value, its cycles or instructions)."""
        res = self.machine.call(symbol, *args)
        self._stack_used = max(self._stack_used, res.stack_bytes)
        value = res.value - (1 << 32) if res.value & 0x8000_0000 else res.value
        return value, res.cycles if res.cycles is not None else res.instructions

    def _extract_one(self, row: np.ndarray) -> int:
        self._stage(row)
        status, cost = self._call("edgenn_svm_cnn_extract")
        if status != 0:
            raise EdgennError(f"edgenn_svm_cnn_extract returned {status} (the CNN library's "
                              "status code)")
        return cost

    # ------------------------------------------------------------------ features and training
    def extract(self, x: npt.ArrayLike) -> DeviceFeatures:
        """Run the device's CNN on each input; its feature vectors and their cost."""
        rows = self.inputs(x)
        cfg = self.config
        dtype = np.int8 if cfg.storage == "int8" else np.float32
        nbytes = cfg.n_features * cfg.element_bytes
        feats, cycles = [], []
        for row in rows:
            cycles.append(self._extract_one(row))
            feats.append(np.frombuffer(self.machine.read("edgenn_arena", nbytes), dtype))
        return DeviceFeatures(np.array(feats, dtype).reshape(-1, cfg.n_features),
                              np.asarray(cycles, np.int64))

    def learn(self, x: npt.ArrayLike, labels: npt.ArrayLike) -> LearnCost:
        """Append inputs with their labels: per input the device runs the CNN and appends its
        features to the training buffer. BufferFullError if they do not fit; train with
        :meth:`fit_buffer`."""
        rows = self.inputs(x)
        idx = self.class_indices(labels)
        if len(idx) != len(rows):
            raise SvmDataError(f"{len(rows)} inputs need {len(rows)} labels, got {len(idx)}")
        if len(rows) > self.config.capacity - self.count:
            raise BufferFullError(f"SVM training buffer on the device is full ({self.count} of "
                                  f"{self.config.capacity} samples): train it before appending "
                                  f"{len(rows)} more")
        extract, append = [], []
        for row, label in zip(rows, idx, strict=True):
            extract.append(self._extract_one(row))
            status, cost = self._call("edgenn_svm_append_input", label)
            _check(status & 0xFFFF_FFFF, "edgenn_svm_append_input")
            append.append(cost)
        return LearnCost(np.asarray(extract, np.int64), np.asarray(append, np.int64))

    # ------------------------------------------------------------------ inference
    def classify_inputs(self, x: npt.ArrayLike) -> DeviceClassification:
        """``edgenn_svm_cnn_classify`` per input (CNN + vote on the device): voted labels, ovr
        scores, pair decisions and the cost of each whole classification."""
        rows = self.inputs(x)
        cfg = self.config
        dec_io, scores_io = self._io["decision"], self._io["scores"]
        labels, scores, decision, cycles = [], [], [], []
        for row in rows:
            self._stage(row)
            label, cost = self._call("edgenn_svm_cnn_classify")
            if label < 0:
                raise EdgennError(f"edgenn_svm_cnn_classify returned {label} (the CNN "
                                  "library's status code)")
            labels.append(label)
            cycles.append(cost)
            decision.append(np.frombuffer(self.machine.read(
                "edgenn_arena", int(dec_io["bytes"]), int(dec_io["offset"])), np.float32))
            scores.append(np.frombuffer(self.machine.read(
                "edgenn_arena", int(scores_io["bytes"]), int(scores_io["offset"])), np.float32))
        out = np.asarray(self.classes, dtype=object)[np.asarray(labels, np.int64)]
        return DeviceClassification(
            out, np.array(scores, np.float32).reshape(-1, cfg.n_classes),
            np.array(decision, np.float32).reshape(-1, cfg.pairs),
            np.asarray(cycles, np.int64), self._stack_used)

    # ------------------------------------------------------------------ memory
    def ram(self) -> RamBreakdown:
        """RAM by owner: CNN arena, SVM arrays, stack, total."""
        mem = self.memory()
        arena = int(self.project.manifest["cnn"]["arena_bytes"])
        return RamBreakdown(arena, mem.svm_static_bytes, mem.stack_reserved, mem.ram_bytes)
