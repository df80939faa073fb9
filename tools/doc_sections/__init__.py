"""The generated sections of README.md and docs/*.md (see tools/results_doc.py).

Each module defines sections: a name (the marker), the results JSON and benchmark it comes
from, and ``render(json) -> str``. Every rendered section names its JSON, so a reader can
trace each figure to the file and the benchmark that wrote it.
"""

from __future__ import annotations

from doc_sections import (
    cortexm,
    fusion,
    host,
    robustness,
    skipping,
    svm_device,
    testsuite,
    tuning,
    twins,
    vta,
    zoo,
)
from doc_sections.common import Section

MODULES = (fusion, cortexm, host, robustness, skipping, svm_device, testsuite, tuning, twins,
           vta, zoo)
SECTIONS: dict[str, Section] = {s.name: s for mod in MODULES for s in mod.SECTIONS}

__all__ = ["SECTIONS", "Section"]
