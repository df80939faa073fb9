"""What the emulator reads from a firmware ELF: loadable segments, symbols, section sizes."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from edgenn.backends.cortexm.emulator.deps import require
from edgenn.errors import EdgennError

_SHF_WRITE = 0x1
_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4


@dataclass(frozen=True)
class Segment:
    """A PT_LOAD segment: ``data`` goes to ``paddr`` (its load address: flash for .data)."""

    paddr: int
    data: bytes
    memsz: int


@dataclass(frozen=True)
class SizedSymbol:
    """A FUNC or OBJECT symbol with its size (``st_size``): what flash attribution adds up."""

    name: str
    address: int  # Thumb bit cleared for functions
    size: int
    kind: str  # "func" or "object"
    local: bool  # STB_LOCAL (a static function or array)


class ElfImage:
    """A parsed firmware ELF. Thumb function symbols are stored with the Thumb bit cleared."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        elffile_mod = require("elftools.elf.elffile")
        exceptions_mod = require("elftools.common.exceptions")
        try:
            with open(self.path, "rb") as f:
                elf = elffile_mod.ELFFile(f)
                if elf["e_machine"] != "EM_ARM":
                    raise EdgennError(f"{self.path}: not an ARM ELF ({elf['e_machine']})")
                self.segments = [
                    Segment(seg["p_paddr"], seg.data(), seg["p_memsz"])
                    for seg in elf.iter_segments()
                    if seg["p_type"] == "PT_LOAD" and seg["p_filesz"] > 0
                ]
                self.symbols: dict[str, int] = {}
                self.sized_symbols: list[SizedSymbol] = []
                funcs: list[tuple[int, int, str]] = []
                symtab = elf.get_section_by_name(".symtab")
                if symtab is None:
                    raise EdgennError(f"{self.path}: no symbol table (was the ELF stripped?)")
                for sym in symtab.iter_symbols():
                    kind = sym["st_info"]["type"]
                    if not sym.name or kind not in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE"):
                        continue
                    value = sym["st_value"]
                    if kind == "STT_FUNC":
                        value &= ~1
                        funcs.append((value, sym["st_size"], sym.name))
                    self.symbols.setdefault(sym.name, value)
                    if kind in ("STT_FUNC", "STT_OBJECT") and sym["st_size"] > 0:
                        self.sized_symbols.append(SizedSymbol(
                            sym.name, value, int(sym["st_size"]),
                            "func" if kind == "STT_FUNC" else "object",
                            sym["st_info"]["bind"] == "STB_LOCAL"))
                self.sections = [
                    (s.name, s["sh_addr"], s["sh_size"], s["sh_flags"], s["sh_type"])
                    for s in elf.iter_sections()
                    if s["sh_flags"] & _SHF_ALLOC and s["sh_size"] > 0
                ]
        except OSError as err:
            raise EdgennError(f"cannot read firmware {self.path}: {err.strerror}") from None
        except exceptions_mod.ELFError as err:
            raise EdgennError(f"{self.path}: not a valid ELF file ({err})") from None
        funcs.sort()
        self._func_addrs = [a for a, _, _ in funcs]
        self._func_ends = [a + max(size, 2) for a, size, _ in funcs]
        self._func_names = [n for _, _, n in funcs]

    def symbol(self, name: str) -> int:
        """Address of ``name`` (Thumb bit cleared for functions) or a one-line EdgennError."""
        try:
            return self.symbols[name]
        except KeyError:
            raise EdgennError(f"{self.path}: symbol {name!r} not found") from None

    def function_at(self, address: int) -> str:
        """Name of the FUNC symbol containing ``address``, else "?" (e.g. unmapped code)."""
        address &= ~1
        i = bisect.bisect_right(self._func_addrs, address) - 1
        if i < 0 or address >= self._func_ends[i]:
            return "?"
        return self._func_names[i]

    def flash_symbols(self) -> list[SizedSymbol]:
        """The sized symbols whose bytes are stored in flash (in an allocated section that is
        not NOBITS: code, constants and the initial values of .data), one per address range.

        Aliases (two names for one address) are listed once, under the first name; local
        (static) names win over global ones, so a generated ``l3_w`` is never hidden.
        """
        stored = [(addr, addr + size) for _name, addr, size, _flags, stype in self.sections
                  if stype != "SHT_NOBITS"]
        chosen: dict[int, SizedSymbol] = {}
        for sym in sorted(self.sized_symbols, key=lambda s: (not s.local, s.name)):
            if sym.address in chosen:
                continue
            if any(lo <= sym.address < hi for lo, hi in stored):
                chosen[sym.address] = sym
        return sorted(chosen.values(), key=lambda s: s.address)

    def sizes(self, stack_range: tuple[int, int] | None = None) -> dict[str, int]:
        """Section sizes by class; flash = text+rodata+data, RAM = data+bss+stack.

        Classes come from the section flags (not names, so any linker script works):
        executable -> text, NOBITS -> bss, writable -> data, other allocated -> rodata.
        A NOBITS section inside ``stack_range`` (a reserved .stack) counts as stack, not bss.
        """
        out = {"text": 0, "rodata": 0, "data": 0, "bss": 0}
        for _name, addr, size, flags, stype in self.sections:
            if stype == "SHT_NOBITS":
                if stack_range and stack_range[0] <= addr < stack_range[1]:
                    continue
                out["bss"] += size
            elif flags & _SHF_EXECINSTR:
                out["text"] += size
            elif flags & _SHF_WRITE:
                out["data"] += size
            else:
                out["rodata"] += size
        stack = stack_range[1] - stack_range[0] if stack_range else 0
        out["stack"] = stack
        out["flash_bytes"] = out["text"] + out["rodata"] + out["data"]
        out["ram_bytes"] = out["data"] + out["bss"] + stack
        return out
