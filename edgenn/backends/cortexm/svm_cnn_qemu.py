"""The CNN + SVM firmware on a real board's model: one boot of qemu-system-arm runs a script.

    board = SvmCnnBoard(graph, "features", capacity=100, classes=range(10), C=0.1,
                        board="mps2-an386")
    script = board.script()
    test = script.stage(test_images)               # staged once, classified after every step
    script.classify(test)
    script.learn(script.stage(images, labels))     # CNN + append; trains when the buffer fills
    script.classify(test)
    run = board.run(script)                        # one boot for the whole script
    run.labels[0], run.labels[1]                   # the device's votes, per classify command

The firmware is :mod:`edgenn.backends.cortexm.svm_cnn_device`'s (the same CNN library, SVM
layer and glue functions) with the board's startup code, console and a main that interprets
the staged script (:mod:`edgenn.backends.cortexm.codegen.svm_cnn_board`); the host stages
raw inputs and labels only and reads the results back from the console UART. QEMU is not
cycle-accurate: cycles come from the cycle-model emulator (``SvmCnnDevice``).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgenn.backends.cortexm.boards.qemu import run_staged
from edgenn.backends.cortexm.boards.startup import STAGE_END, STAGE_START
from edgenn.backends.cortexm.build import build, build_project
from edgenn.backends.cortexm.codegen.svm_cnn_board import (
    RECORD_BYTES,
    Command,
    Op,
    script_bytes,
    stage_image,
)
from edgenn.backends.cortexm.codegen.svm_cnn_project import (
    SvmCnnProject,
    feature_extractor,
    feature_spec,
    generate_svm_cnn,
)
from edgenn.backends.cortexm.codegen.svm_project import DEFAULT_STACK_BYTES, SvmConfig
from edgenn.backends.cortexm.emulator.elf import ElfImage
from edgenn.backends.cortexm.targets import get_core
from edgenn.errors import EdgennError
from edgenn.ir import Graph
from edgenn.ir.layout import to_internal
from edgenn.svm.errors import SvmDataError

DEFAULT_BOARD = "mps2-an386"
# why per input: one boot runs the whole scenario; QEMU runs the ~1.4 M-instruction CNN in
# a few ms, so this is a wide margin that still stops a hung firmware
BOOT_SECONDS, SECONDS_PER_INPUT = 60.0, 0.1
_RECORDS = {"inputs": [], "outputs": [{"name": "record", "bytes": RECORD_BYTES}]}


@dataclass(frozen=True)
class Staged:
    """Inputs staged in a script: ``first`` .. ``first + count - 1``."""

    first: int
    count: int


@dataclass
class BoardScript:
    """Inputs and commands for one boot: stage inputs (with labels to learn them), then name
    them in ``learn`` / ``classify`` commands. The whole script must fit the flash left
    after the firmware (about 4 MiB on mps2-an386: ~5,000 MNIST digits)."""

    input_bytes: int
    _index: dict[Any, int]
    _prepare: Any  # inputs in the graph's layout -> the CNN's buffers
    _rows: list[np.ndarray] = field(default_factory=list)
    _labels: list[int] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)

    @property
    def staged(self) -> int:
        return len(self._labels)

    def stage(self, x: npt.ArrayLike, labels: npt.ArrayLike | None = None) -> Staged:
        """Stage inputs ``x`` [N, ...] (the graph's input layout) and their labels (needed to
        learn them)."""
        rows = self._prepare(x)
        if labels is None:
            idx = [0] * len(rows)
        else:
            try:
                idx = [self._index[v] for v in np.asarray(labels).tolist()]
            except KeyError as err:
                raise SvmDataError(f"label {err.args[0]!r} is not one of the device's classes "
                                   f"{list(self._index)}") from None
            if len(idx) != len(rows):
                raise SvmDataError(f"{len(rows)} inputs need {len(rows)} labels, got {len(idx)}")
        first = self.staged
        self._rows.append(rows)
        self._labels += idx
        return Staged(first, len(rows))

    def learn(self, staged: Staged) -> None:
        """Per input: CNN, append with its label; train whenever the buffer fills."""
        self.commands.append(Command(Op.LEARN, staged.first, staged.count))

    def train(self) -> None:
        """Train on what the buffer holds."""
        self.commands.append(Command(Op.TRAIN))

    def classify(self, staged: Staged) -> None:
        """Per input: CNN + vote."""
        self.commands.append(Command(Op.CLASSIFY, staged.first, staged.count))

    def image(self) -> bytes:
        """The staging-area image of the script."""
        rows = (np.concatenate(self._rows) if self._rows
                else np.zeros((0, self.input_bytes), np.uint8))
        return stage_image(self.input_bytes, rows, self._labels, self.commands)

    @property
    def cnn_runs(self) -> int:
        return sum(c.count for c in self.commands)


@dataclass(frozen=True)
class BoardRun:
    """What one boot printed: the votes of each classify command (class labels, in command
    order) and the samples in the buffer after each learn / train command."""

    labels: list[np.ndarray]
    counts: list[int]
    seconds: float = 0.0


class SvmCnnBoard:
    """Build the CNN + SVM firmware for ``board`` (a board QEMU models) and run scripts on it.

    Arguments as :class:`~edgenn.backends.cortexm.svm_cnn_device.SvmCnnDevice`: ``graph`` cut
    at ``feature_tensor``, an SVM layer of ``capacity`` samples over ``classes``, ``C``;
    ``options``: ``tol``, ``max_iter``, ``carry``, ``carry_limit``, ``w``, ``b``, ``core``,
    ``ram_kb``, ``cache_len``, ``kernel_memo``, ``opt``, ``stack_bytes``, ``out_dir``.
    """

    def __init__(self, graph: Graph, feature_tensor: str, capacity: int, classes: Any,
                 C: float = 1.0, *, board: str = DEFAULT_BOARD, tol: float = 1e-3,
                 max_iter: int = 100_000, carry: str = "support_vectors",
                 carry_limit: int | None = None, w: np.ndarray | None = None,
                 b: np.ndarray | None = None, core: str = "cortex-m4",
                 ram_kb: int | None = None, cache_len: int | None = None,
                 kernel_memo: bool | None = None, opt: str = "-O2",
                 stack_bytes: int = DEFAULT_STACK_BYTES,
                 out_dir: str | Path | None = None) -> None:
        self.graph = graph
        self.classes = list(classes)
        self._index = {c: i for i, c in enumerate(self.classes)}
        if len(self._index) != len(self.classes):
            raise SvmDataError(f"classes {self.classes} are not unique")
        cnn = feature_extractor(graph, feature_tensor)
        spec = feature_spec(graph, feature_tensor)
        cfg = SvmConfig(int(capacity), spec.n_features, len(self.classes), float(C),
                        float(tol), int(max_iter), carry, carry_limit, spec.storage,
                        float(np.float32(spec.scale)), spec.zero_point, cache_len, kernel_memo)
        self.board = board
        self.core = get_core(core)
        self._tmp = tempfile.TemporaryDirectory(prefix="edgenn-svm-board-") \
            if out_dir is None else None
        where = Path(self._tmp.name if self._tmp is not None else out_dir)  # type: ignore[arg-type]
        self.project: SvmCnnProject = generate_svm_cnn(
            cnn, cfg, self.core, where, w=w, b=b, ram_kb=ram_kb, opt=opt,
            stack_bytes=stack_bytes, board=board)
        self.config = self.project.config
        assert self.project.cnn is not None
        build_project(self.project.cnn)
        self.elf = build(where, self.project.sources, self.project.cflags,
                         self.project.ldflags)
        self._in_name = cnn.inputs[0]
        self.input_bytes = int(self.project.cnn_input["bytes"])

    @property
    def stage_room(self) -> int:
        """Bytes of flash left after the firmware for the staged script."""
        image = ElfImage(self.elf)
        return image.symbol(STAGE_END) - image.symbol(STAGE_START)

    def stage_bytes(self, inputs: int, commands: int) -> int:
        """Bytes a script of ``inputs`` inputs and ``commands`` commands stages."""
        return script_bytes(self.input_bytes, inputs, commands)

    def script(self) -> BoardScript:
        """An empty script for this firmware."""
        return BoardScript(self.input_bytes, self._index, self._inputs)

    def _inputs(self, x: npt.ArrayLike) -> np.ndarray:
        return to_internal(self.graph, self._in_name, np.asarray(x))

    def run(self, script: BoardScript, timeout: float | None = None) -> BoardRun:
        """Boot the firmware once in QEMU with ``script`` staged; the results of its commands.
        ``timeout`` (seconds) defaults to a margin over the script's CNN runs."""
        import time

        if timeout is None:
            timeout = BOOT_SECONDS + SECONDS_PER_INPUT * script.cnn_runs
        records = sum(c.records for c in script.commands)
        start = time.perf_counter()
        out = run_staged(self.elf, self.board, script.image(), records, _RECORDS, timeout)
        seconds = time.perf_counter() - start
        values = np.frombuffer(b"".join(r[0] for r in out), "<u4").astype(np.int64)
        labels: list[np.ndarray] = []
        counts: list[int] = []
        at = 0
        names = np.asarray(self.classes, dtype=object)
        for c in script.commands:
            got = values[at:at + c.records]
            at += c.records
            if c.op is Op.CLASSIFY:
                if (got >= len(self.classes)).any():
                    raise EdgennError(f"{self.elf}: the firmware voted class index "
                                      f"{int(got.max())} of {len(self.classes)}")
                labels.append(names[got])
            else:
                counts.append(int(got[0]))
        return BoardRun(labels, counts, seconds)

    def memory(self) -> dict[str, int]:
        """Flash and RAM of the board firmware (ELF sections; RAM includes the stack)."""
        image = ElfImage(self.elf)
        stack = (image.symbol("_sstack"), image.symbol("_estack"))
        sizes = image.sizes(stack)
        return {"flash_bytes": sizes["flash_bytes"], "ram_bytes": sizes["ram_bytes"],
                "cnn_arena": int(self.project.manifest["cnn"]["arena_bytes"])}
