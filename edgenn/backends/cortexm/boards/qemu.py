"""Run a board's example application (``app.py``) in Debian's qemu-system-arm: stage the inputs
in flash, boot once, read the outputs back from the console UART."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgenn.backends.cortexm.boards.app import (
    EXIT_BAD_STAGE,
    EXIT_FAULT,
    EXIT_LIBRARY_ERROR,
    OUTPUT_PREFIX,
    STAGE_MAGIC,
)
from edgenn.backends.cortexm.boards.board import Board, get_board
from edgenn.backends.cortexm.boards.startup import STAGE_END, STAGE_START
from edgenn.errors import EdgennError, ShapeError, ToolchainError

QEMU = "qemu-system-arm"
DEBIAN_PACKAGE = "qemu-system-arm"
DEFAULT_TIMEOUT = 120.0  # seconds for one boot running every input
_EXIT_MEANING = {EXIT_LIBRARY_ERROR: "library error", EXIT_BAD_STAGE: "bad staged inputs",
                 EXIT_FAULT: "fault"}
_REPORT = re.compile(r"@edgenn (error|fault) .*")
_PC = re.compile(r"\bpc=(0x[0-9a-f]+)")


class FirmwareError(EdgennError):
    """The example application failed in QEMU: a fault, an error status, or no exit in time."""


def find_qemu(path: str | None = None) -> str:
    """The full path of qemu-system-arm (searched in ``path``, default $PATH), or
    ToolchainError naming the Debian package."""
    found = shutil.which(QEMU, path=path if path is not None else os.environ.get("PATH"))
    if found is None:
        raise ToolchainError(f"{QEMU} not found: install it with "
                             f"`apt-get install {DEBIAN_PACKAGE}`")
    return found


def stage_image(manifest: Mapping[str, Any], inputs: Sequence[Sequence[bytes]]) -> bytes:
    """The staging-area image (layout in ``app.py``) of ``inputs[item][k]``; ShapeError when
    an item does not have the library's input count or byte sizes."""
    sizes = _check_sizes(manifest, inputs)
    header = struct.pack(f"<3I{len(sizes)}I", STAGE_MAGIC, len(inputs), len(sizes), *sizes)
    return header + b"".join(b"".join(bytes(t) for t in tensors) for tensors in inputs)


def _check_sizes(manifest: Mapping[str, Any], inputs: Sequence[Sequence[bytes]]) -> list[int]:
    """The library's input sizes; ShapeError for an item that does not have them."""
    sizes = [int(entry["bytes"]) for entry in manifest["inputs"]]
    for item, tensors in enumerate(inputs):
        got = [len(t) for t in tensors]
        if got != sizes:
            raise ShapeError(f"item {item}: inputs of {got} bytes; the library "
                             f"{manifest.get('name', '')!r} takes {sizes} bytes")
    return sizes


def qemu_command(qemu: str, board: Board, elf: Path, stage: Path, stage_addr: int) -> list[str]:
    """The command line: no default devices or display, serial port 0 (the console UART) on
    stdout, semihosting for the exit, the ELF as the kernel, the staged inputs as a raw blob."""
    assert board.qemu_machine is not None
    return [qemu, "-M", board.qemu_machine, "-nodefaults", "-display", "none",
            "-serial", "stdio", "-semihosting-config", "enable=on,target=native",
            "-kernel", str(elf),
            "-device", f"loader,file={stage},addr=0x{stage_addr:08x},force-raw=on"]


def run_in_qemu(elf: str | Path, board: str | Board, manifest: Mapping[str, Any],
                inputs: Sequence[Sequence[bytes]], timeout: float = DEFAULT_TIMEOUT,
                path: str | None = None) -> list[list[bytes]]:
    """Run every item of ``inputs`` (``inputs[item][k]``: the bytes of input k) on the example
    application ``elf`` built for ``board``; returns ``outputs[item][k]``.

    One boot runs as many items as the flash left after the image can stage (all of them,
    unless there are very many). Raises ToolchainError when qemu-system-arm is missing
    (``path`` overrides $PATH), FirmwareError (one line) on a timeout (``timeout`` seconds per
    boot), a fault or a non-zero exit status.
    """
    b, qemu, elf, (start, end) = _prepare(elf, board, path)
    sizes = _check_sizes(manifest, inputs)  # every item, before the first boot
    header = len(stage_image(manifest, []))
    item_bytes = max(1, sum(sizes))
    per_boot = (end - start - header) // item_bytes
    if per_boot < 1:
        raise EdgennError(f"{elf}: one input item needs {header + item_bytes:,} bytes of "
                          f"staging area; {b.name} has {end - start:,} bytes of flash left "
                          "after the image")
    outputs: list[list[bytes]] = []
    for first in range(0, len(inputs), per_boot):
        chunk = inputs[first:first + per_boot]
        outputs += _boot(qemu, b, elf, start, stage_image(manifest, chunk), len(chunk),
                         manifest, timeout)
    return outputs


