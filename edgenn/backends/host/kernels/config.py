"""What a host kernel is: the algorithm and micro-kernel the search chooses between.

The names follow Arm Compute Library, whose fixed rules the profile-based search
(Cha, Kwon and Lee 2023, docs/references.md) replaces:

* algorithms: ``direct``, ``im2col`` (+ GEMM), ``indirect`` (GEMM over a pointer buffer, no
  im2col copy), ``gemm`` (a 1x1 stride-1 convolution or a FullyConnected layer is already a
  GEMM), ``winograd_2x2`` / ``winograd_4x4`` (F(2x2,3x3) / F(4x4,3x3)), ``depthwise``;
* GEMM micro-kernels, named as ACL's register tiles (output rows x columns, see
  :mod:`edgenn.backends.host.kernels.tiles`): ``8x12`` and ``8x6`` are *interleaved* (both
  operands packed), ``6x16``, ``4x24`` and ``8x4`` are *hybrid* (the activation rows are
  read in place, weights packed), so only hybrid tiles can run ``direct`` and ``indirect``;
* depthwise micro-kernels ``dw<pixels>x<channels>``: the output block held in registers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from edgenn.errors import UnsupportedOperatorError

ALGORITHMS = ("direct", "im2col", "indirect", "gemm", "winograd_2x2", "winograd_4x4",
              "depthwise")
INTERLEAVED = ("8x12", "8x6")
HYBRID = ("6x16", "4x24", "8x4")
GEMM_KERNELS = INTERLEAVED + HYBRID
DEPTHWISE_KERNELS = ("dw4x16", "dw2x32", "dw8x8")
SPLITS = ("auto", "rows", "channels")

#: Which micro-kernels each algorithm can drive.
KERNELS_FOR: dict[str, tuple[str, ...]] = {
    "direct": HYBRID,
    "im2col": GEMM_KERNELS,
    "indirect": HYBRID,
    "gemm": GEMM_KERNELS,
    "winograd_2x2": GEMM_KERNELS,
    "winograd_4x4": GEMM_KERNELS,
    "depthwise": DEPTHWISE_KERNELS,
}


@dataclass(frozen=True)
class HostKernelConfig:
    """One point of the kernel search space for a layer.

    ``isa``: ``auto`` (the best this machine runs) or an explicit one (``scalar`` is the
    portable C fallback). ``split``: the axis the output is partitioned along for threads,
    ``rows`` (output pixels / Winograd tiles) or ``channels``; ``auto`` picks by shape.
    """

    algorithm: str
    microkernel: str
    isa: str = "auto"
    split: str = "auto"

    def __post_init__(self) -> None:
        if self.algorithm not in KERNELS_FOR:
            raise UnsupportedOperatorError(
                f"unknown host conv algorithm {self.algorithm!r}: choose {', '.join(ALGORITHMS)}")
        if self.microkernel not in KERNELS_FOR[self.algorithm]:
            raise UnsupportedOperatorError(
                f"micro-kernel {self.microkernel!r} cannot run {self.algorithm}: choose "
                f"{', '.join(KERNELS_FOR[self.algorithm])}")
        if self.split not in SPLITS:
            raise UnsupportedOperatorError(
                f"unknown split {self.split!r}: choose {', '.join(SPLITS)}")

    @property
    def label(self) -> str:
        """Short text for tables: ``winograd_2x2/6x16``."""
        return f"{self.algorithm}/{self.microkernel}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostKernelConfig:
        return cls(**{k: str(v) for k, v in data.items() if k in cls.__dataclass_fields__})
