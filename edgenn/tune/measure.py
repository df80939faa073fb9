"""The measurement protocol of a tuning trial: ``edgenn.backends.timing.TimedRuns`` (warm-up
runs, timed repeats, the median) plus an optional cache flush, a pause and a time cap.

The median, not the minimum: the minimum is what a quiet machine would give, but it favours
high-variance candidates.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edgenn.backends.timing import TimedRuns, TimingError

MIN_REPEATS = 3  # a median needs a few runs to ignore one outlier


@dataclass(frozen=True)
class MeasureProtocol(TimedRuns):
    """How one candidate is timed.

    ``warmup`` untimed runs first (code and data into the caches, the thread pool awake),
    then ``repeats`` timed runs (the defaults of ``TimedRuns``); the result is their median.
    ``max_ms`` stops the repeats once the timed runs add up to that much (after at least
    ``MIN_REPEATS``): slow candidates get fewer runs, fast ones, whose timings are noisier,
    all of them.

    ``idle_ms``: the measurer sleeps this long before every run, so the thread pool's workers
    have stopped spinning and sleep, as they do inside a model while the layers between two
    host layers run; each run then pays the wake-up of its threads. Back-to-back runs
    (``idle_ms=0``) keep the workers spinning and hide that cost, which misleads the search
    towards many threads on small layers: on this project's 2-vCPU VM, waking a worker pinned
    to the other core costs about 1.5 ms, more than a small layer takes. With
    ``flush_cache``, a buffer larger than the last-level cache is written before every timed
    run, so each run starts cold, as a layer does after its predecessor evicted its weights.
    """

    flush_cache: bool = False
    max_ms: float | None = None
    idle_ms: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_ms is not None and self.max_ms <= 0:
            raise TimingError(f"max_ms must be > 0, got {self.max_ms}")
        if self.idle_ms < 0:
            raise TimingError(f"idle_ms must be >= 0, got {self.idle_ms}")


@dataclass(frozen=True)
class Measurement:
    """Times of one candidate in milliseconds."""

    samples_ms: tuple[float, ...]
    warmup: int = 0
    flushed: bool = False
    idle_ms: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.samples_ms))

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the repeats were."""
        med = self.median_ms
        return (max(self.samples_ms) - min(self.samples_ms)) / med if med > 0 else 0.0


def measure(run: Callable[[], object], protocol: MeasureProtocol = MeasureProtocol(),
            clock: Callable[[], int] = time.perf_counter_ns) -> Measurement:
    """Time ``run()`` by ``protocol`` (``clock``: nanoseconds, replaceable in tests)."""
    pause = protocol.idle_ms / 1e3
    for _ in range(protocol.warmup):
        run()
    samples: list[float] = []
    for _ in range(protocol.repeats):
        if protocol.flush_cache:
            flush_caches()
        if pause:
            time.sleep(pause)
        start = clock()
        run()
        samples.append((clock() - start) / 1e6)
        if (protocol.max_ms is not None and len(samples) >= min(MIN_REPEATS, protocol.repeats)
                and sum(samples) >= protocol.max_ms):
            break
    return Measurement(tuple(samples), protocol.warmup, protocol.flush_cache, protocol.idle_ms)


_FLUSH: np.ndarray | None = None


def flush_caches() -> None:
    """Write a buffer twice the last-level cache size (64 MiB if sysfs does not say)."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = np.zeros(2 * llc_bytes() // 8, dtype=np.float64)
    _FLUSH += 1.0  # why: a write touches every line and evicts dirty lines of the layer


def llc_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """The largest cache of cpu0 in bytes, from sysfs (``index*/size`` like ``32768K``)."""
    sizes = []
    for entry in sysfs.glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes, default=32 << 20)
