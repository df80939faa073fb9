"""The package's version: the installed distribution's, else the source tree's."""

from __future__ import annotations

from importlib import metadata

# why a literal too: a source checkout that was never installed has no distribution metadata;
# keep it equal to pyproject.toml's [project] version (tests/test_output_transactions.py)
__version__ = "0.1.0"


def edgenn_version() -> str:
    """``X.Y.Z`` of the installed ``edgenn`` distribution, else ``__version__``."""
    try:
        return metadata.version("edgenn")
    except metadata.PackageNotFoundError:
        return __version__
