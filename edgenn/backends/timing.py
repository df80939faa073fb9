"""How a measured time is taken: untimed warm-up runs, then timed runs whose median counts.

One definition for everything that times on a real clock: ``edgenn bench`` and
``BenchSettings`` (the reference and host targets), ``HostExecutable.measure``, the tuner's
trials (``edgenn.tune.measure.MeasureProtocol``) and the ``--warmup`` / ``--repeats`` flags.
They share one default too: a tuning trial is timed as the whole model is benchmarked, so a
tuned layer's figure and a bench figure are comparable (the tuner's ``max_ms`` bounds the cost
of a slow candidate, instead of fewer repeats for every candidate). Cycle-model targets
(Cortex-M, VTA) are deterministic and run once: they ignore it.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgenn.errors import EdgennError


class TimingError(EdgennError, ValueError):
    """A warm-up or repeat count out of range (a ValueError too: the tuner's API raised it)."""


@dataclass(frozen=True)
class TimedRuns:
    """``warmup`` untimed runs, then ``repeats`` timed runs; the median is reported.

    The median, not the mean or the minimum: a shared machine's interruptions make long
    outliers, and the median ignores them without rewarding the one lucky run.
    """

    # why 3: the first runs fault in pages, fill the caches and wake the thread pool
    warmup: int = 3
    # why 10: enough for a median that one or two interrupted runs do not move
    repeats: int = 10

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.repeats < 1:
            raise TimingError(f"need warmup >= 0 and repeats >= 1, got warmup {self.warmup}, "
                              f"repeats {self.repeats}")


DEFAULT_TIMING = TimedRuns()
