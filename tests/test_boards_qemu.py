"""Real boards (mps2-an386, netduinoplus2): the example application around a library boots in
qemu-system-arm and reads its outputs back.

A hand-written toy library (outputs = inputs + 1, checked against numpy) tests the application,
the staging and the error paths; the MLPerf Tiny models are checked bit for bit against
TensorFlow Lite Micro.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgenn.backends.cortexm.boards import BOARDS, app_files, app_sources, get_board
from edgenn.backends.cortexm.boards.qemu import FirmwareError, find_qemu, run_in_qemu
from edgenn.backends.cortexm.build import build
from edgenn.errors import EdgennError, ShapeError, ToolchainError

pytestmark = [
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                       reason="arm-none-eabi-gcc not installed"),
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None,
                       reason="qemu-system-arm not installed"),
]

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models" / "mlperf_tiny"
REAL_BOARDS = [b for b in BOARDS if not get_board(b).is_generic]
CORE_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
STRICT = ["-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I."]

# A library with the generated API: two int8 inputs (5 and 3 bytes), outputs = inputs + 1.
# TOY_FAULT: an input starting with 0x42 reads unmapped memory; TOY_HANG: invoke never returns;
# an input starting with 0x7f makes invoke return TOY_ERROR_INPUT.
TOY_H = """\
#ifndef TOY_H
#define TOY_H
#include <stddef.h>
#include <stdint.h>
#define TOY_OK (0)
#define TOY_ERROR_INPUT (-7)
#define TOY_ARENA_BYTES 16
#define TOY_ARENA_ALIGNMENT 8
#define TOY_INPUT_COUNT 2
#define TOY_OUTPUT_COUNT 2
#define TOY_INPUT0_BYTES 5
#define TOY_INPUT1_BYTES 3
#define TOY_OUTPUT0_BYTES 5
#define TOY_OUTPUT1_BYTES 3
int toy_init(void);
int toy_init_with_arena(uint8_t *arena, size_t bytes);
int toy_invoke(void);
void *toy_input(int index);
void *toy_output(int index);
#endif
"""
TOY_C = """\
#include "toy.h"
static uint8_t storage[TOY_ARENA_BYTES];
static uint8_t *mem;
int toy_init(void) { mem = storage; return TOY_OK; }
int toy_init_with_arena(uint8_t *arena, size_t bytes)
{
    if (bytes < TOY_ARENA_BYTES || ((uintptr_t)arena % TOY_ARENA_ALIGNMENT) != 0u) {
        return -3;
    }
    mem = arena;
    return TOY_OK;
}
void *toy_input(int index) { return index == 0 ? mem : index == 1 ? mem + 5 : NULL; }
void *toy_output(int index) { return index == 0 ? mem + 8 : index == 1 ? mem + 13 : NULL; }
int toy_invoke(void)
{
    for (int b = 0; b < 8; ++b) {
        mem[8 + b] = (uint8_t)(mem[b] + 1u);
    }
#ifdef TOY_FAULT
    if (mem[0] == 0x42u) {
        return (int)*(volatile uint32_t *)0xF0000000u;
    }
#endif
#ifdef TOY_HANG
    for (;;) {
        __asm__ volatile("" ::: "memory");
    }
#endif
    return mem[0] == 0x7Fu ? TOY_ERROR_INPUT : TOY_OK;
}
"""
TOY_MANIFEST = {"name": "toy", "inputs": [{"bytes": 5}, {"bytes": 3}],
                "outputs": [{"bytes": 5}, {"bytes": 3}]}


def build_toy(tmp: Path, board: str, arena: str = "static", define: str = "") -> Path:
    """The toy library and its example application for ``board``, built with strict C99."""
    tmp.mkdir(parents=True, exist_ok=True)
    files = app_files(board, "toy", {**TOY_MANIFEST, "arena": arena}, 1024)
    for name, text in {**files, "toy.h": TOY_H, "toy.c": TOY_C}.items():
        (tmp / name).write_text(text)
    cflags = [*CORE_FLAGS, *STRICT, *([f"-D{define}"] if define else [])]
    ldflags = [*CORE_FLAGS, "-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections",
               "-T", "linker.ld"]
    return build(tmp, [*app_sources(files), "toy.c"], cflags, ldflags)


def toy_items(n: int, seed: int = 0) -> list[list[bytes]]:
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n):
        a = rng.integers(-128, 128, 5, dtype=np.int8)
        a[0] = 1 if a[0] in (0x42, 0x7F) else a[0]  # keep clear of the toy's trigger values
        items.append([a.tobytes(), rng.integers(-128, 128, 3, dtype=np.int8).tobytes()])
    return items


def plus_one(items: list[list[bytes]]) -> list[list[bytes]]:
    return [[(np.frombuffer(t, np.uint8) + np.uint8(1)).astype(np.uint8).tobytes()
             for t in item] for item in items]


# ------------------------------------------------------------------------------ boards
def test_unknown_board_lists_the_known_ones() -> None:
    with pytest.raises(EdgennError, match=r"unknown board 'stm32'.*mps2-an386.*netduinoplus2"):
        get_board("stm32")


@pytest.mark.parametrize("board", REAL_BOARDS)
def test_memory_map_matches_qemu(board: str) -> None:
    """The board's flash, RAM and console UART are where QEMU's machine maps them."""
    b = get_board(board)
    res = subprocess.run([find_qemu(), "-M", str(b.qemu_machine), "-nodefaults", "-display",
                          "none", "-S", "-monitor", "stdio"], input="info mtree -f\nquit\n",
                         capture_output=True, text=True, timeout=30)
    regions = [(int(m[1], 16), int(m[2], 16) + 1, m[3]) for m in re.finditer(
        r"([0-9a-f]{16})-([0-9a-f]{16}) \(prio -?\d+, ([\w/]+)\)", res.stdout)]
    assert b.flash_bytes is not None and b.ram_bytes is not None

    def covered(start: int, size: int, kinds: tuple[str, ...]) -> bool:
        return any(lo <= start and start + size <= hi and kind in kinds
                   for lo, hi, kind in regions)

    assert covered(b.flash_origin, b.flash_bytes, ("rom", "ram"))
    assert covered(b.ram_origin, b.ram_bytes, ("ram",))
    assert covered(b.uart_base, 0x20, ("i/o",))


def test_app_files_check_the_name_and_the_board(tmp_path: Path) -> None:
    with pytest.raises(EdgennError, match="not a C identifier"):
        app_files("mps2-an386", "x); system(", TOY_MANIFEST, 1024)
    with pytest.raises(EdgennError, match="no example application"):
        app_files("generic", "toy", TOY_MANIFEST, 1024)
    hostile = {**TOY_MANIFEST, "inputs": [{"bytes": 5, "name": "evil_tensor_name"}, {}]}
    text = "".join(app_files("netduinoplus2", "toy", hostile, 1024).values())
    assert "evil_tensor_name" not in text


# ------------------------------------------------------------------------------ toy runs
@pytest.mark.parametrize("board", REAL_BOARDS)
@pytest.mark.parametrize("arena", ["static", "external"])
def test_toy_library_runs_on_the_board(tmp_path: Path, board: str, arena: str) -> None:
    elf = build_toy(tmp_path, board, arena)
    items = toy_items(3)
    assert run_in_qemu(elf, board, {**TOY_MANIFEST, "arena": arena}, items, 30) == \
        plus_one(items)


def test_items_beyond_the_staging_area_take_several_boots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgenn.backends.cortexm.boards import qemu

    elf = build_toy(tmp_path, "netduinoplus2")
    real_range, real_boot = qemu._stage_range, qemu._boot
    start = real_range(elf)[0]
    boots: list[int] = []

    def counting_boot(*args: Any) -> list[list[bytes]]:
        boots.append(args[5])  # the boot's item count
        return real_boot(*args)

    # a staging area for the 20-byte header and two 8-byte items
    monkeypatch.setattr(qemu, "_stage_range", lambda e: (start, start + 20 + 2 * 8))
    monkeypatch.setattr(qemu, "_boot", counting_boot)
    items = toy_items(5)
    assert run_in_qemu(elf, "netduinoplus2", TOY_MANIFEST, items, 30) == plus_one(items)
    assert boots == [2, 2, 1]


def test_missing_qemu_is_a_toolchain_error(tmp_path: Path) -> None:
    elf = build_toy(tmp_path, "mps2-an386")
    with pytest.raises(ToolchainError, match=r"qemu-system-arm not found.*apt-get install "
                                             r"qemu-system-arm"):
        run_in_qemu(elf, "mps2-an386", TOY_MANIFEST, toy_items(1), 30, path=str(tmp_path))


def test_fault_is_reported_with_the_function(tmp_path: Path) -> None:
    elf = build_toy(tmp_path, "netduinoplus2", define="TOY_FAULT")
    items = toy_items(2)
    items[1][0] = b"\x42" + items[1][0][1:]
    with pytest.raises(FirmwareError, match=r"fault in toy_invoke: fault HardFault pc=0x08") \
            as err:
        run_in_qemu(elf, "netduinoplus2", TOY_MANIFEST, items, 30)
    assert "\n" not in str(err.value) and "bfar=0xf0000000" in str(err.value)


def test_error_status_is_reported(tmp_path: Path) -> None:
    elf = build_toy(tmp_path, "mps2-an386")
    items = toy_items(1)
    items[0][0] = b"\x7f" + items[0][0][1:]
    with pytest.raises(FirmwareError, match=r"library error: error toy_invoke returned -7"):
        run_in_qemu(elf, "mps2-an386", TOY_MANIFEST, items, 30)


def test_timeout_is_one_line(tmp_path: Path) -> None:
    elf = build_toy(tmp_path, "mps2-an386", define="TOY_HANG")
    start = time.monotonic()
    with pytest.raises(FirmwareError, match=r"no exit within 1.5 s .*'@edgenn boot "
                                            r"mps2-an386'"):
        run_in_qemu(elf, "mps2-an386", TOY_MANIFEST, toy_items(1), 1.5)
    assert time.monotonic() - start < 10


def test_wrong_input_sizes_and_a_foreign_elf(tmp_path: Path) -> None:
    elf = build_toy(tmp_path / "a", "mps2-an386")
    with pytest.raises(ShapeError, match=r"item 0: inputs of \[5, 2\] bytes"):
        run_in_qemu(elf, "mps2-an386", TOY_MANIFEST, [[b"12345", b"12"]], 30)
    # the firmware checks the staged sizes too: a manifest that lies about them
    lying = {**TOY_MANIFEST, "inputs": [{"bytes": 5}, {"bytes": 4}]}
    with pytest.raises(FirmwareError, match=r"bad staged inputs: error staged bytes differ "
                                            r"from the library's for input 1"):
        run_in_qemu(elf, "mps2-an386", lying, [[b"12345", b"1234"]], 30)
    with pytest.raises(EdgennError, match="is not modelled in QEMU"):
        run_in_qemu(elf, "generic", TOY_MANIFEST, toy_items(1), 30)


# ------------------------------------------------------------------------------ models
def _model_on_board(model: str, board: str) -> None:
    from edgenn.api import compile_model, load_model
    from edgenn.ir.sample import random_inputs
    from edgenn.oracles.tflm import tflm_run

    path = MODELS / model
    if not path.exists():
        pytest.skip(f"{path} not available")
    pytest.importorskip("tflite_micro")
    graph = load_model(path)
    exe = compile_model(graph, "cortex-m4", board=board, emulator="qemu", name="net")
    x = random_inputs(graph, 2, seed=1)
    got = exe.run(*x)
    want = tflm_run(path.read_bytes(), *x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert int((g != w).sum()) == 0


def test_kws_on_mps2_an386_equals_tflm() -> None:
    _model_on_board("kws_ref_model.tflite", "mps2-an386")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["pretrainedResnet_quant.tflite", "ad01_int8.tflite",
                                   "vww_96_int8.tflite"])
def test_model_on_mps2_an386_equals_tflm(model: str) -> None:
    _model_on_board(model, "mps2-an386")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["kws_ref_model.tflite", "pretrainedResnet_quant.tflite",
                                   "ad01_int8.tflite", "vww_96_int8.tflite"])
def test_model_on_netduinoplus2_equals_tflm(model: str) -> None:
    _model_on_board(model, "netduinoplus2")


def test_executable_emulator_choice() -> None:
    """--emulator qemu needs a real board; bench stays on the cycle-model emulator."""
    from edgenn.api import compile_model, load_model
    from edgenn.ir.sample import random_inputs

    path = MODELS / "kws_ref_model.tflite"
    if not path.exists():
        pytest.skip(f"{path} not available")
    graph = load_model(path)
    with pytest.raises(EdgennError, match="--emulator qemu runs a real board's example"):
        compile_model(graph, "cortex-m4", emulator="qemu")
    with pytest.raises(EdgennError, match="unknown emulator 'renode'"):
        compile_model(graph, "cortex-m4", emulator="renode", board="mps2-an386")
    exe = compile_model(graph, "cortex-m4", board="netduinoplus2")
    assert exe.emulator == "qemu"  # a real board's default
    with pytest.raises(EdgennError, match="bench counts cycles in edgenn's emulator"):
        exe.bench(*random_inputs(graph))
