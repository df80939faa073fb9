"""Runtime layer skipping as a compile option (``compile_model``'s ``skip``, docs/skipping.md)."""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.backends.options import option


@dataclass(frozen=True)
class SkipOptions:
    """``skip``: the residual blocks to skip, e.g. ``"block2,block3"`` (None: none)."""

    skip: str | None = option(
        "--skip", metavar="BLOCKS",
        help="skip these residual blocks, e.g. block2 or block2,block3 (names as `edgenn "
             "inspect` shows them); on a Cortex-M this builds skip-capable firmware that "
             "runs that configuration by default (see --skippable)")
