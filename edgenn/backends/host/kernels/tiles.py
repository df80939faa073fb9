"""GEMM micro-kernel register tiles and how each maps onto a machine's vector registers.

A micro-kernel computes an ``mr x nr`` block of the output (``mr`` output pixels = GEMM rows,
``nr`` output channels = GEMM columns) with every partial sum in a register. The shapes are
Arm Compute Library's (``out_height x out_width``):

=======  ====  ====  ===========  ==========================================
name      mr    nr   kind         ACL kernel
=======  ====  ====  ===========  ==========================================
8x12      8     12   interleaved  a64_sgemm_8x12
8x6       6      8   interleaved  a32_sgemm_8x6 (ACL names it width x height)
6x16      6     16   hybrid       a64_hybrid_fp32_mla_6x16
4x24      4     24   hybrid       a64_hybrid_fp32_mla_4x24
8x4       8      4   hybrid       a64_hybrid_fp32_mla_8x4
=======  ====  ====  ===========  ==========================================

*Interleaved* kernels read both operands packed (A in ``[k][mr]`` panels, B in ``[k][nr]``
panels), *hybrid* ones read ``mr`` activation rows in place through row pointers (which is
what makes the indirect and direct convolutions possible) and packed B.

On the host the tile keeps its size in floats; the vector axis and width are chosen so the
accumulators fit the register file: vectors run along the output channels (one broadcast A
value times ``nr / lanes`` B vectors per row) unless a wider vector fits along the output
pixels (packed A only; one A vector times ``nr`` broadcast B values, transposed on store).
So on AVX2 (16 ymm) ``8x12`` keeps 12 accumulators of 8 pixels, where NEON (32 q) keeps ACL's
8 x 3; ``6x16`` is 6 x 2 ymm, ``4x24`` 4 x 3 ymm, ``8x4`` 8 xmm, ``8x6`` 6 x 1 ymm.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.backends.host.kernels.config import INTERLEAVED
from edgenn.backends.host.kernels.isa import Isa

#: name -> (mr, nr): output rows x output columns of the register tile.
TILE_SHAPES: dict[str, tuple[int, int]] = {
    "8x12": (8, 12),
    "8x6": (6, 8),
    "6x16": (6, 16),
    "4x24": (4, 24),
    "8x4": (8, 4),
}


@dataclass(frozen=True)
class Tile:
    """A micro-kernel's register tile on one ISA.

    ``along_m``: the vector axis is the output pixels (accumulator ``[n][m-vector]``);
    otherwise the output channels (accumulator ``[m][n-vector]``). ``lanes``: floats per
    vector (1 for the portable scalar code).
    """

    name: str
    mr: int
    nr: int
    packed: bool
    along_m: bool
    lanes: int
    registers: int  # the ISA's vector registers

    @property
    def vectors(self) -> int:
        """Vectors along the vector axis."""
        return (self.mr if self.along_m else self.nr) // self.lanes

    @property
    def accumulators(self) -> int:
        return self.mr * self.nr // self.lanes


def _fits(isa: Isa, lanes: int, vec_extent: int, other: int) -> bool:
    """Accumulators + one operand row of vectors + one broadcast fit the register file."""
    vectors = vec_extent // lanes
    return vectors * other + vectors + 1 <= isa.registers


def tile_for(name: str, isa: Isa) -> Tile:
    """The register tile of micro-kernel ``name`` on ``isa``."""
    mr, nr = TILE_SHAPES[name]
    packed = name in INTERLEAVED
    options = [(isa.lanes_dividing(nr), False)]
    if packed and isa.simd:
        options.append((isa.lanes_dividing(mr), True))
    fitting = [(lanes, along_m) for lanes, along_m in options
               if _fits(isa, lanes, mr if along_m else nr, nr if along_m else mr)]
    # why: the widest vectors win; along the channels on a tie (no transpose on store)
    lanes, along_m = max(fitting or options[:1], key=lambda o: (o[0], not o[1]))
    return Tile(name, mr, nr, packed, along_m, lanes, isa.registers)
