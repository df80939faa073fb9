"""The reference runtime as a compile target (``ref``): no options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgenn.backends.registry import Backend, register_backend
from edgenn.ir import Graph


@dataclass(frozen=True)
class RefOptions:
    """The numpy reference runtime takes no options."""


def _compile(graph: Graph) -> Any:
    from edgenn.backends.ref.runtime import compile_ref  # why: the runtime loads every kernel

    return compile_ref(graph)


register_backend(Backend("ref", RefOptions, _compile,
                         description="the numpy reference runtime (bit-exact with TFLM)",
                         order=0))
