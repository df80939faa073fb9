"""The memoised block pricer equals the reference pricer on the blocks of a real firmware.

``price_block_memoised`` classifies each instruction once per process by its encoding and
mnemonic; the reference ``price_block`` decodes every block with capstone's detail mode and
classifies each instruction afresh. Both are run on straight-line windows cut from the
``.text`` of a generated model's ELF (fused model A: unrolled SMLAD code, IT blocks,
PC-relative loads, branches), each window priced at its own address and, to catch anything
address-dependent in the memo, again at another address.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgenn.api import load_model
from edgenn.backends.cortexm.emulator import cycles
from edgenn.backends.cortexm.emulator.faults import EmulatorFault
from edgenn.backends.cortexm.executable import compile_cortexm
from edgenn.passes.fusion import apply_fusion, find_chains

MODEL_A = Path(__file__).resolve().parent / "fixtures" / "tflite" / "model_a_int8.tflite"


def _text(elf: Path) -> tuple[bytes, int]:
    elftools = pytest.importorskip("elftools.elf.elffile")
    with elf.open("rb") as f:
        section = elftools.ELFFile(f).get_section_by_name(".text")
        return section.data(), section["sh_addr"]


def _windows(code: bytes, base: int) -> list[tuple[bytes, int]]:
    """Runs of 1..12 instructions starting at every 3rd instruction of the section."""
    md = cycles._disassembler(False)
    listed: list[tuple[int, int, str, str]] = []
    offset = 0
    while offset < len(code):  # capstone stops at data (vectors, literal pools): step over it
        run = list(md.disasm_lite(code[offset:], base + offset))
        listed += run
        offset += sum(x[1] for x in run) + 2
    out = []
    for i in range(0, len(listed), 3):
        n = 1 + i % 12
        run = listed[i:i + n]
        while len(run) > 1 and run[-1][0] != run[-2][0] + run[-2][1]:
            run = run[:-1]  # contiguous only
        start, end = run[0][0], run[-1][0] + run[-1][1]
        out.append((code[start - base:end - base], start))
    return out


def test_memoised_prices_equal_the_reference_on_a_real_firmware() -> None:
    g = load_model(MODEL_A)
    exe = compile_cortexm(apply_fusion(g, find_chains(g)), "cortex-m4")
    assert exe.elf is not None
    code, base = _text(exe.elf)
    windows = _windows(code, base)
    assert len(windows) > 300
    cycles._classified.clear()  # every instruction classified afresh by this test
    compared = 0
    for block, address in windows:
        try:
            want = cycles.price_block(block, address)
        except EmulatorFault:
            with pytest.raises(EmulatorFault):
                cycles.price_block_memoised(block, address)
            continue
        assert cycles.price_block_memoised(block, address) == want, hex(address)
        # the same bytes elsewhere: memo hits must not carry the first address
        moved = address + 0x1000
        assert cycles.price_block_memoised(block, moved) == cycles.price_block(block, moved)
        compared += 1
    assert compared > 300
    assert any(p[1] > 1 for p in cycles._classified.values())  # loads, branches were seen
