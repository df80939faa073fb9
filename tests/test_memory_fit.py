"""Firmware that does not fit the device's RAM or flash: one line with the bytes needed, the
bytes available and the --ram-kb / --flash-kb / --flash-budget-kb value that fits; rerun with
that value, it builds and runs (outputs against TFLite Micro), and one KiB less still fails.

The models are hand-made float dense layers (``tflite_build``): the weights set the flash, the
input the arena, so each limit is crossed on purpose and nothing else changes.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from tflite_build import Op, T, build

from edgenn.backends.cortexm.boards import BOARDS
from edgenn.backends.cortexm.codegen import templates
from edgenn.backends.cortexm.fit import (
    PROBE_KB,
    Device,
    Usage,
    device_memory,
    fit_problems,
    kib_to_fit,
    probe_script,
)
from edgenn.backends.cortexm.flash_policy import LazySequence, Measured, plan_code_size
from edgenn.backends.cortexm.targets import CORES
from edgenn.errors import EdgennError
from edgenn.frontends.tflite import load_tflite
from tests.cli_errors import error_line

M4 = CORES["cortex-m4"]
FULLY_CONNECTED = 9
needs_firmware = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                                    reason="no arm-none-eabi-gcc")
_NUM = r"([\d,]+)"


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def dense_model(k: int, n: int, seed: int = 0) -> bytes:
    """A float FULLY_CONNECTED [1, k] -> [1, n]: 4 k n bytes of weights, 4 k bytes of input."""
    rng = np.random.default_rng(seed)
    return build([T("x", (1, k)),
                  T("w", (n, k), data=rng.standard_normal((n, k)).astype(np.float32)),
                  T("b", (n,), data=rng.standard_normal(n).astype(np.float32)),
                  T("y", (1, n))],
                 [Op(FULLY_CONNECTED, [0, 1, 2], [3])], [0], [3])


# ------------------------------------------------------------------------- without a build
def test_the_suggested_kib_is_the_smallest_that_holds_the_bytes() -> None:
    assert [kib_to_fit(n) for n in (1, 1024, 1025, 2048, 456_720)] == [1, 1, 2, 2, 447]


def test_the_probe_map_enlarges_flash_and_ram_and_nothing_else() -> None:
    script = templates.linker_script(M4, 48, 2048, flash_kb=96)
    assert "LENGTH = 96K" in script and "LENGTH = 48K" in script
    probe = probe_script(script)
    assert probe.count(f"LENGTH = {PROBE_KB}K") == 2
    assert probe.replace(f"LENGTH = {PROBE_KB}K", "") == \
        script.replace("LENGTH = 96K", "").replace("LENGTH = 48K", "")


def test_a_fraction_of_a_kib_of_flash_is_linked_in_bytes() -> None:
    assert "LENGTH = 1536\n" in templates.linker_script(M4, 64, 2048, flash_kb=1.5)


def test_each_exceeded_limit_is_one_clause_with_its_figures() -> None:
    usage = Usage(flash_bytes=300_000, ram_bytes=40_000, code_bytes=6_000,
                  const_bytes=293_000, stack_bytes=2_048)
    device = Device("cortex-m4", ram_bytes=32 * 1024, flash_bytes=256 * 1024, ram_flag=32)
    ram, flash = fit_problems(usage, device, arena_bytes=37_000)
    assert ram == ("RAM needs 40,000 bytes (arena 37,000 + stack 2,048 + other data 952), "
                   "more than the 32 KiB (32,768 bytes) of RAM of --ram-kb 32: use --ram-kb 40")
    assert flash == ("flash needs 300,000 bytes (code 6,000, constants 293,000), more than "
                     "the 256 KiB (262,144 bytes) of flash of cortex-m4's reference part: "
                     "use --flash-kb 293")
    roomy = Device("cortex-m4", 64 * 1024, 512 * 1024, budget_flag=100)
    assert fit_problems(usage, roomy, 37_000) == [
        "flash needs 300,000 bytes, more than --flash-budget-kb 100 (102,400 bytes): use "
        "--flash-budget-kb 293"]
    assert fit_problems(usage, Device("cortex-m4", 64 * 1024, 512 * 1024), 37_000) == []


def test_a_real_board_has_fixed_memory() -> None:
    board = BOARDS["netduinoplus2"]
    assert device_memory(M4, board, None, None).ram_bytes == 128 * 1024
    assert device_memory(M4, board, 64, None).ram_bytes == 64 * 1024
    with pytest.raises(EdgennError, match="board 'netduinoplus2' has 128 KiB of RAM: --ram-kb "
                                          "256 is more .*--board generic --ram-kb 256"):
        device_memory(M4, board, 256, None)
    usage = Usage((2 << 20) + 1, 1000, 100, 2 << 20, 100)
    (clause,) = fit_problems(usage, device_memory(M4, board, None, None), 0)
    assert "of flash of board netduinoplus2: a larger device is --board generic --flash-kb " \
           "2049" in clause


def test_a_build_that_fits_is_not_emulated() -> None:
    """The flash policy reads a trial build's cycles only to compact part of it."""
    from edgenn.ir import Graph

    def never() -> list[int]:
        raise AssertionError("emulated")

    graph = Graph("empty", {}, [], (), ())
    fits = Measured(1000, LazySequence(never), LazySequence(never))
    assert plan_code_size(graph, lambda c: fits, 2000) == set()


