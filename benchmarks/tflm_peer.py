"""TFLite Micro + CMSIS-NN, the peer, on the operator fixtures: run its firmware beside edgenn.

The ELFs of ``shared/baselines/tflm_cmsis_nn_m4/`` (their README is the protocol) are one
firmware per fixture model, ``MODELSTEM.elf``:

- the input is written into RAM at ``INPUT_ADDRESS`` before reset, one inference per run;
- ``edgenn_mark(0)`` / ``edgenn_mark(1)`` bracket ``Invoke()``; the ``_opprof`` twin also calls
  ``edgenn_mark(2)`` / ``edgenn_mark(3)`` around every operator, in the model's operator order;
- the run ends when the PC reaches ``edgenn_halt``; ``edgenn_info`` then holds status, arena
  used, input bytes, output bytes and the two TfLiteTypes; the output is at ``OUTPUT_ADDRESS``.

Where the firmware as built cannot allocate the model (status 3), the folder holds a patched
firmware, ``MODELSTEM__<what changed>.elf``, which its README explains; :func:`peer_firmware`
then returns that one, and the row says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

import numpy as np

from edgenn.backends.cortexm.emulator import Firmware
from edgenn.errors import EdgennError
from edgenn.frontends.tflite.dispatch import op_type_name
from edgenn.frontends.tflite.reader import read_tflite

INPUT_ADDRESS = 0x2006_8000
OUTPUT_ADDRESS = 0x2007_0000
CORE = "cortex-m4"
STATUS = {0: "ok", 1: "schema version", 2: "op registration", 3: "AllocateTensors",
          4: "I/O size", 5: "Invoke"}


@dataclass(frozen=True)
class PeerRun:
    cycles: int
    arena_bytes: int
    output: np.ndarray
    op_cycles: tuple[int, ...] = ()  # per operator (the _opprof firmware), model order


@dataclass
class PeerResult:
    """The peer on one model: which firmware, its median cycles, per-operator cycles."""

    elf: str
    cycles: int
    arena_bytes: int
    flash_bytes: int
    outputs: list[np.ndarray]
    op_cycles: tuple[int, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)  # firmware -> why it cannot run


def run_once(elf: Path, x: np.ndarray, out_dtype: np.dtype, *, opprof: bool = False) -> PeerRun:
    """One inference of ``elf`` on ``x`` (one sample's raw bytes)."""
    fw = Firmware(elf, CORE, mark_symbol="edgenn_mark", halt_symbol="edgenn_halt")
    fw.write(INPUT_ADDRESS, np.ascontiguousarray(x).tobytes())
    run = fw.run()
    info = [int.from_bytes(fw.read("edgenn_info", 4, 4 * k), "little") for k in range(6)]
    if not run.halted or info[0] != 0:
        raise EdgennError(f"{elf.name}: status {info[0]} ({STATUS.get(info[0], '?')})")
    output = np.frombuffer(bytes(fw.board.uc.mem_read(OUTPUT_ADDRESS, info[3])), out_dtype)
    ops: list[int] = []
    if opprof:
        start = None
        for arg, _n, cycles in run.marks:
            if arg == 2:
                start = cycles
            elif arg == 3 and start is not None:
                ops.append(cycles - start)
                start = None
    return PeerRun(run.cycles_between(0, 1), info[1], output.copy(), tuple(ops))


def peer_firmware(folder: Path, stem: str) -> list[Path]:
    """The firmware for ``stem``: the plain one first, then the patched stand-ins."""
    plain = folder / f"{stem}.elf"
    patched = sorted(p for p in folder.glob(f"{stem}__*.elf") if not p.stem.endswith("_opprof"))
    return ([plain] if plain.exists() else []) + patched


def run_peer(folder: Path, stem: str, xs: np.ndarray,
             out_dtype: np.dtype) -> PeerResult | None:
    """The peer on every sample of ``xs`` (first axis); None when the folder has no firmware
    for ``stem``. The first firmware that runs is used; the ones that fail are listed."""
    failed: dict[str, str] = {}
    for elf in peer_firmware(folder, stem):
        try:
            runs = [run_once(elf, x, out_dtype) for x in xs]
        except EdgennError as err:
            failed[elf.name] = str(err).split(": ", 1)[-1]
            continue
        prof = elf.with_name(f"{elf.stem}_opprof.elf")
        op_cycles = run_once(prof, xs[0], out_dtype, opprof=True).op_cycles \
            if prof.exists() else ()
        return PeerResult(elf.name, int(median(r.cycles for r in runs)), runs[0].arena_bytes,
                          int(Firmware(elf, CORE, mark_symbol="edgenn_mark").sizes()
                              ["flash_bytes"]),
                          [r.output for r in runs], op_cycles, failed)
    if failed:
        return PeerResult(next(iter(failed)), 0, 0, 0, [], (), failed)
    return None


def operator_outputs(model: bytes, name: str) -> list[tuple[str, str]]:
    """(operator type, output tensor name) of every operator of the model's main subgraph, in
    order: what the ``_opprof`` marks count, to line up with edgenn's layers by tensor name."""
    raw = read_tflite(model, name)
    return [(op_type_name(op.opcode, op.custom_code),
             raw.tensors[op.outputs[0]].name if op.outputs else "")
            for op in raw.operators]
