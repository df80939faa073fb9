"""The Cortex-M emulator on a small hand-written firmware (tests/fixtures/cortexm/).

The firmware is built here with arm-none-eabi-gcc for each core. Oracles: Python recomputes
the outputs; a per-instruction unicorn hook recounts instructions and cycles one instruction at a
time (independent of the block pricing, block boundaries and the mark bookkeeping);
`arm-none-eabi-size` gives the section sizes.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgenn.backends.cortexm.emulator import EmulatorFault, Machine
from edgenn.backends.cortexm.emulator.cycles import PIPELINE_REFILL, decode, interaction
from edgenn.backends.cortexm.emulator.deps import require
from edgenn.backends.cortexm.targets import Core, get_core
from edgenn.errors import EdgennError, ShapeError

FIXTURES = Path(__file__).parent / "fixtures" / "cortexm"
INSTALL_HINT = "install it with `apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi`"
N_LAYERS = 3

MANIFEST: dict[str, Any] = {
    "core": "cortex-m4",
    "elf": "firmware.elf",
    "arena_symbol": "edgenn_arena",
    "arena_bytes": 128,
    "invoke_symbol": "edgenn_invoke",
    "mark_symbol": "edgenn_mark",
    "main_symbol": "main",
    "stack_bytes": 8192,
    "inputs": [{"name": "x", "offset": 0, "bytes": 64, "shape": [1, 64], "dtype": "int8"}],
    "outputs": [{"name": "y", "offset": 64, "bytes": 12, "shape": [1, 3], "dtype": "int8"}],
    "layers": [{"index": i, "name": f"layer{i}", "op": "Test", "macs": 0, "kernel": "c"}
               for i in range(N_LAYERS)],
}


def build_firmware(out_dir: Path, core: Core) -> Path:
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        pytest.fail(f"arm-none-eabi-gcc not found: {INSTALL_HINT}")
    script = (FIXTURES / "linker.ld.in").read_text()
    script = script.replace("@FLASH_KB@", str(core.flash_kb)).replace("@RAM_KB@", str(core.ram_kb))
    (out_dir / "linker.ld").write_text(script)
    elf = out_dir / "firmware.elf"
    subprocess.run(
        [gcc, *core.cflags, "-O2", "-Wall", "-Wextra", "-Werror", "-ffunction-sections",
         "-fdata-sections", "-Wl,--gc-sections", "-nostartfiles", "--specs=nano.specs",
         "-T", str(out_dir / "linker.ld"),
         *(str(FIXTURES / f) for f in ("startup.c", "firmware.c", "mark.c")), "-o", str(elf)],
        check=True, capture_output=True)
    return elf


@pytest.fixture(scope="module", params=["cortex-m4", "cortex-m7", "cortex-m0plus"])
def firmware(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, Core]:
    core = get_core(request.param)
    return build_firmware(tmp_path_factory.mktemp(core.name), core), core


@pytest.fixture(scope="module")
def m4_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_firmware(tmp_path_factory.mktemp("m4"), get_core("cortex-m4"))


def expected_outputs(x: bytes) -> bytes:
    h = 7  # edgenn_seed, in .data: checks the Reset_Handler copy
    for _ in range(10):
        for b in x:
            h = (h * 31 + b) & 0xFFFFFFFF
    return struct.pack("<3I", sum(x), h, 16 * sum(x))


def with_mode(x: bytes, mode: int) -> bytes:
    return x[:63] + bytes([mode])


def test_outputs_repeated_invokes_all_cores(firmware: tuple[Path, Core]) -> None:
    elf, core = firmware
    machine = Machine(elf, MANIFEST, core)
    rng = np.random.default_rng(0)
    results = []
    for _ in range(5):
        x = bytes(rng.integers(0, 160, 64, dtype=np.uint8))  # last byte < 0xA1: no fault mode
        result = machine.invoke([x])
        assert result.outputs == [expected_outputs(x)]
        results.append(result)
    assert len({r.instructions for r in results}) == 1  # the work does not depend on the data
    first = results[0]
    assert len(first.layer_instructions) == N_LAYERS
    assert all(n > 0 for n in first.layer_instructions)
    assert sum(first.layer_instructions) < first.instructions
    if core.cycle_model:
        assert first.cycles is not None and first.cycles > first.instructions
        assert sum(first.layer_cycles) < first.cycles
        assert len({r.cycles for r in results}) == 1
    else:
        assert first.cycles is None
        assert first.layer_cycles == [0] * N_LAYERS
    # layer 1 does ten times layer 0's loop: its share must show it
    ratio = first.layer_instructions[1] / first.layer_instructions[0]
    assert 8 < ratio < 16
    # layer 2 keeps a 1024-byte array on the stack
    assert 1024 <= first.stack_bytes <= 1024 + 128


class InstructionOracle:
    """Counts instructions and cycles one instruction at a time with a UC_HOOK_CODE hook."""

    def __init__(self, machine: Machine):
        self.mark = machine.elf.symbol("edgenn_mark")
        self.decoded: dict[int, Any] = {}
        self.reset()
        unicorn = require("unicorn")
        machine.board.uc.hook_add(unicorn.UC_HOOK_CODE, self._on_insn)

    def reset(self) -> None:
        self.instructions = self.cycles = 0
        self.prev: Any = None
        self.marks: list[tuple[int, int]] = []

    def _on_insn(self, uc: Any, address: int, size: int, _data: Any) -> None:
        insn = self.decoded.get(address)
        if insn is None:
            (insn,) = decode(bytes(uc.mem_read(address, size)), address)
            self.decoded[address] = insn
        prev = self.prev
        if prev is not None:
            if prev.address + prev.size == address:
                self.cycles += interaction(prev.exit_state, prev.exit_regs, insn)
            elif prev.conditional_branch:
                self.cycles += PIPELINE_REFILL
        if address == self.mark:
            self.marks.append((self.instructions, self.cycles))
        self.instructions += 1
        self.cycles += insn.cost
        self.prev = insn


def test_block_counts_match_a_per_instruction_oracle(m4_elf: Path) -> None:
    machine = Machine(m4_elf, MANIFEST, get_core("cortex-m4"))
    oracle = InstructionOracle(machine)
    x = bytes(range(64))
    result = machine.invoke([x])
    assert result.outputs == [expected_outputs(x)]
    assert result.instructions == oracle.instructions
    assert result.cycles == oracle.cycles
    spans = list(zip(oracle.marks, oracle.marks[1:], strict=False))
    assert result.layer_instructions == [b[0] - a[0] for a, b in spans]
    assert result.layer_cycles == [b[1] - a[1] for a, b in spans]


def test_elf_sizes_match_arm_none_eabi_size(m4_elf: Path) -> None:
    machine = Machine(m4_elf, MANIFEST, get_core("cortex-m4"))
    sizes = machine.elf_sizes()
    out = subprocess.run(["arm-none-eabi-size", "-A", str(m4_elf)], check=True,
                         capture_output=True, text=True).stdout
    section = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
               if line.startswith(".")}
    flash = sum(section.get(s, 0) for s in (".isr_vector", ".text", ".rodata", ".ARM.exidx",
                                            ".data"))
    assert sizes["flash_bytes"] == flash
    assert sizes["ram_bytes"] == section[".data"] + section[".bss"] + 8192
    assert sizes["text"] == section[".text"]
    assert sizes["data"] == section[".data"] and sizes["bss"] == section[".bss"]
    assert sizes["stack"] == 8192


@pytest.mark.parametrize("mode,pattern", [
    (0xA1, r"write to read-only memory at 0x00000000 in crash_null_write \(pc 0x"),
    (0xA2, r"write to unmapped memory at 0x40001000 in crash_unmapped_write \(pc 0x"),
    (0xA3, r"runaway: more than 200,000 instructions in edgenn_invoke, stopped in spin_forever"),
    (0xA4, r"jump to unmapped memory at 0x30000000, called from (call_bad_pointer|edgenn_invoke)"),
    (0xA5, r"in undefined_instruction \(pc 0x"),
    (0xA6, r"HardFault_Handler reached from edgenn_invoke \(pc 0x"),
])
@pytest.mark.parametrize("timed", [True, False], ids=["timed", "untimed"])
def test_faults_name_the_function(m4_elf: Path, mode: int, pattern: str, timed: bool) -> None:
    machine = Machine(m4_elf, MANIFEST, get_core("cortex-m4"), max_instructions=200_000)
    x = bytes(64)
    with pytest.raises(EmulatorFault, match=pattern) as info:
        machine.invoke([with_mode(x, mode)], timed=timed)
    assert "\n" not in str(info.value)
    # the same machine keeps working after a fault
    assert machine.invoke([x], timed=timed).outputs == [expected_outputs(x)]


@pytest.mark.parametrize("timed", [True, False], ids=["timed", "untimed"])
def test_faults_on_small_cores(firmware: tuple[Path, Core], timed: bool) -> None:
    elf, core = firmware
    machine = Machine(elf, MANIFEST, core, max_instructions=200_000)
    with pytest.raises(EmulatorFault, match="in crash_unmapped_write"):
        machine.invoke([with_mode(bytes(64), 0xA2)], timed=timed)
    with pytest.raises(EmulatorFault, match="stopped in spin_forever"):
        machine.invoke([with_mode(bytes(64), 0xA3)], timed=timed)


def test_untimed_runs_compute_what_timed_runs_do(m4_elf: Path) -> None:
    """Switching between untimed (outputs only) and timed runs on one machine, in both
    directions, changes neither the outputs nor the counts: the translation cache is flushed
    at each switch, so no block is left without its cycle callback."""
    machine = Machine(m4_elf, MANIFEST, get_core("cortex-m4"))
    inputs = [bytes((7 * i + k) % 256 for i in range(64)) for k in range(3)]
    timed = [machine.invoke([x]) for x in inputs]
    for x, ref in zip(inputs, timed, strict=True):
        fast = machine.invoke([x], timed=False)
        assert fast.outputs == ref.outputs == [expected_outputs(x)]
        assert fast.cycles is None and fast.instructions == 0
        again = machine.invoke([x])
        assert (again.cycles, again.instructions) == (ref.cycles, ref.instructions)
        assert again.layer_cycles == ref.layer_cycles


def test_bad_inputs_and_symbols(m4_elf: Path) -> None:
    core = get_core("cortex-m4")
    machine = Machine(m4_elf, MANIFEST, core)
    with pytest.raises(ShapeError, match="needs 64 bytes, got 63"):
        machine.invoke([bytes(63)])
    with pytest.raises(ShapeError, match="takes 1 input"):
        machine.invoke([])
    with pytest.raises(EdgennError, match="symbol 'no_such_invoke' not found"):
        Machine(m4_elf, {**MANIFEST, "invoke_symbol": "no_such_invoke"}, core)
    with pytest.raises(EdgennError, match="not a valid ELF"):
        Machine(FIXTURES / "firmware.c", MANIFEST, core)


def test_missing_unicorn_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "unicorn", None)
    with pytest.raises(EdgennError, match="needs the Python package 'unicorn': install it"):
        require("unicorn")


def test_many_invokes_are_fast(m4_elf: Path) -> None:
    machine = Machine(m4_elf, MANIFEST, get_core("cortex-m4"))
    x = bytes(range(64))
    machine.invoke([x])  # price the blocks once
    start = time.perf_counter()
    total = sum(machine.invoke([x]).instructions for _ in range(100))
    rate = total / (time.perf_counter() - start)
    # benchmarks/results/emulator_throughput.json (docs/cortexm.md) measures the rate on real
    # models; this tiny firmware only needs a floor that a loaded CI machine still clears
    assert rate > 1_000_000, f"{rate:.0f} instructions/s"
