"""The instruction set: 128-bit LOAD / STORE / GEMM / ALU / FINISH words and 32-bit micro-ops.

Bit layouts follow VTA's ``hw_spec.h``: C bit-fields of ``uint64_t`` (``uint32_t`` for micro-ops)
packed from bit 0, where a field that would straddle a 64-bit unit starts at the next unit (the
GCC / SysV rule; the Chisel decoder's ``empty_0`` padding in the memory instruction is the same
gap). Field widths derive from the configuration's buffer depths, so the layout is computed, not
hard-coded; for the default configuration it is pinned by tests:

* memory: opcode 0-2, deps 3-6, memory_type 7-9, sram_base 10-25, dram_base 26-57,
  (gap 58-63), y_size 64-79, x_size 80-95, x_stride 96-111, y_pad_0/1 112-119, x_pad_0/1 120-127
* GEMM: ..., reset 7, uop_bgn 8-20, uop_end 21-34, iter_out 35-48, iter_in 49-62, (gap 63),
  dst_factor_out/in 64-85, src_factor_out/in 86-107, wgt_factor_out/in 108-127
* ALU: same head, dst/src factors 64-107, alu_opcode 108-110, use_imm 111, imm 112-127 (signed)
* micro-op: dst 0-10, src 11-21, wgt 22-31

Instructions are mutable slotted dataclasses because the runtime folds dependence flags into
the last instruction of a stage after creating it (as VTA's runtime does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Union

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.errors import VtaIsaError

LOOP_ITER_BITS = 14
MEM_SRAM_BITS = 16
MEM_DRAM_BITS = 32
MEM_SIZE_BITS = 16
MEM_STRIDE_BITS = 16
MEM_PAD_BITS = 4
ALU_IMM_BITS = 16


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemType(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


class Stage(IntEnum):
    """The three in-order modules. Lower = earlier in the pipeline ("prev" side)."""

    LOAD = 0
    COMPUTE = 1
    STORE = 2


_HEAD = (("opcode", 3), ("pop_prev", 1), ("pop_next", 1), ("push_prev", 1), ("push_next", 1))


@dataclass(frozen=True)
class Layout:
    """Bit offset and width of every field of one instruction kind."""

    fields: tuple[tuple[str, int, int], ...]  # (name, offset, width)

    def offset(self, name: str) -> int:
        return next(o for n, o, _ in self.fields if n == name)


def _pack(spec: tuple[tuple[str, int], ...], unit: int, total: int) -> Layout:
    out: list[tuple[str, int, int]] = []
    pos = 0
    for name, width in spec:
        if pos // unit != (pos + width - 1) // unit:  # would straddle a storage unit
            pos = (pos // unit + 1) * unit
        out.append((name, pos, width))
        pos += width
    if pos > total:
        raise VtaIsaError(f"instruction fields need {pos} bits, more than {total}")
    return Layout(tuple(out))


@dataclass(frozen=True)
class IsaLayouts:
    mem: Layout
    gemm: Layout
    alu: Layout
    finish: Layout
    uop: Layout


@lru_cache(maxsize=16)
def _layouts(log_uop: int, log_inp: int, log_wgt: int, log_acc: int) -> IsaLayouts:
    mem = _HEAD + (("memory_type", 3), ("sram_base", MEM_SRAM_BITS), ("dram_base", MEM_DRAM_BITS),
                   ("y_size", MEM_SIZE_BITS), ("x_size", MEM_SIZE_BITS),
                   ("x_stride", MEM_STRIDE_BITS), ("y_pad0", MEM_PAD_BITS),
                   ("y_pad1", MEM_PAD_BITS), ("x_pad0", MEM_PAD_BITS), ("x_pad1", MEM_PAD_BITS))
    loops = (("reset", 1), ("uop_bgn", log_uop), ("uop_end", log_uop + 1),
             ("iter_out", LOOP_ITER_BITS), ("iter_in", LOOP_ITER_BITS))
    gemm = _HEAD + loops + (("dst_factor_out", log_acc), ("dst_factor_in", log_acc),
                            ("src_factor_out", log_inp), ("src_factor_in", log_inp),
                            ("wgt_factor_out", log_wgt), ("wgt_factor_in", log_wgt))
    alu = _HEAD + loops + (("dst_factor_out", log_acc), ("dst_factor_in", log_acc),
                           ("src_factor_out", log_acc), ("src_factor_in", log_acc),
                           ("alu_op", 3), ("use_imm", 1), ("imm", ALU_IMM_BITS))
    # hw_spec.h sizes the micro-op's src field by the accumulator depth (it also indexes acc
    # for ALU micro-ops); it must also cover the input buffer for GEMM.
    uop = (("dst", log_acc), ("src", max(log_acc, log_inp)), ("wgt", log_wgt))
    return IsaLayouts(_pack(mem, 64, 128), _pack(gemm, 64, 128), _pack(alu, 64, 128),
                      _pack(_HEAD, 64, 128), _pack(uop, 32, 32))


@lru_cache(maxsize=64)
def _layouts_of(config: VtaConfig) -> IsaLayouts:
    return _layouts(config.log_depth("uop"), config.log_depth("inp"), config.log_depth("wgt"),
                    config.log_depth("acc"))


def layouts(config: VtaConfig | None = None) -> IsaLayouts:
    return _layouts_of(config or _DEFAULT)


_DEFAULT = VtaConfig()


def _encode(layout: Layout, values: tuple[int, ...], what: str) -> int:
    word = 0
    for (name, offset, width), value in zip(layout.fields, values, strict=True):
        v = int(value)
        if v < 0 or v >> width or name == "imm":
            v = _checked(name, v, width, what)
        word |= v << offset
    return word


def _checked(name: str, v: int, width: int, what: str) -> int:
    if name == "imm":
        if not -(1 << (width - 1)) <= v < 1 << (width - 1):
            raise VtaIsaError(f"{what}: imm={v} does not fit {width} signed bits")
        return v & ((1 << width) - 1)  # two's complement
    raise VtaIsaError(f"{what}: {name}={v} does not fit {width} bits")


def _decode(layout: Layout, word: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, offset, width in layout.fields:
        v = (word >> offset) & ((1 << width) - 1)
        if name == "imm" and v >= 1 << (width - 1):
            v -= 1 << width
        out[name] = v
    return out


@dataclass(slots=True)
class MemInsn:
    """LOAD (DRAM -> SRAM, with zero padding) or STORE (out SRAM -> DRAM), a 2-D strided copy.

    ``dram_base`` and ``x_stride`` count elements of the memory type (16 B inp / out, 256 B wgt,
    64 B acc, 4 B uop). SRAM rows are contiguous: row y starts at
    ``sram_base + (y + y_pad0) * (x_pad0 + x_size + x_pad1)``. ``x_size == 0`` is a no-op that
    only moves dependence tokens.
    """

    opcode: Opcode
    mem_type: MemType
    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    y_pad0: int = 0
    y_pad1: int = 0
    x_pad0: int = 0
    x_pad1: int = 0
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False
    stage: Stage = field(init=False, repr=False, compare=False)  # the module that runs it

    def __post_init__(self) -> None:
        if self.opcode == Opcode.STORE:
            self.stage = Stage.STORE
        elif self.mem_type in (MemType.INP, MemType.WGT):
            self.stage = Stage.LOAD
        else:
            self.stage = Stage.COMPUTE

    @property
    def is_nop(self) -> bool:
        return self.x_size == 0

    def encode(self, config: VtaConfig | None = None) -> int:
        values = (self.opcode, self.pop_prev, self.pop_next, self.push_prev, self.push_next,
                  self.mem_type, self.sram_base, self.dram_base, self.y_size, self.x_size,
                  self.x_stride, self.y_pad0, self.y_pad1, self.x_pad0, self.x_pad1)
        return _encode(layouts(config).mem, values, self.opcode.name)

    def __str__(self) -> str:
        if self.is_nop:
            return f"NOP-{self.stage.name}{_deps(self)}"
        pads = (self.y_pad0, self.y_pad1, self.x_pad0, self.x_pad1)
        pad = f" pad={pads}" if any(pads) else ""
        return (f"{self.opcode.name} {self.mem_type.name} sram={self.sram_base} "
                f"dram={self.dram_base} y={self.y_size} x={self.x_size} "
                f"stride={self.x_stride}{pad}{_deps(self)}")


@dataclass(slots=True)
class GemmInsn:
    """``for o < iter_out, i < iter_in, u in [uop_bgn, uop_end)``:
    ``acc[dst] += inp[src] @ wgt[wgt].T`` (``acc[dst] = 0`` when ``reset``), where each index is
    the micro-op's plus ``o * factor_out + i * factor_in``."""

    uop_bgn: int
    uop_end: int
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    reset: bool = False
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    opcode = Opcode.GEMM
    stage = Stage.COMPUTE

    @property
    def uops_executed(self) -> int:
        return self.iter_out * self.iter_in * (self.uop_end - self.uop_bgn)

    def encode(self, config: VtaConfig | None = None) -> int:
        values = (Opcode.GEMM, self.pop_prev, self.pop_next, self.push_prev, self.push_next,
                  self.reset, self.uop_bgn, self.uop_end, self.iter_out, self.iter_in,
                  self.dst_factor_out, self.dst_factor_in, self.src_factor_out,
                  self.src_factor_in, self.wgt_factor_out, self.wgt_factor_in)
        return _encode(layouts(config).gemm, values, "GEMM")

    def __str__(self) -> str:
        kind = "GEMM-RESET" if self.reset else "GEMM"
        return (f"{kind} uop=[{self.uop_bgn},{self.uop_end}) "
                f"out={self.iter_out}x(acc {self.dst_factor_out}, inp {self.src_factor_out}, "
                f"wgt {self.wgt_factor_out}) in={self.iter_in}x(acc {self.dst_factor_in}, "
                f"inp {self.src_factor_in}, wgt {self.wgt_factor_in}){_deps(self)}")