def run_staged(elf: str | Path, board: str | Board, image: bytes, items: int,
               manifest: Mapping[str, Any], timeout: float = DEFAULT_TIMEOUT,
               path: str | None = None) -> list[list[bytes]]:
    """One boot of an application that reads its own staging layout: ``image`` is written to
    the staging area as it is, and the application prints ``items`` items of
    ``manifest["outputs"]`` (``@out ITEM K HEX`` lines, then ``@edgenn done``); returns
    ``outputs[item][k]``. EdgennError when ``image`` does not fit the staging area; otherwise
    as :func:`run_in_qemu`."""
    b, qemu, elf, (start, end) = _prepare(elf, board, path)
    if len(image) > end - start:
        raise EdgennError(f"{elf}: {len(image):,} bytes to stage; {b.name} has "
                          f"{end - start:,} bytes of flash left after the image")
    return _boot(qemu, b, elf, start, image, items, manifest, timeout)


def _prepare(elf: str | Path, board: str | Board,
             path: str | None) -> tuple[Board, str, Path, tuple[int, int]]:
    """The board (EdgennError unless QEMU models it), qemu-system-arm, the ELF and its
    staging area."""
    b = get_board(board)
    if b.qemu_machine is None:
        raise EdgennError(f"board {b.name!r} is not modelled in QEMU: use the emulator")
    qemu = find_qemu(path)
    return b, qemu, Path(elf), _stage_range(Path(elf))


def _boot(qemu: str, board: Board, elf: Path, stage_addr: int, image: bytes, items: int,
          manifest: Mapping[str, Any], timeout: float) -> list[list[bytes]]:
    """One QEMU run of the staged ``image``: the outputs of its ``items``."""
    with tempfile.TemporaryDirectory(prefix="edgenn-qemu-") as tmp:
        stage = Path(tmp) / "stage.bin"
        stage.write_bytes(image)
        cmd = qemu_command(qemu, board, elf, stage, stage_addr)
        try:
            res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise FirmwareError(f"{elf}: no exit within {timeout:g} s in QEMU {board.name} "
                                f"(last console line: {_last_line(_text(err.stdout))!r})"
                                ) from None
    console = _text(res.stdout)
    if res.returncode != 0:
        raise FirmwareError(_failure(elf, board, res.returncode, console, _text(res.stderr)))
    return _outputs(elf, console, items, manifest)


def _stage_range(elf: Path) -> tuple[int, int]:
    from edgenn.backends.cortexm.emulator.elf import ElfImage

    image = ElfImage(elf)
    try:
        return image.symbol(STAGE_START), image.symbol(STAGE_END)
    except EdgennError:
        raise EdgennError(f"{elf}: not a board example application (no {STAGE_START} "
                          "symbol); build it with --board") from None


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _failure(elf: Path, board: Board, status: int, console: str, stderr: str) -> str:
    """One line: the firmware's own report when it made one, else QEMU's error."""
    reports = [m.group(0) for m in map(_REPORT.search, console.splitlines()) if m]
    if reports:
        report = reports[-1].removeprefix("@edgenn ")
        pc = _PC.search(report)
        where = f" in {_function_at(elf, int(pc.group(1), 16))}" if pc else ""
        meaning = _EXIT_MEANING.get(status, "error")
        return f"{elf}: firmware on {board.name} (QEMU) stopped, {meaning}{where}: {report}"
    if "@edgenn boot" not in console:
        errors = [ln.strip() for ln in stderr.splitlines()
                  if ln.strip() and "warning:" not in ln]
        return (f"{elf}: {QEMU} -M {board.qemu_machine} failed with status {status}: "
                f"{errors[0] if errors else 'no message'}")
    return (f"{elf}: firmware on {board.name} (QEMU) exited with status {status} "
            f"(last console line: {_last_line(console)!r})")


def _function_at(elf: Path, pc: int) -> str:
    from edgenn.backends.cortexm.emulator.elf import ElfImage

    try:
        return ElfImage(elf).function_at(pc & ~1)
    except EdgennError:
        return f"0x{pc:08x}"


def _outputs(elf: Path, console: str, items: int,
             manifest: Mapping[str, Any]) -> list[list[bytes]]:
    """``outputs[item][k]`` from the ``@out item k hex`` lines; FirmwareError if one is
    missing, repeated or of the wrong size."""
    sizes = [int(entry["bytes"]) for entry in manifest["outputs"]]
    found: dict[tuple[int, int], bytes] = {}
    for line in console.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[0] != OUTPUT_PREFIX:
            continue
        try:
            key, data = (int(parts[1]), int(parts[2])), bytes.fromhex(parts[3])
        except ValueError:
            raise FirmwareError(f"{elf}: unreadable console line {line.strip()!r}") from None
        if not (0 <= key[0] < items and 0 <= key[1] < len(sizes)) or key in found \
                or len(data) != sizes[key[1]]:
            raise FirmwareError(f"{elf}: unexpected console line {line.strip()[:80]!r} "
                                f"(output sizes {sizes}, {items} items)")
        found[key] = data
    if "@edgenn done" not in console or len(found) != items * len(sizes):
        raise FirmwareError(f"{elf}: the firmware printed {len(found)} of "
                            f"{items * len(sizes)} outputs (last console line: "
                            f"{_last_line(console)!r})")
    return [[found[(i, k)] for k in range(len(sizes))] for i in range(items)]
