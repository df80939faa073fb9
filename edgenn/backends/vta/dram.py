"""The accelerator's view of DRAM: one byte array, a bump allocator, typed element views.

Instructions address DRAM in elements of their memory type (16 B inp / out vectors, 256 B
weight tiles, 64 B accumulator vectors, 4 B micro-ops), so every allocation is aligned to the
largest element (a weight tile) and ``alloc`` returns the base in elements of the type asked.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgenn.backends.vta.config import VtaConfig
from edgenn.backends.vta.errors import VtaProgramError
from edgenn.backends.vta.isa import MEM_DRAM_BITS, MemType
from edgenn.backends.vta.timing import elem_bytes

ALIGN = 256  # bytes: a weight tile, the largest element
_DTYPES: dict[MemType, tuple[type[np.generic], tuple[int, ...]]] = {
    MemType.UOP: (np.uint32, ()),
    MemType.INP: (np.int8, (16,)),
    MemType.WGT: (np.int8, (16, 16)),
    MemType.ACC: (np.int32, (16,)),
    MemType.OUT: (np.int8, (16,)),
}


class Dram:
    """Byte-addressed memory shared by the host (numpy) and the accelerator (DMA)."""

    def __init__(self, config: VtaConfig, capacity: int = 1 << 16) -> None:
        self.config = config
        self.data = np.zeros(capacity, dtype=np.uint8)
        self.top = ALIGN  # keep address 0 unused, as a null pointer
        self.regions: dict[str, tuple[int, int]] = {}  # name -> (byte address, bytes)
        self._views: dict[MemType, np.ndarray] = {}

    def alloc(self, nbytes: int, name: str = "") -> int:
        """Reserve ``nbytes`` (aligned); return the byte address."""
        addr = self.top
        self.top = addr + -(-max(nbytes, 1) // ALIGN) * ALIGN
        if self.top > len(self.data):
            grown = np.zeros(max(self.top, 2 * len(self.data)), dtype=np.uint8)
            grown[: len(self.data)] = self.data
            self.data = grown
            self._views.clear()
        if name:
            self.regions[name] = (addr, nbytes)
        return addr

    def alloc_elems(self, mem: MemType, count: int, name: str = "") -> int:
        """Reserve ``count`` elements of ``mem``; return the base in elements (what LOAD takes)."""
        e = elem_bytes(self.config, mem)
        base = self.alloc(count * e, name) // e
        if base + count >= 1 << MEM_DRAM_BITS:
            raise VtaProgramError(f"DRAM region {name or mem.name} exceeds the 32-bit address "
                                  f"space")
        return base

    def write(self, byte_addr: int, array: np.ndarray) -> None:
        raw = np.ascontiguousarray(array).view(np.uint8).ravel()
        self.data[byte_addr: byte_addr + raw.size] = raw

    def write_elems(self, mem: MemType, base: int, array: np.ndarray) -> None:
        self.write(base * elem_bytes(self.config, mem), array)

    def read(self, byte_addr: int, nbytes: int) -> npt.NDArray[np.uint8]:
        return self.data[byte_addr: byte_addr + nbytes].copy()

    def elems(self, mem: MemType) -> np.ndarray:
        """All of DRAM viewed as elements of ``mem`` (a view: writes go through)."""
        view = self._views.get(mem)
        if view is None:
            e = elem_bytes(self.config, mem)
            dtype, shape = _DTYPES[mem]
            usable = (len(self.data) // e) * e
            view = self._views[mem] = self.data[:usable].view(dtype).reshape(-1, *shape)
        return view
