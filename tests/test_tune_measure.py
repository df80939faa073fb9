"""The measurement protocol: warm-up, repeats, median, the time cap, the cache flush."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgenn.tune.measure import MeasureProtocol, flush_caches, llc_bytes, measure


class FakeClock:
    """Each run() advances the clock by the next duration (ms)."""

    def __init__(self, durations_ms: list[float]) -> None:
        self.durations = list(durations_ms)
        self.now = 0
        self.runs = 0

    def run(self) -> None:
        self.runs += 1
        self.now += int(self.durations.pop(0) * 1e6)

    def __call__(self) -> int:
        return self.now


def test_warmup_is_untimed_and_the_median_is_reported() -> None:
    clock = FakeClock([100.0, 100.0, 3.0, 1.0, 2.0, 50.0, 2.5])
    m = measure(clock.run, MeasureProtocol(warmup=2, repeats=5), clock=clock)
    assert clock.runs == 7
    assert m.samples_ms == (3.0, 1.0, 2.0, 50.0, 2.5)
    assert m.median_ms == 2.5  # the 50 ms interruption does not move it
    assert m.spread == pytest.approx((50.0 - 1.0) / 2.5)


def test_max_ms_caps_slow_candidates_but_keeps_three_runs() -> None:
    clock = FakeClock([1.0] + [40.0] * 7)
    m = measure(clock.run, MeasureProtocol(warmup=1, repeats=7, max_ms=50.0), clock=clock)
    assert len(m.samples_ms) == 3
    fast = FakeClock([1.0] + [0.1] * 7)
    assert len(measure(fast.run, MeasureProtocol(1, 7, max_ms=50.0), clock=fast).samples_ms) == 7


def test_protocol_validation() -> None:
    for bad in ({"warmup": -1}, {"repeats": 0}, {"max_ms": 0.0}):
        with pytest.raises(ValueError):
            MeasureProtocol(**bad)


def test_cache_flush(tmp_path: Path) -> None:
    (tmp_path / "index0").mkdir()
    (tmp_path / "index0" / "size").write_text("48K\n")
    (tmp_path / "index3").mkdir()
    (tmp_path / "index3" / "size").write_text("32768K\n")
    assert llc_bytes(tmp_path) == 32 << 20
    assert llc_bytes(tmp_path / "missing") == 32 << 20
    flush_caches()
    clock = FakeClock([1.0, 1.0, 1.0])
    assert measure(clock.run, MeasureProtocol(0, 3, flush_cache=True), clock=clock).flushed


def test_idle_pause_before_every_timed_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import edgenn.tune.measure as measure_module

    sleeps: list[float] = []
    monkeypatch.setattr(measure_module.time, "sleep", sleeps.append)
    clock = FakeClock([1.0] * 6)
    m = measure(clock.run, MeasureProtocol(warmup=2, repeats=4, idle_ms=1.5), clock=clock)
    assert sleeps == [0.0015] * 4 and m.idle_ms == 1.5
    with pytest.raises(ValueError):
        MeasureProtocol(idle_ms=-1.0)
    back_to_back = FakeClock([1.0] * 3)
    measure(back_to_back.run, MeasureProtocol(0, 3, idle_ms=0.0), clock=back_to_back)
    assert len(sleeps) == 4
