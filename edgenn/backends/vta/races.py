"""SRAM race detector: two modules touching the same buffer region at the same time.

The simulator updates the functional state in start-time order, so a program whose tokens
are missing can still produce the right numbers in simulation while the hardware, where a
LOAD and a GEMM run concurrently, would read half-written data. This checker closes that gap:
every instruction reports the SRAM index range it reads or writes per buffer, with its
[start, end) cycles; two instructions of different modules that overlap in time and in a
buffer range, one of them writing, are a race (``VtaProgramError`` naming both).

Ranges are bounding intervals (lowest to highest index touched), which is exact for the
contiguous tiles schedules use and conservative otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.backends.vta.errors import VtaProgramError

Access = tuple[str, int, int, bool]  # (buffer, first index, last index, writes?)


@dataclass(frozen=True, slots=True)
class _Use:
    index: int
    what: str
    module: str
    start: int
    end: int
    lo: int
    hi: int
    write: bool


class RaceChecker:
    def __init__(self) -> None:
        self._live: dict[str, list[_Use]] = {}

    def record(self, index: int, what: str, module: str, start: int, end: int,
               accesses: list[Access]) -> None:
        """Add one instruction (instructions arrive in start-time order)."""
        for buffer, lo, hi, write in accesses:
            live = [u for u in self._live.get(buffer, []) if u.end > start]
            for u in live:
                if (u.module != module and (write or u.write) and lo <= u.hi and u.lo <= hi):
                    raise VtaProgramError(
                        f"race on the {buffer} buffer: #{index} {what} ({module}, cycles "
                        f"{start}-{end}, [{lo}, {hi}]) overlaps #{u.index} {u.what} ({u.module}, "
                        f"cycles {u.start}-{u.end}, [{u.lo}, {u.hi}]); a token is missing")
            live.append(_Use(index, what, module, start, end, lo, hi, write))
            self._live[buffer] = live
