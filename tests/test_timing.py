"""One measurement protocol (edgenn.backends.timing): every timed target and flag shares it."""

from __future__ import annotations

import argparse
import inspect

import pytest

from edgenn.backends.bench_report import BenchSettings
from edgenn.backends.host.executable import HostExecutable
from edgenn.backends.timing import DEFAULT_TIMING, TimedRuns, TimingError
from edgenn.cli.options import add_timing_options
from edgenn.errors import EdgennError
from edgenn.tune.measure import MeasureProtocol


def test_every_timed_api_and_flag_has_the_one_default() -> None:
    p = argparse.ArgumentParser()
    add_timing_options(p, "test")
    flags = p.parse_args([])
    measure = inspect.signature(HostExecutable.measure).parameters
    seen = {
        "bench settings": (BenchSettings().warmup, BenchSettings().repeats),
        "tuning trial": (MeasureProtocol().warmup, MeasureProtocol().repeats),
        "host measure": (measure["warmup"].default, measure["repeats"].default),
        "--warmup/--repeats": (flags.warmup, flags.repeats),
    }
    assert set(seen.values()) == {(DEFAULT_TIMING.warmup, DEFAULT_TIMING.repeats)}, seen


@pytest.mark.parametrize("cls", [TimedRuns, BenchSettings, MeasureProtocol])
@pytest.mark.parametrize("warmup, repeats", [(-1, 5), (2, 0)])
def test_bad_counts_are_one_line_errors(cls: type[TimedRuns], warmup: int, repeats: int) -> None:
    with pytest.raises(TimingError) as err:
        cls(warmup=warmup, repeats=repeats)
    # why both: the CLI prints an EdgennError on one line; the tuner's API raised ValueError
    assert isinstance(err.value, EdgennError) and isinstance(err.value, ValueError)
    assert "\n" not in str(err.value) and f"warmup {warmup}" in str(err.value)


def test_bench_settings_keeps_its_clock_check() -> None:
    with pytest.raises(EdgennError, match="clock above 0 MHz"):
        BenchSettings(clock_mhz=0.0)
