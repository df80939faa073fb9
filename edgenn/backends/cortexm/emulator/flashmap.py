"""Where a firmware's flash goes: bytes per layer, shared kernels, runtime, from the ELF symbols.

The code generator names everything that belongs to one layer ``l<i>_<name>``: its constant
arrays (``l3_w``, ``l3_quant``) and its generated functions (``KernelCall.code``, ``@P@`` ->
``l3``; gcc clones such as ``l3_conv.constprop.0`` keep the prefix). Their ``st_size`` is the
layer's flash. Kernel functions shared between layers (``edgenn_maxpool_s8_dsp``, libc's memcpy)
are counted once, in ``shared_kernels``; the start-up code, vector table and the library API
(``NAME_invoke``, ...) are ``runtime``; what no sized symbol covers (alignment padding,
exception tables) is ``other``.
So ``sum(layers) + shared_kernels + runtime + other == total`` (text + rodata + data).

Per-layer code that gcc inlines into ``NAME_invoke`` is counted there (runtime), not in the
layer: the symbol table only sees functions that survive as functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from edgenn.backends.cortexm.emulator.elf import ElfImage

LAYER_SYMBOL = re.compile(r"^l(\d+)_")
# why: names of the generated start-up and glue (codegen/project.py, startup.c, main.c); they
# serve the whole firmware, not a kernel.
RUNTIME_SYMBOLS = frozenset({
    "edgenn_invoke", "edgenn_mark", "edgenn_vectors", "edgenn_set_skip_mask", "main",
    "Reset_Handler", "Default_Handler", "HardFault_Handler",
})


@dataclass(frozen=True)
class FlashMap:
    """Flash bytes of one firmware by owner (see the module docstring)."""

    layers: list[int]  # bytes per layer index
    shared_kernels: int
    runtime: int
    other: int
    total: int
    shared_symbols: dict[str, int] = field(default_factory=dict)  # name -> bytes, largest first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def flash_map(image: ElfImage, n_layers: int,
              runtime_symbols: Iterable[str] = RUNTIME_SYMBOLS) -> FlashMap:
    """Attribute the flash of ``image`` to its ``n_layers`` layers, shared kernels and runtime."""
    runtime_names = frozenset(runtime_symbols)
    layers = [0] * n_layers
    shared: dict[str, int] = {}
    runtime = 0
    for sym in image.flash_symbols():
        match = LAYER_SYMBOL.match(sym.name)
        if match and int(match.group(1)) < n_layers:
            layers[int(match.group(1))] += sym.size
        elif sym.name in runtime_names:
            runtime += sym.size
        else:
            shared[sym.name] = shared.get(sym.name, 0) + sym.size
    total = int(image.sizes()["flash_bytes"])
    shared_bytes = sum(shared.values())
    return FlashMap(
        layers=layers, shared_kernels=shared_bytes, runtime=runtime,
        other=total - sum(layers) - shared_bytes - runtime, total=total,
        shared_symbols=dict(sorted(shared.items(), key=lambda kv: -kv[1])),
    )