@dataclass(slots=True)
class AluInsn:
    """``acc[dst] = op(acc[dst], imm if use_imm else acc[src])`` over the same loop nest as GEMM.
    SHR shifts right arithmetically (a negative amount shifts left); everything wraps at 32 bits.
    """

    alu_op: AluOp
    uop_bgn: int
    uop_end: int
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    use_imm: bool = False
    imm: int = 0
    reset: bool = False
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    opcode = Opcode.ALU
    stage = Stage.COMPUTE

    @property
    def uops_executed(self) -> int:
        return self.iter_out * self.iter_in * (self.uop_end - self.uop_bgn)

    def encode(self, config: VtaConfig | None = None) -> int:
        values = (Opcode.ALU, self.pop_prev, self.pop_next, self.push_prev, self.push_next,
                  self.reset, self.uop_bgn, self.uop_end, self.iter_out, self.iter_in,
                  self.dst_factor_out, self.dst_factor_in, self.src_factor_out,
                  self.src_factor_in, self.alu_op, self.use_imm, self.imm)
        return _encode(layouts(config).alu, values, f"ALU {AluOp(self.alu_op).name}")

    def __str__(self) -> str:
        operand = f"imm {self.imm}" if self.use_imm else "acc"
        return (f"ALU {AluOp(self.alu_op).name} {operand} uop=[{self.uop_bgn},{self.uop_end}) "
                f"out={self.iter_out}x(dst {self.dst_factor_out}, src {self.src_factor_out}) "
                f"in={self.iter_in}x(dst {self.dst_factor_in}, src {self.src_factor_in})"
                f"{_deps(self)}")