# ------------------------------------------------------------------------------ with a build
def _cli_run(model: Path, tmp_path: Path, *flags: str) -> list[str]:
    x = np.random.default_rng(1).standard_normal((1, *_input_shape(model))).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    return ["run", str(model), "--target", "cortex-m4", "--input", str(tmp_path / "x.npy"),
            "-o", str(tmp_path / "y.npy"), *flags]


def _input_shape(model: Path) -> tuple[int, ...]:
    g = load_tflite(model.read_bytes(), model.stem)
    return tuple(g.tensor(g.inputs[0]).shape[1:])


def _matches_tflm(model: Path, tmp_path: Path) -> None:
    from edgenn.oracles.tflm import tflm_run

    want = tflm_run(model.read_bytes(), np.load(tmp_path / "x.npy"))[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-5, atol=1e-5)


def _fits_only_from(capsys: pytest.CaptureFixture[str], argv: list[str], flag: str,
                    kib: int) -> None:
    """One KiB less than ``flag kib`` is refused again (the value is tight); ``flag kib``
    builds and runs (and writes the outputs)."""
    from edgenn.cli.main import main

    err = error_line(capsys, [*argv, flag, str(kib - 1)])
    assert f"use {flag} {kib}" in err
    assert main([*argv, flag, str(kib)]) == 0


@needs_firmware
def test_ram_overflow_names_the_figures_and_the_ram_that_fits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("unicorn")
    pytest.importorskip("tflite_micro")
    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model(k=2048, n=16))
    argv = _cli_run(model, tmp_path)
    err = error_line(capsys, [*argv, "--ram-kb", "8"])
    m = re.search(rf"RAM needs {_NUM} bytes \(arena {_NUM} \+ stack {_NUM} \+ other data "
                  rf"{_NUM}\), more than the 8 KiB \(8,192 bytes\) of RAM of --ram-kb 8: use "
                  r"--ram-kb (\d+)$", err)
    assert m is not None, err
    need, arena, stack, other = map(_num, m.groups()[:4])
    assert need == arena + stack + other and arena >= 4 * 2048 and stack == 2048
    assert 0 <= other < 1024 and int(m.group(5)) == math.ceil(need / 1024)
    assert "flash" not in err  # only the limit that was crossed
    _fits_only_from(capsys, argv, "--ram-kb", int(m.group(5)))
    _matches_tflm(model, tmp_path)


@needs_firmware
def test_flash_overflow_names_the_figures_and_the_flash_that_fits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("unicorn")
    pytest.importorskip("tflite_micro")
    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model(k=1024, n=32))  # 128 KiB of weights
    argv = _cli_run(model, tmp_path)
    err = error_line(capsys, [*argv, "--flash-kb", "64"])
    m = re.search(rf"flash needs {_NUM} bytes \(code {_NUM}, constants {_NUM}\), more than "
                  r"the 64 KiB \(65,536 bytes\) of flash of --flash-kb 64: use --flash-kb "
                  r"(\d+)$", err)
    assert m is not None, err
    need, code, const = map(_num, m.groups()[:3])
    assert const >= 4 * 1024 * 32 and code + const <= need < code + const + 64
    assert int(m.group(4)) == math.ceil(need / 1024) and "RAM" not in err
    _fits_only_from(capsys, argv, "--flash-kb", int(m.group(4)))
    _matches_tflm(model, tmp_path)


