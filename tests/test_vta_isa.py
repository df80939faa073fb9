"""VTA instruction set: bit layouts pinned to hw_spec.h, encode / decode round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.errors import VtaIsaError
from edgenn.backends.vta.isa import (
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    MemInsn,
    MemType,
    Opcode,
    Stage,
    Uop,
    decode,
    decode_program,
    decode_uop,
    encode_program,
    layouts,
)

CONFIG = VtaConfig()
FLAGS = st.booleans()


def offsets(kind: str) -> dict[str, tuple[int, int]]:
    return {n: (o, w) for n, o, w in getattr(layouts(), kind).fields}


def test_memory_instruction_layout_matches_hw_spec() -> None:
    f = offsets("mem")
    assert f["opcode"] == (0, 3) and f["push_next"] == (6, 1)
    assert f["memory_type"] == (7, 3) and f["sram_base"] == (10, 16)
    assert f["dram_base"] == (26, 32)
    # 58 + 16 would straddle the first 64-bit word: y_size starts the second (Chisel's empty_0)
    assert f["y_size"] == (64, 16) and f["x_size"] == (80, 16) and f["x_stride"] == (96, 16)
    assert f["y_pad0"] == (112, 4) and f["x_pad1"] == (124, 4)


def test_gemm_and_alu_layouts_match_hw_spec() -> None:
    g = offsets("gemm")
    assert g["reset"] == (7, 1) and g["uop_bgn"] == (8, 13) and g["uop_end"] == (21, 14)
    assert g["iter_out"] == (35, 14) and g["iter_in"] == (49, 14)
    assert g["dst_factor_out"] == (64, 11) and g["src_factor_out"] == (86, 11)
    assert g["wgt_factor_out"] == (108, 10) and g["wgt_factor_in"] == (118, 10)
    a = offsets("alu")
    assert a["src_factor_in"] == (97, 11)
    assert a["alu_op"] == (108, 3) and a["use_imm"] == (111, 1) and a["imm"] == (112, 16)
    assert offsets("uop") == {"dst": (0, 11), "src": (11, 11), "wgt": (22, 10)}


def test_layout_follows_buffer_sizes() -> None:
    small = VtaConfig(log_wgt_buff_size=17, log_uop_buff_size=14)  # 512 tiles, 4096 micro-ops
    assert {n: w for n, _, w in layouts(small).uop.fields} == {"dst": 11, "src": 11, "wgt": 9}
    assert dict((n, w) for n, _, w in layouts(small).gemm.fields)["uop_bgn"] == 12
    insn = GemmInsn(4095, 4096, 1, 1, wgt_factor_out=511)
    assert decode(insn.encode(small), small) == insn
    with pytest.raises(VtaIsaError, match="uop_bgn=4095 does not fit 13|wgt_factor_out"):
        GemmInsn(0, 1, wgt_factor_out=1024).encode(CONFIG)
    # 4096 accumulators need 12-bit ALU factors: 4 x 12 + 20 bits overflow the second word
    with pytest.raises(VtaIsaError, match="more than 128"):
        layouts(VtaConfig(log_acc_buff_size=18))


def test_known_word() -> None:
    insn = MemInsn(Opcode.LOAD, MemType.WGT, sram_base=2, dram_base=3, y_size=4, x_size=5,
                   x_stride=6, push_next=True)
    word = insn.encode()
    assert word & 0x7 == Opcode.LOAD and (word >> 6) & 1 == 1 and (word >> 7) & 0x7 == 1
    assert (word >> 10) & 0xFFFF == 2 and (word >> 26) & 0xFFFFFFFF == 3
    assert (word >> 64) & 0xFFFF == 4 and (word >> 80) & 0xFFFF == 5 and (word >> 96) & 0xFFFF == 6


@given(st.sampled_from([Opcode.LOAD, Opcode.STORE]), st.sampled_from(list(MemType)),
       st.integers(0, 2**16 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1),
       st.integers(0, 2**16 - 1), st.integers(0, 2**16 - 1),
       st.tuples(*[st.integers(0, 15)] * 4), st.tuples(*[FLAGS] * 4))
def test_memory_round_trip(op: Opcode, mem: MemType, sram: int, dram: int, y: int, x: int,
                           stride: int, pads: tuple[int, ...], flags: tuple[bool, ...]) -> None:
    insn = MemInsn(op, mem, sram, dram, y, x, stride, *pads, *flags)
    back = decode(insn.encode())
    assert back == insn and isinstance(back, MemInsn) and back.stage == insn.stage


@given(st.integers(0, 2**13 - 1), st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1),
       st.integers(0, 2**14 - 1), st.lists(st.integers(0, 2**11 - 1), min_size=4, max_size=4),
       st.lists(st.integers(0, 2**10 - 1), min_size=2, max_size=2), FLAGS,
       st.tuples(*[FLAGS] * 4))
def test_gemm_round_trip(bgn: int, end: int, it_out: int, it_in: int, acc_inp: list[int],
                         wgt: list[int], reset: bool, flags: tuple[bool, ...]) -> None:
    insn = GemmInsn(bgn, end, it_out, it_in, *acc_inp, *wgt, reset, *flags)
    assert decode(insn.encode()) == insn


@given(st.sampled_from(list(AluOp)), st.integers(0, 2**13 - 1), st.integers(0, 2**14 - 1),
       st.lists(st.integers(0, 2**11 - 1), min_size=4, max_size=4), FLAGS,
       st.integers(-(2**15), 2**15 - 1), st.tuples(*[FLAGS] * 4))
def test_alu_round_trip(op: AluOp, bgn: int, end: int, factors: list[int], use_imm: bool,
                        imm: int, flags: tuple[bool, ...]) -> None:
    insn = AluInsn(op, bgn, end, 3, 7, *factors, use_imm, imm, False, *flags)
    assert decode(insn.encode()) == insn


@given(st.integers(0, 2**11 - 1), st.integers(0, 2**11 - 1), st.integers(0, 2**10 - 1))
def test_uop_round_trip(dst: int, src: int, wgt: int) -> None:
    uop = Uop(dst, src, wgt)
    word = uop.encode()
    assert word < 2**32 and decode_uop(word) == uop
    assert word == dst | src << 11 | wgt << 22


def test_program_round_trip_and_stages() -> None:
    program = [
        MemInsn(Opcode.LOAD, MemType.UOP, 0, 10, 1, 4, 4),
        MemInsn(Opcode.LOAD, MemType.INP, 0, 20, 2, 3, 5, 1, 1, 0, 2, push_next=True),
        GemmInsn(0, 4, 2, 3, 1, 2, 3, 4, 5, 6, pop_prev=True, push_next=True),
        AluInsn(AluOp.SHR, 0, 1, 1, 1, 0, 0, 0, 0, True, -3),
        MemInsn(Opcode.STORE, MemType.OUT, 0, 30, 1, 1, 1, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    data = encode_program(program)
    assert len(data) == 16 * len(program)
    assert decode_program(data) == program
    assert [i.stage for i in program] == [Stage.COMPUTE, Stage.LOAD, Stage.COMPUTE,
                                          Stage.COMPUTE, Stage.STORE, Stage.COMPUTE]


@pytest.mark.parametrize("insn, message", [
    (MemInsn(Opcode.LOAD, MemType.INP, 1 << 16, 0, 1, 1, 1), "LOAD: sram_base=65536"),
    (MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 1, 1, y_pad0=16), "y_pad0=16 does not fit 4"),
    (GemmInsn(0, 1, iter_out=1 << 14), "GEMM: iter_out=16384 does not fit 14 bits"),
    (AluInsn(AluOp.ADD, 0, 1, use_imm=True, imm=1 << 15), "imm=32768 does not fit 16 signed"),
    (AluInsn(AluOp.ADD, 0, 1, use_imm=True, imm=-(1 << 15) - 1), "imm=-32769"),
])
def test_out_of_range_fields_are_one_line_errors(insn: object, message: str) -> None:
    with pytest.raises(VtaIsaError, match=message) as err:
        insn.encode()  # type: ignore[attr-defined]
    assert "\n" not in str(err.value)


def test_bad_words() -> None:
    with pytest.raises(VtaIsaError, match="unknown opcode 5"):
        decode(5)
    with pytest.raises(VtaIsaError, match="unknown memory type 6"):
        decode(Opcode.LOAD | 6 << 7)
    with pytest.raises(VtaIsaError, match="unknown ALU opcode 7"):
        decode(Opcode.ALU | 7 << 108)
    with pytest.raises(VtaIsaError, match="not a 128-bit value"):
        decode(1 << 128)
    with pytest.raises(VtaIsaError, match="not a multiple of 16"):
        decode_program(b"\0" * 17)


def test_disassembly_is_readable() -> None:
    text = str(GemmInsn(0, 16, 4, 16, 1, 16, 16, 1, 4, 0, pop_prev=True))
    assert text.startswith("GEMM uop=[0,16)") and "[pop_prev]" in text
    assert str(MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 0, 0, 0)) == "NOP-STORE"
