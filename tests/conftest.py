"""Shared test settings: deterministic hypothesis runs without per-example deadlines, and one
trial-build cache for the whole run."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings

# CI machines are shared and noisy: no deadlines; derandomized so a CI failure reproduces.
settings.register_profile("edgenn", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("edgenn")

TRIAL_CACHE_ENV = "EDGENN_TRIAL_CACHE"  # edgenn.backends.cortexm.trial_cache.ENV
_OWNED = pytest.StashKey[str]()  # the folder this process made (the controller's)


def pytest_configure(config: pytest.Config) -> None:
    """The flash policy's measured trial builds, shared by every test of this run (the xdist
    workers inherit the variable): a model compiled by several tests is measured once, and a
    run starts from nothing, whatever an earlier run or the user's ~/.cache holds."""
    if hasattr(config, "workerinput") or TRIAL_CACHE_ENV in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="edgenn-test-trials-")
    os.environ[TRIAL_CACHE_ENV] = folder
    config.stash[_OWNED] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_OWNED, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(TRIAL_CACHE_ENV, None)

