"""How much generated code a kernel may spend on speed: ``fast`` (default) or ``compact``.

Kernels that emit per-layer code (``KernelCall.code``) unroll loops for the shape at hand;
unrolling costs flash. When the default build does not fit the flash budget, the flash policy
(``flash_policy.py``) generates the model again inside ``compact_code()``, and the kernels
then choose their smaller forms (loops over channel groups and k-chunks, no duplicated
blocks), trading a few percent of cycles for flash. Read with :func:`is_compact`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_COMPACT: ContextVar[bool] = ContextVar("edgenn_cortexm_compact_code", default=False)


def is_compact() -> bool:
    """True while kernels should prefer small code over unrolled code."""
    return _COMPACT.get()


@contextmanager
def compact_code(enabled: bool = True) -> Iterator[None]:
    """Generate code in compact form inside this block."""
    token = _COMPACT.set(enabled)
    try:
        yield
    finally:
        _COMPACT.reset(token)