@dataclass(slots=True)
class FinishInsn:
    """Ends the program (the host polls for it)."""

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    opcode = Opcode.FINISH
    stage = Stage.COMPUTE

    def encode(self, config: VtaConfig | None = None) -> int:
        values = (Opcode.FINISH, self.pop_prev, self.pop_next, self.push_prev, self.push_next)
        return _encode(layouts(config).finish, values, "FINISH")

    def __str__(self) -> str:
        return f"FINISH{_deps(self)}"


Insn = Union[MemInsn, GemmInsn, AluInsn, FinishInsn]  # noqa: UP007 (runtime alias)


def _deps(insn: Insn) -> str:
    flags = [name for name in ("pop_prev", "pop_next", "push_prev", "push_next")
             if getattr(insn, name)]
    return f"  [{' '.join(flags)}]" if flags else ""


def decode(word: int, config: VtaConfig | None = None) -> Insn:
    """The instruction a 128-bit word encodes (the inverse of ``encode``)."""
    if not 0 <= word < 1 << 128:
        raise VtaIsaError(f"instruction word {word:#x} is not a 128-bit value")
    lay = layouts(config)
    op = word & 0x7
    if op in (Opcode.LOAD, Opcode.STORE):
        f = _decode(lay.mem, word)
        if f["memory_type"] not in MemType._value2member_map_:
            raise VtaIsaError(f"{Opcode(op).name}: unknown memory type {f['memory_type']}")
        return MemInsn(Opcode(op), MemType(f["memory_type"]), f["sram_base"], f["dram_base"],
                       f["y_size"], f["x_size"], f["x_stride"], f["y_pad0"], f["y_pad1"],
                       f["x_pad0"], f["x_pad1"], *_flags(f))
    if op == Opcode.GEMM:
        f = _decode(lay.gemm, word)
        return GemmInsn(f["uop_bgn"], f["uop_end"], f["iter_out"], f["iter_in"],
                        f["dst_factor_out"], f["dst_factor_in"], f["src_factor_out"],
                        f["src_factor_in"], f["wgt_factor_out"], f["wgt_factor_in"],
                        bool(f["reset"]), *_flags(f))
    if op == Opcode.ALU:
        f = _decode(lay.alu, word)
        if f["alu_op"] not in AluOp._value2member_map_:
            raise VtaIsaError(f"ALU: unknown ALU opcode {f['alu_op']}")
        return AluInsn(AluOp(f["alu_op"]), f["uop_bgn"], f["uop_end"], f["iter_out"],
                       f["iter_in"], f["dst_factor_out"], f["dst_factor_in"],
                       f["src_factor_out"], f["src_factor_in"], bool(f["use_imm"]), f["imm"],
                       bool(f["reset"]), *_flags(f))
    if op == Opcode.FINISH:
        return FinishInsn(*_flags(_decode(lay.finish, word)))
    raise VtaIsaError(f"unknown opcode {op} in instruction word {word:#034x}")


