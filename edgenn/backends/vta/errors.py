"""Errors of the VTA-class accelerator: one line each, naming the instruction or the shape."""

from __future__ import annotations

from edgenn.errors import EdgennError


class VtaError(EdgennError):
    """Base class of everything the accelerator backend raises on purpose."""


class VtaIsaError(VtaError):
    """A field does not fit its bit width, or a 128-bit word is not a valid instruction."""


class VtaProgramError(VtaError):
    """A program is wrong: deadlock, tokens left at FINISH, buffer index out of range, hazard."""


class VtaScheduleError(VtaError):
    """A schedule cannot map a GEMM onto the buffers (or an unknown schedule name)."""
