"""An SVM layer that learns on a Cortex-M core, run in the emulator.

    dev = SvmDevice(capacity=100, n_features=64, classes=range(10), C=1.0)
    res = dev.train(X_batch, y_batch)      # samples appended one by one, then SMO on the device
    res.cycles, res.w, res.b, res.iterations
    labels, cycles = dev.predict(X_test)   # the device's vote, cycles per inference
    dev.memory()                           # flash, RAM: static arrays by purpose, stack used

The firmware (:mod:`edgenn.backends.cortexm.codegen.svm_project`) keeps the buffer, alphas,
SMO workspace, kernel-row cache, w and b in static arrays. The host writes each sample into the
firmware's input array and calls ``edgenn_svm_append_input``, calls ``edgenn_svm_train_buffer``
to train, reads w and b back from memory, and classifies with ``edgenn_invoke``. Cycles follow
the project's Cortex-M4 model (zero wait states; see docs/cortexm.md); other cores report
instruction counts only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from edgenn.backends.cortexm.build import build
from edgenn.backends.cortexm.codegen.svm_project import (
    DEFAULT_STACK_BYTES,
    SvmConfig,
    SvmProject,
    generate_svm,
)
from edgenn.backends.cortexm.emulator import Machine
from edgenn.backends.cortexm.emulator.deps import require
from edgenn.backends.cortexm.targets import get_core
from edgenn.errors import EdgennError
from edgenn.svm.errors import BufferFullError, SvmDataError

_STATUS = {2: "buffer full", -10: "label outside the classes", -11: "inconsistent layer settings",
           -12: "NaN or infinite feature", -13: "the training buffer is empty",
           -1: "bad argument", -2: "workspace too small", -3: "only one class"}


@dataclass(frozen=True)
class DeviceTrainResult:
    """One training step on the device.

    ``cycles`` / ``instructions`` of ``edgenn_svm_train_buffer`` (cycles None on cores without
    the cycle model); ``w`` [n_pairs, d] and ``b`` [n_pairs] read back from the device;
    per pair ``iterations``, ``status`` (0 converged, 1 max_iter, 2 skipped: a class missing)
    and ``objective``; ``samples`` trained on, ``carried`` into the next batch; the cost of
    appending the batch (``append_cycles``, all samples); ``stack_bytes`` used by training.
    """

    cycles: int | None
    w: npt.NDArray[np.float32]
    b: npt.NDArray[np.float32]
    iterations: npt.NDArray[np.uint32]
    status: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, np.uint8))
    objective: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, np.float32))
    instructions: int = 0
    samples: int = 0
    carried: int = 0
    append_cycles: int | None = None
    stack_bytes: int = 0


class DevicePrediction(NamedTuple):
    """Voted labels and the mean cost of one inference (cycles; instructions on cores without
    the cycle model)."""

    labels: np.ndarray
    cycles_per_inference: float


@dataclass(frozen=True)
class DeviceClassification:
    """Everything :meth:`SvmDevice.classify` read back, per sample."""

    labels: np.ndarray
    scores: npt.NDArray[np.float32]  # scikit-learn's "ovr" decision [N, k]
    decision: npt.NDArray[np.float32]  # pair decisions [N, n_pairs]
    cycles: npt.NDArray[np.int64]  # per inference (instructions without the cycle model)
    stack_bytes: int


@dataclass(frozen=True)
class DeviceMemory:
    """Flash and RAM of the firmware: ``static`` bytes of each SVM array (from the ELF's
    symbols), the stack reserved and the high-water mark measured so far."""

    flash_bytes: int
    ram_bytes: int  # .data + .bss + reserved stack
    svm_static_bytes: int  # the SVM's arrays and layer struct
    stack_reserved: int
    stack_used: int
    static: dict[str, int]


class SvmDevice:
    """Build the SVM firmware for ``core`` and drive it in the emulator.

    Settings as the Python layer (:class:`~edgenn.svm.buffer.TrainingBuffer`):
    ``capacity`` samples of ``n_features``, ``classes`` (labels; pairs in their order), ``C``,
    ``tol``, ``max_iter``, ``carry`` (``"support_vectors"``, ``"warm_start"`` or ``"none"``),
    ``carry_limit``. ``storage="int8"`` keeps the buffer as int8 with ``scale`` /
    ``zero_point`` (4x less RAM; features are quantized on the way in). ``w`` / ``b``: initial
    weights. ``ram_kb`` / ``cache_len`` / ``kernel_memo`` / ``opt`` / ``stack_bytes`` size and
    build the firmware (:class:`~edgenn.backends.cortexm.codegen.svm_project.SvmConfig`);
    ``out_dir`` keeps the project (default: a temporary directory).
    """

    def __init__(self, capacity: int, n_features: int, classes: Sequence[Any], C: float = 1.0,
                 tol: float = 1e-3, max_iter: int = 100_000, *, carry: str = "support_vectors",
                 carry_limit: int | None = None, storage: str = "float32", scale: float = 1.0,
                 zero_point: int = 0, w: np.ndarray | None = None, b: np.ndarray | None = None,
                 core: str = "cortex-m4", ram_kb: int | None = None,
                 cache_len: int | None = None, kernel_memo: bool | None = None,
                 opt: str = "-O2",
                 stack_bytes: int = DEFAULT_STACK_BYTES,
                 out_dir: str | Path | None = None) -> None:
        self.classes = list(classes)
        self._index = {c: i for i, c in enumerate(self.classes)}
        if len(self._index) != len(self.classes):
            raise SvmDataError(f"classes {self.classes} are not unique")
        self.config = SvmConfig(int(capacity), int(n_features), len(self.classes), float(C),
                                float(tol), int(max_iter), carry, carry_limit, storage,
                                float(np.float32(scale)), int(zero_point), cache_len,
                                kernel_memo)
        self.core = get_core(core)
        self._tmp = tempfile.TemporaryDirectory(prefix="edgenn-svm-") if out_dir is None else None
        where = Path(self._tmp.name) if self._tmp is not None else Path(out_dir)  # type: ignore[arg-type]
        self.project: SvmProject = self._generate(where, w=w, b=b, ram_kb=ram_kb, opt=opt,
                                                  stack_bytes=stack_bytes)
        self.config = self.project.config  # with the kernel memo decided for the RAM
        self.elf = build(where, self.project.sources, self.project.cflags, self.project.ldflags)
        self.machine = Machine(self.elf, self.project.manifest, self.core,
                               max_instructions=4_000_000_000)
        self._stack_used = 0
        self._io = {o["name"]: o for o in self.project.manifest["outputs"]}

    def _generate(self, out_dir: Path, **options: Any) -> SvmProject:
        """Write the firmware project (``generate_svm``'s keyword ``options``); subclasses
        add to the firmware (e.g. :mod:`edgenn.backends.cortexm.svm_cnn_device`)."""
        return generate_svm(self.config, self.core, out_dir, **options)

    # ------------------------------------------------------------------ data in and out
    @property
    def count(self) -> int:
        """Samples in the device's training buffer."""
        return int(self.machine.call("edgenn_svm_count").value)

    @property
    def w(self) -> npt.NDArray[np.float32]:
        cfg = self.config
        return self._array("edgenn_svm_w", np.float32, cfg.pairs * cfg.n_features).reshape(
            cfg.pairs, cfg.n_features)

    @property
    def b(self) -> npt.NDArray[np.float32]:
        return self._array("edgenn_svm_b", np.float32, self.config.pairs)

    def _array(self, symbol: str, dtype: Any, n: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * n
        return np.frombuffer(self.machine.read(symbol, size), dtype).copy()

    def features(self, x: npt.ArrayLike) -> np.ndarray:
        """Samples [N, d] as the device stores them: float32, or int8 (round to nearest even,
        saturated) for int8 storage; int8 input is taken as already quantized."""
        arr = np.asarray(x)
        cfg = self.config
        if arr.ndim != 2 or arr.shape[1] != cfg.n_features:
            raise SvmDataError(f"features have shape {list(arr.shape)}, the device takes "
                               f"[N, {cfg.n_features}]")
        if cfg.storage == "int8":
            if arr.dtype == np.int8:
                return arr
            xf = arr.astype(np.float32)
            _check_finite(xf)
            q = np.round(xf / np.float32(cfg.scale)) + cfg.zero_point
            return np.clip(q, -128, 127).astype(np.int8)
        xf = arr.astype(np.float32)
        _check_finite(xf)
        return xf

    def class_indices(self, labels: npt.ArrayLike) -> list[int]:
        try:
            return [self._index[v] for v in np.asarray(labels).tolist()]
        except KeyError as err:
            raise SvmDataError(f"label {err.args[0]!r} is not one of the device's classes "
                               f"{self.classes}") from None

    # ------------------------------------------------------------------ training
    def append(self, x: npt.ArrayLike, labels: npt.ArrayLike) -> int | None:
        """Append samples one ``edgenn_svm_append_input`` call each; returns their total
        cycles (instructions without the cycle model). BufferFullError if they do not fit."""
        xs = self.features(x)
        idx = self.class_indices(labels)
        if len(idx) != len(xs):
            raise SvmDataError(f"{len(xs)} samples need {len(xs)} labels, got {len(idx)}")
        room = self.config.capacity - self.count
        if len(xs) > room:
            raise BufferFullError(f"SVM training buffer on the device is full ({self.count} of "
                                  f"{self.config.capacity} samples): train it before appending "
                                  f"{len(xs)} more")
        total = 0
        for row, label in zip(xs, idx, strict=True):
            self.machine.write("edgenn_arena", row.tobytes())
            res = self.machine.call("edgenn_svm_append_input", label)
            _check(res.value, "edgenn_svm_append_input")
            total += res.cycles if res.cycles is not None else res.instructions
            self._stack_used = max(self._stack_used, res.stack_bytes)
        return total if self.core.cycle_model else None

    def fit_buffer(self) -> DeviceTrainResult:
        """Run ``edgenn_svm_train_buffer`` on what the buffer holds and read the model back."""
        samples = self.count
        res = self.machine.call("edgenn_svm_train_buffer")
        _check(res.value, "edgenn_svm_train_buffer")
        self._stack_used = max(self._stack_used, res.stack_bytes)
        pairs = self.config.pairs
        return DeviceTrainResult(
            cycles=res.cycles, w=self.w, b=self.b,
            iterations=self._array("edgenn_svm_iterations", np.uint32, pairs),
            status=self._array("edgenn_svm_pair_status", np.uint8, pairs),
            objective=self._array("edgenn_svm_objective", np.float32, pairs),
            instructions=res.instructions, samples=samples, carried=self.count,
            stack_bytes=res.stack_bytes)

    def train(self, x: npt.ArrayLike, labels: npt.ArrayLike) -> DeviceTrainResult:
        """Append a batch (it must fit the room left in the buffer), then train on the
        buffer: one SMO per class pair, w and b updated on the device."""
        append_cycles = self.append(x, labels)
        result = self.fit_buffer()
        return replace(result, append_cycles=append_cycles)

    # ------------------------------------------------------------------ inference
    def classify(self, x: npt.ArrayLike) -> DeviceClassification:
        """``edgenn_invoke`` per sample: voted labels, ovr scores, pair decisions, cost."""
        xs = self.features(x)
        cfg = self.config
        labels, scores, decision, cycles = [], [], [], []
        stack = 0
        for row in xs:
            res = self.machine.invoke([row.tobytes()])
            dec, sc, lab = res.outputs
            decision.append(np.frombuffer(dec, np.float32))
            scores.append(np.frombuffer(sc, np.float32))
            labels.append(int.from_bytes(lab, "little"))
            cycles.append(res.cycles if res.cycles is not None else res.instructions)
            stack = max(stack, res.stack_bytes)
        self._stack_used = max(self._stack_used, stack)
        out = np.asarray(self.classes, dtype=object)[np.asarray(labels, np.int64)]
        return DeviceClassification(
            out, np.array(scores, np.float32).reshape(-1, cfg.n_classes),
            np.array(decision, np.float32).reshape(-1, cfg.pairs), np.asarray(cycles, np.int64),
            stack)

    def predict(self, x: npt.ArrayLike) -> DevicePrediction:
        """The device's vote for each sample and the mean cycles of one inference."""
        c = self.classify(x)
        return DevicePrediction(c.labels, float(c.cycles.mean()) if len(c.cycles) else 0.0)

    def decision_function(self, x: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """scikit-learn's "ovr" decision [N, k] computed on the device."""
        return self.classify(x).scores

    # ------------------------------------------------------------------ memory
    def memory(self) -> DeviceMemory:
        """Flash, RAM and the SVM's static arrays (from the ELF symbol table)."""
        sizes = self.machine.elf_sizes()
        static = _svm_symbols(self.elf)
        return DeviceMemory(sizes["flash_bytes"], sizes["ram_bytes"], sum(static.values()),
                            sizes["stack"], self._stack_used, static)


def _check_finite(x: np.ndarray) -> None:
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise SvmDataError(f"feature [{row}, {col}] is {x[row, col]}: features must be finite")


def _check(value: int, what: str) -> None:
    status = value - (1 << 32) if value & 0x8000_0000 else value
    if status == 2:
        raise BufferFullError(f"{what}: the device's training buffer is full")
    if status != 0:
        raise EdgennError(f"{what} returned {status} ({_STATUS.get(status, 'error')})")


def _svm_symbols(elf: Path) -> dict[str, int]:
    """Sizes of the firmware's SVM data objects (``edgenn_svm_*``, ``svm_*``, the I/O arena)."""
    elffile = require("elftools.elf.elffile")
    out: dict[str, int] = {}
    with open(elf, "rb") as f:
        symtab = elffile.ELFFile(f).get_section_by_name(".symtab")
        for sym in symtab.iter_symbols():
            name = sym.name
            if sym["st_info"]["type"] == "STT_OBJECT" and (
                    name.startswith(("edgenn_svm", "svm_")) or name == "edgenn_arena"):
                out[name] = int(sym["st_size"])
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
