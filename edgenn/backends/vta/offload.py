"""What an offloaded layer needs from the accelerator: one int32 GEMM call, and its report.

``OffloadTarget`` binds the schedule and the hardware configuration once per executable, so a
layer only says "A times B plus bias". The GEMM itself is ``edgenn.backends.vta.gemm.run_gemm``
(the simulator); the ``GemmFn`` protocol is its signature, so a different engine (a board
driver, a test double) can stand in without touching the layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from edgenn.backends.vta.config import VtaConfig


class GemmRunLike(Protocol):
    result: np.ndarray
    report: Any  # a gemm.GemmReport; Any so that dataclass fields satisfy it without variance fuss


class GemmFn(Protocol):
    """``run_gemm``'s signature (the contract between the accelerator and the network code)."""

    def __call__(
        self,
        a: np.ndarray,
        b: np.ndarray,
        *,
        schedule: str = ...,
        config: Any = ...,
        out: str = ...,
        shift: int = ...,
        bias: np.ndarray | None = ...,
    ) -> Any: ...


@dataclass(frozen=True)
class OffloadTarget:
    """One accelerator configuration and GEMM schedule, shared by every offloaded layer."""

    config: VtaConfig
    schedule: str
    gemm: GemmFn

    def int32_gemm(
        self, a: npt.NDArray[np.int8], b: npt.NDArray[np.int8], bias: npt.NDArray[np.int32]
    ) -> GemmRunLike:
        """``a @ b + bias`` with int32 accumulators, read back whole (no shift, no clip)."""
        run: GemmRunLike = self.gemm(
            a, b, schedule=self.schedule, config=self.config, out="int32", bias=bias
        )
        return run
