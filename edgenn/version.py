"""The package's version: the installed distribution's, else the source tree's."""

from __future__ import annotations

from importlib import metadata
from typing import Any

# why a literal too: a source checkout that was never installed has no distribution metadata;
# keep it equal to pyproject.toml's [project] version (tests/test_output_transactions.py)
__version__ = "0.1.0"


def edgenn_version() -> str:
    """``X.Y.Z`` of the installed ``edgenn`` distribution, else ``__version__``."""
    try:
        return metadata.version("edgenn")
    except metadata.PackageNotFoundError:
        return __version__


def with_version(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with ``"edgenn_version"`` (its other keys as they are): what every results JSON
    of ``benchmarks/`` writes, so a figure can be traced to the code that measured it."""
    return {**doc, "edgenn_version": edgenn_version()}
