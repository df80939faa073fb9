"""Instruction sets the host kernels are generated for, and which one this machine runs.

Every kernel is written once in the vector vocabulary of ``c/edgenn_host_vec.h``; an ``Isa``
says which vector widths exist (lanes, widest first), how many vector registers the register
tiles may use, and the compiler flags that select the instructions. ``scalar`` is the
portable fallback: width 1 only, plain ISO C floats, no target flag at all.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from edgenn.errors import UnsupportedOperatorError


@dataclass(frozen=True)
class Isa:
    """A code-generation target: ``lanes`` the float vector widths it has, widest first."""

    name: str
    lanes: tuple[int, ...]
    registers: int
    flags: tuple[str, ...]

    @property
    def simd(self) -> bool:
        return self.lanes[0] > 1

    @property
    def width(self) -> int:
        """The widest vector, in floats."""
        return self.lanes[0]

    def lanes_dividing(self, n: int) -> int:
        """The widest vector width that divides ``n`` (1 when none does)."""
        return next((lanes for lanes in self.lanes if n % lanes == 0), 1)


ISAS: dict[str, Isa] = {
    # why -mavx512vl: the 8- and 4-wide tiles then get the 32 EVEX registers, not 16
    "avx512": Isa("avx512", (16, 8, 4, 1), 32, ("-mavx512f", "-mavx512vl", "-mavx2", "-mfma")),
    "avx2": Isa("avx2", (8, 4, 1), 16, ("-mavx2", "-mfma")),
    "neon": Isa("neon", (4, 1), 32, ()),  # aarch64: NEON and FMA are baseline
    "scalar": Isa("scalar", (1,), 16, ()),
}


@lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


@lru_cache(maxsize=1)
def host_isa() -> Isa:
    """The best instruction set this machine runs (what ``isa="auto"`` means)."""
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return ISAS["neon"]
    flags = _cpu_flags()
    if machine in ("x86_64", "amd64"):
        if {"avx512f", "avx512vl", "fma"} <= flags:
            return ISAS["avx512"]
        if {"avx2", "fma"} <= flags:
            return ISAS["avx2"]
    return ISAS["scalar"]


def runnable(isa: Isa) -> bool:
    """Whether code generated for ``isa`` executes on this machine."""
    if isa.name == "scalar":
        return True
    host = host_isa()
    if isa.name == "neon":
        return host.name == "neon"
    order = ("avx2", "avx512")
    return host.name in order and order.index(host.name) >= order.index(isa.name)


def resolve_isa(name: str) -> Isa:
    """``auto`` -> :func:`host_isa`; otherwise the named ISA (one-line error when unknown)."""
    if name == "auto":
        return host_isa()
    try:
        return ISAS[name]
    except KeyError:
        raise UnsupportedOperatorError(
            f"unknown host ISA {name!r}: choose auto, {', '.join(ISAS)}") from None
