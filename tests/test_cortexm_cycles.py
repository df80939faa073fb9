"""The Cortex-M4 cycle model (../shared/cortex-m4-timing.md) on tiny hand-assembled sequences.

Expected totals are worked out by hand from the rules in that file; most cases run through the
real emulator path (unicorn block hook + pricing + run-time branch/boundary logic), the
straight-line ones also through the static pricer.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from edgenn.backends.cortexm.emulator import run_snippet
from edgenn.backends.cortexm.emulator.cycles import sequence_cycles
from edgenn.backends.cortexm.targets import get_core

INSTALL_HINT = "install it with `apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi`"


def assemble(tmp_path: Path, source: str) -> bytes:
    """Thumb machine code for ``source`` (Cortex-M4 with FPU), via arm-none-eabi-as."""
    if shutil.which("arm-none-eabi-as") is None:
        pytest.fail(f"arm-none-eabi-as not found: {INSTALL_HINT}")
    src = tmp_path / "snippet.s"
    obj = tmp_path / "snippet.o"
    binary = tmp_path / "snippet.bin"
    src.write_text(".syntax unified\n.thumb\n.text\n" + source + "\n")
    subprocess.run(["arm-none-eabi-as", "-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16",
                    str(src), "-o", str(obj)], check=True, capture_output=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", str(obj), str(binary)],
                   check=True, capture_output=True)
    return binary.read_bytes()


def emulated(tmp_path: Path, source: str, **registers: int) -> tuple[int, int]:
    stats = run_snippet(assemble(tmp_path, source), registers=registers)
    return stats.instructions, stats.cycles


# The five examples given in the shared timing file, through both paths.
SHARED_EXAMPLES = [
    ("ldr r0, [r1]\nldr r2, [r1, #4]", 3),
    ("ldr r0, [r1]\nstr r2, [r1, #4]", 3),
    ("ldr r0, [r1]\nldr r2, [r1, #4]\nldr r3, [r1, #8]", 4),
    ("ldr r0, [r1]\nldr r2, [r0]", 4),
    ("add r1, r1, #4\nldr r2, [r1]", 4),
]


@pytest.mark.parametrize("source,cycles", SHARED_EXAMPLES)
def test_shared_file_examples(tmp_path: Path, source: str, cycles: int) -> None:
    code = assemble(tmp_path, source)
    assert sequence_cycles(code) == cycles
    stats = run_snippet(code)
    assert (stats.instructions, stats.cycles) == (source.count("\n") + 1, cycles)


STRAIGHT_LINE = [
    # data processing, multiplies, DSP, SIMD: 1 each
    ("adds r0, #1\neor r1, r2\nlsls r3, r3, #2\nubfx r4, r5, #3, #4\nssat r6, #8, r6\n"
     "usat r7, #8, r7\nclz r8, r9\nrev r0, r0\nsxtb r1, r1\nmovw r2, #1\nmovt r2, #2", 11),
    ("mul r0, r1, r2\nmla r0, r1, r2, r3\nmls r0, r1, r2, r3\nsmull r0, r1, r2, r3\n"
     "umull r0, r1, r2, r3\nsmlal r0, r1, r2, r3\numlal r0, r1, r2, r3", 7),
    ("smlad r0, r1, r2, r3\nsmladx r0, r1, r2, r3\nsmuad r0, r1, r2\nsmlabb r0, r1, r2, r3\n"
     "smlawb r0, r1, r2, r3\nsmmla r0, r1, r2, r3\nsadd16 r0, r1, r2\nssub16 r0, r1, r2\n"
     "sxtb16 r0, r1\nsxtab16 r0, r1, r2\npkhbt r0, r1, r2, lsl #16\npkhtb r0, r1, r2, asr #16\n"
     "qadd r0, r1, r2\nsel r0, r1, r2", 14),
    ("sdiv r0, r1, r2", 12),
    ("udiv r0, r1, r2\nadds r3, #1", 13),
    # loads and stores
    ("ldr r0, [r1]", 2),
    ("ldrb r0, [r1]\nldrsh r2, [r1, #2]\nldrh r3, [r1, #4]\nldrsb r4, [r1, #6]", 5),
    ("str r0, [r1, #4]", 1),
    ("str r0, [r1, r2]", 2),
    ("ldr r3, [r1]\nstr r0, [r1, r2]", 3),  # register-offset store right after a load: 1
    ("str r0, [r1]\nldr r2, [r1]", 3),  # a load after a store does not pipeline
    ("str r0, [r1]\nstr r2, [r1, r3]", 3),  # register-offset store after a store: 2
    ("ldrd r2, r3, [r1]", 3),
    ("strd r2, r3, [r1, #8]", 3),
    ("ldr r0, [r1]\nldrd r2, r3, [r1]", 5),  # LDRD does not pipeline
    ("ldm r1, {r2, r3, r4, r5}", 5),
    ("stmia r1!, {r2, r3}", 3),
    ("push {r4, r5, r6, r7, lr}", 6),
    ("pop {r4, r5, r6, r7}", 5),
    # address-generation stall: base or index written by the previous data processing
    ("adds r2, #1\nldr r0, [r1, r2]", 4),
    ("adds r1, #4\nstr r0, [r1]", 3),
    ("adds r3, #1\nldr r0, [r1]", 3),  # unrelated register: no stall
    ("mul r1, r2, r3\nldr r0, [r1]", 4),  # a multiply counts as data processing
    ("sub sp, #8\nstr r0, [sp]", 3),
    ("adds r2, #1\nldrd r4, r5, [r2]", 5),
    ("ldr r1, [r2]\nldr r0, [r1]", 4),  # a load writing the base: no pipelining, no AGU stall
    # FP (VLDR/VSTR from the shared file; data processing ASSUMED from the TRM)
    ("vldr s0, [r1]", 2),
    ("vldr d0, [r1]", 3),
    ("vstr s0, [r1, #4]", 2),
    ("vpush {s16-s19}", 5),
    ("vpush {d8-d9}", 5),
    ("vldmia r1, {s0-s2}", 4),
    ("vadd.f32 s0, s1, s2\nvmul.f32 s0, s1, s2\nvmov r0, s0\nvcvt.s32.f32 s0, s0", 4),
    ("vdiv.f32 s0, s1, s2", 14),
    ("vsqrt.f32 s0, s1", 14),
    ("vmla.f32 s0, s1, s2", 3),
]


@pytest.mark.parametrize("source,cycles", STRAIGHT_LINE)
def test_straight_line_rules(tmp_path: Path, source: str, cycles: int) -> None:
    code = assemble(tmp_path, source)
    assert sequence_cycles(code) == cycles
    assert run_snippet(code).cycles == cycles


BRANCHES = [
    # (source, instructions, cycles); P = 2
    ("movs r0, #1\ncmp r0, #0\nbeq 1f\nnop\n1:", 4, 4),  # not taken: 1
    ("movs r0, #0\ncmp r0, #0\nbeq 1f\nnop\n1: nop", 4, 1 + 1 + 3 + 1),  # taken: 1 + P
    ("b 1f\nnop\n1: nop", 2, 3 + 1),
    ("movs r0, #0\ncbz r0, 1f\nnop\n1: nop", 3, 1 + 3 + 1),
    ("movs r0, #1\ncbz r0, 1f\nnop\n1: nop", 4, 4),
    ("movs r0, #1\ncbnz r0, 1f\nnop\n1: nop", 3, 1 + 3 + 1),
    ("bl 2f\nb 3f\n2: bx lr\n3:", 3, 3 + 3 + 3),  # BL, BX, B all 1 + P
    ("bl 2f\nb 3f\n2: push {r4, lr}\npop {r4, pc}\n3:", 4, 3 + 3 + (1 + 2 + 2) + 3),
    ("bl 2f\nb 3f\n2: push {lr}\nldr pc, [sp], #4\n3:", 4, 3 + 2 + (2 + 2) + 3),  # LDR pc 2+P
    ("b 1f\n.align 2\n2: bx lr\n1: adr r3, 2b\nadds r3, #1\nblx r3\nnop", 6,
     3 + 1 + 1 + 3 + 3 + 1),
    # TBB: 2 + P, then the chosen case; its index register counts for the AGU stall
    ("movs r0, #1\nnop\ntbb [pc, r0]\n4: .byte (5f - 4b) / 2, (6f - 4b) / 2\n5: nop\n6: nop",
     4, 1 + 1 + 4 + 1),
    ("movs r0, #1\ntbb [pc, r0]\n4: .byte (5f - 4b) / 2, (6f - 4b) / 2\n5: nop\n6: nop",
     3, 1 + (4 + 1) + 1),
    # IT blocks: condition-failed instructions still cost their static cost
    ("movs r0, #1\ncmp r0, #0\nit eq\naddeq r1, #1\nnop", 5, 5),
    ("movs r0, #1\ncmp r0, #0\nite eq\nldreq r2, [r1]\nldrne r3, [r1]", 5, 1 + 1 + 1 + 2 + 1),
    ("movs r0, #1\ncmp r0, #0\nit eq\nbeq 1f\nnop\n1: nop", 6, 6),  # failed branch in IT: 1
    ("movs r0, #0\ncmp r0, #0\nit eq\nbeq 1f\nnop\n1: nop", 5, 1 + 1 + 1 + 3 + 1),
    # a conditional return: `bxeq lr` taken and not taken
    ("bl 2f\nb 3f\n2: cmp r0, r0\nit eq\nbxeq lr\nnop\n3:", 5, 3 + 1 + 1 + 3 + 3),
    ("movs r0, #1\nbl 2f\nb 3f\n2: cmp r0, #0\nit eq\nbxeq lr\nbx lr\n3:", 7,
     1 + 3 + 1 + 1 + 1 + 3 + 3),
]


@pytest.mark.parametrize("source,instructions,cycles", BRANCHES)
def test_branches_through_the_emulator(tmp_path: Path, source: str, instructions: int,
                                       cycles: int) -> None:
    assert emulated(tmp_path, source) == (instructions, cycles)


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_loop_executed_n_times(tmp_path: Path, n: int) -> None:
    # per pass: ldr 2 (first in its block: no neighbour), adds 1, subs 1, bne 3 when taken
    # and 1 on the last pass  ->  4n + 3(n - 1) + 1 = 7n - 2
    source = "1: ldr r0, [r1]\nadds r3, r3, r0\nsubs r2, r2, #1\nbne 1b"
    instructions, cycles = emulated(tmp_path, source, r2=n)
    assert (instructions, cycles) == (4 * n, 7 * n - 2)


@pytest.mark.parametrize("n", [1, 5, 64])
def test_unrolled_mac_loop(tmp_path: Path, n: int) -> None:
    # ldr;ldr pipelined (2 + 1), smlad 1, subs 1, bne 1 + P (1 when it falls out)
    source = "1: ldr r4, [r1], #4\nldr r5, [r6], #4\nsmlad r0, r4, r5, r0\nsubs r2, #1\nbne 1b"
    assert emulated(tmp_path, source, r2=n, r6=0x2000_2000) == (5 * n, 8 * n - 2)


def test_interactions_carry_across_unicorn_block_splits(tmp_path: Path) -> None:
    # unicorn cuts straight-line code at 1 KiB pages; the snippet starts at 0x100, so after
    # 383 nops the next instruction sits at 0x3fe and the one after it at 0x400.
    pad = "nop\n" * 383
    stall = assemble(tmp_path, pad + "adds r1, #4\nldr r0, [r1]")
    assert run_snippet(stall).cycles == sequence_cycles(stall) == 383 + 1 + 2 + 1
    pipelined = assemble(tmp_path, pad + "ldr r0, [r1]\nldr r2, [r1, #4]")
    assert run_snippet(pipelined).cycles == sequence_cycles(pipelined) == 383 + 2 + 1
    store = assemble(tmp_path, pad + "ldr r0, [r1]\nstr r2, [r1, r3]")
    assert run_snippet(store, registers={"r3": 8}).cycles == 383 + 2 + 1


def test_other_cores_count_instructions(tmp_path: Path) -> None:
    code = assemble(tmp_path, "1: adds r3, #1\nsubs r2, #1\nbne 1b")
    stats = run_snippet(code, core=get_core("cortex-m0plus"), registers={"r2": 50})
    assert stats.instructions == 150


def test_a_block_priced_again_at_another_address_costs_the_same() -> None:
    # the emulators of one process share block prices by the code's bytes (candidate builds
    # place the same kernels at other addresses): the shared price, rebased, is the fresh one
    from edgenn.backends.cortexm.emulator.cycles import price_block, price_block_shared

    # ldr r1, [r0]; adds r1, r1, #1; str r1, [r0, #4]; cbz r1, +4 (a conditional exit)
    code = bytes.fromhex("0168" "0131" "4160" "09b1")
    from dataclasses import replace

    def priced(b):  # type: ignore[no-untyped-def]
        # everything but the instructions' text (a branch's shows its first target)
        return replace(b, first=replace(b.first, text=""), last=replace(b.last, text=""))

    first = price_block_shared(code, 0x1000)
    again = price_block_shared(code, 0x2468)
    assert first == price_block(code, 0x1000)
    assert priced(again) == priced(price_block(code, 0x2468))
    assert again.fallthrough == 0x2468 + len(code) and again.cycles == first.cycles
