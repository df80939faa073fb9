"""Conformance cases, one module per operator group; each module defines ``CASES``."""

from __future__ import annotations

import importlib
import pkgutil

from tests.conformance.spec import Case


def all_cases() -> list[Case]:
    """Every case of every module here (modules are found, not listed)."""
    found: list[Case] = []
    for mod in pkgutil.iter_modules(__path__):
        found += importlib.import_module(f"{__name__}.{mod.name}").CASES
    ids = [c.id for c in found]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ValueError(f"conformance case ids are not unique: {sorted(dup)}")
    return found


def by_op() -> dict[str, list[Case]]:
    table: dict[str, list[Case]] = {}
    for case in all_cases():
        table.setdefault(case.op, []).append(case)
    return table