@needs_firmware
def test_an_explicit_flash_budget_is_a_limit_with_its_own_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("unicorn")
    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model(k=512, n=32))  # 64 KiB of weights, far below the device
    argv = _cli_run(model, tmp_path)
    err = error_line(capsys, [*argv, "--flash-budget-kb", "32"])
    m = re.search(rf"flash needs {_NUM} bytes, more than --flash-budget-kb 32 \(32,768 bytes\)"
                  r": use --flash-budget-kb (\d+)$", err)
    assert m is not None, err
    assert int(m.group(2)) == math.ceil(_num(m.group(1)) / 1024)
    _fits_only_from(capsys, argv, "--flash-budget-kb", int(m.group(2)))


@needs_firmware
def test_a_library_only_build_is_checked_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edgenn.backends.cortexm.codegen.project import generate
    from edgenn.backends.cortexm.fit import FitError

    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model(k=2048, n=16))
    err = error_line(capsys, ["compile", str(model), "--target", "cortex-m4", "--library-only",
                              "--ram-kb", "8", "-o", str(tmp_path / "lib")])
    assert re.search(r"RAM needs [\d,]+ bytes .* of RAM of --ram-kb 8: use --ram-kb \d+$", err)
    assert not (tmp_path / "lib" / "libmodel.a").exists()
    # without the flash policy's trial build (nothing is linked): the library's own part
    graph = load_tflite(model.read_bytes(), "dense")
    with pytest.raises(FitError) as info:
        generate(graph, M4, tmp_path / "gen", ram_kb=8, library_only=True)
    arena = _num(re.search(rf"arena of {_NUM} bytes", str(info.value)).group(1))  # type: ignore[union-attr]
    assert f"use --ram-kb {math.ceil((arena + 2048) / 1024)} or more" in str(info.value)


@needs_firmware
def test_a_device_larger_than_the_cores_reference_part_builds_and_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """More flash than the M4's 1 MiB and more RAM than its 256 KiB: the linker script and
    the emulator's memory map follow the flags."""
    pytest.importorskip("unicorn")
    pytest.importorskip("tflite_micro")
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.oracles.tflm import tflm_run

    model = tmp_path / "wide.tflite"
    model.write_bytes(dense_model(k=4096, n=72))  # 1,179,648 bytes of weights
    err = error_line(capsys, _cli_run(model, tmp_path))
    m = re.search(r"of flash of cortex-m4's reference part: use --flash-kb (\d+)$", err)
    assert m is not None and "RAM" not in err, err
    flash_kb = int(m.group(1))
    assert flash_kb > M4.flash_kb
    graph = load_tflite(model.read_bytes(), "wide")
    exe = compile_cortexm(graph, "cortex-m4", out_dir=tmp_path / "fw", ram_kb=300,
                          flash_kb=flash_kb)
    script = (tmp_path / "fw" / "linker.ld").read_text()
    assert f"LENGTH = {flash_kb}K" in script and "LENGTH = 300K" in script
    assert exe.machine.board.ram_bytes == 300 * 1024
    assert exe.machine.board.flash_bytes >= exe.sizes()["flash"] > M4.flash_kb * 1024
    x = np.random.default_rng(2).standard_normal((1, 4096)).astype(np.float32)
    np.testing.assert_allclose(exe.run(x)[0], tflm_run(model.read_bytes(), x)[0],
                               rtol=1e-5, atol=1e-5)


@needs_firmware
def test_the_emulator_maps_the_ram_of_a_smaller_device(tmp_path: Path) -> None:
    pytest.importorskip("unicorn")
    from edgenn.backends.cortexm.executable import compile_cortexm
    from edgenn.backends.ref import compile_ref

    graph = load_tflite(dense_model(k=256, n=8), "small")
    exe = compile_cortexm(graph, "cortex-m4", ram_kb=12)
    assert exe.machine.board.ram_bytes == 12 * 1024
    x = np.random.default_rng(3).standard_normal((2, 256)).astype(np.float32)
    np.testing.assert_allclose(exe.run(x)[0], compile_ref(graph).run(x)[0], rtol=1e-5,
                               atol=1e-5)