def _flags(f: dict[str, int]) -> tuple[bool, bool, bool, bool]:
    return bool(f["pop_prev"]), bool(f["pop_next"]), bool(f["push_prev"]), bool(f["push_next"])


def encode_program(insns: list[Insn], config: VtaConfig | None = None) -> bytes:
    """The instruction buffer the fetch module reads: 16 little-endian bytes per instruction."""
    return b"".join(i.encode(config).to_bytes(16, "little") for i in insns)


def decode_program(data: bytes, config: VtaConfig | None = None) -> list[Insn]:
    if len(data) % 16:
        raise VtaIsaError(f"instruction buffer of {len(data)} bytes is not a multiple of 16")
    return [decode(int.from_bytes(data[i:i + 16], "little"), config)
            for i in range(0, len(data), 16)]


# ----- micro-ops -----
@dataclass(frozen=True, slots=True)
class Uop:
    """One micro-op: accumulator index, input index (acc index for ALU), weight index."""

    dst: int
    src: int
    wgt: int = 0

    def encode(self, config: VtaConfig | None = None) -> int:
        return _encode(layouts(config).uop, (self.dst, self.src, self.wgt), "micro-op")


def decode_uop(word: int, config: VtaConfig | None = None) -> Uop:
    f = _decode(layouts(config).uop, word)
    return Uop(f["dst"], f["src"], f["wgt"])


def uop_fields(config: VtaConfig | None = None) -> tuple[tuple[int, int], ...]:
    """(offset, width) of dst, src, wgt: what the simulator needs to unpack micro-op words."""
    return tuple((o, w) for _, o, w in layouts(config).uop.fields)
