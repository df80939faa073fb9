"""The host thread pool and thread schedules, driven by tiny C kernels of the shared ABI.

Covers: splitting partitions by shares (exactly once each), pinning (threads really run on
their cluster's CPUs, the caller's affinity is restored), per-thread scratch, emulated LITTLE
cores (the busy-wait is (1/c - 1) x the measured work), shares that balance an emulated
big.LITTLE pair, oversubscription, errors, fork and concurrent callers.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgenn.backends.host.schedule import (
    ANY_CLUSTER,
    ClusterWork,
    ScheduleError,
    TaskSpan,
    ThreadSchedule,
    apportion,
    default_schedule,
    parse_schedule,
    single_cluster,
    split_partitions,
    unpinned,
)
from edgenn.backends.host.threadpool import Dispatch, PoolError, release_caller, shared_pool
from edgenn.backends.host.topology import Cluster, Topology, parse_emulation, process_cpus
from edgenn.cc import Source, load_library

CPUS = process_cpus()
two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")

KERNELS = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <time.h>
#define ARGS const float *in, const float *w, const float *bias, float *out, float *scratch, \
             int32_t pb, int32_t pe
static int64_t cpu_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* out[p] += 1: every partition must be computed exactly once per run. */
void count_run(ARGS) {
    (void)in; (void)w; (void)bias; (void)scratch;
    for (int32_t p = pb; p < pe; ++p) out[p] += 1.0f;
}
/* out[p] = the CPU that computed partition p. */
void where_run(ARGS) {
    (void)in; (void)w; (void)bias; (void)scratch;
    for (int32_t p = pb; p < pe; ++p) out[p] = (float)sched_getcpu();
}
/* A fixed amount of work: w[0] microseconds of this thread's CPU time per partition. */
void busy_run(ARGS) {
    (void)in; (void)bias; (void)scratch;
    for (int32_t p = pb; p < pe; ++p) {
        int64_t end = cpu_ns() + (int64_t)(w[0] * 1000.0f);
        while (cpu_ns() < end) {}
        out[p] = (float)p;
    }
}
/* 64-wide rows: out = in * w + bias[0], accumulated in the thread's scratch. */
void rowscale_run(ARGS) {
    for (int32_t p = pb; p < pe; ++p) {
        for (int j = 0; j < 64; ++j) scratch[j] = 0.0f;
        for (int r = 0; r < 8; ++r)
            for (int j = 0; j < 64; ++j) scratch[j] += in[p * 64 + j] * w[j];
        for (int j = 0; j < 64; ++j) out[p * 64 + j] = scratch[j] / 8.0f + bias[0];
    }
}
void noop_run(ARGS) {
    (void)in; (void)w; (void)bias; (void)out; (void)scratch; (void)pb; (void)pe;
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return load_library([Source("pool_test_kernels.c", KERNELS)],
                        ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror"],
                        cache_dir=tmp_path_factory.mktemp("cc"), name="pool_test_kernels")


def addr(lib: ctypes.CDLL, name: str) -> int:
    value = ctypes.cast(getattr(lib, f"{name}_run"), ctypes.c_void_p).value
    assert value
    return int(value)


def dispatch(lib: ctypes.CDLL, name: str, schedule: ThreadSchedule, topo: Topology,
             parts: int, weights: np.ndarray | None = None, bias: np.ndarray | None = None,
             scratch: int = 0) -> Dispatch:
    return Dispatch(addr(lib, name), weights, bias, split_partitions(schedule, topo, parts),
                    scratch, topo.capacity_table())


REAL = Topology((Cluster(0, "cpu", CPUS),), source="test")


def emulated() -> Topology:
    return parse_emulation("1+1:0.43", CPUS[:2])


# ------------------------------------------------------------------------ splitting work
@given(st.integers(0, 500), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
def test_apportion_adds_up_and_is_proportional(total: int, weights: list[float]) -> None:
    if sum(weights) <= 0:
        weights = [*weights[:-1], 1.0]
    counts = apportion(total, weights)
    assert sum(counts) == total and all(c >= 0 for c in counts)
    wsum = sum(weights)
    for c, w in zip(counts, weights, strict=True):
        assert abs(c - total * w / wsum) < 1.0 + 1e-9


def test_apportion_examples() -> None:
    assert apportion(10, [0.7, 0.3]) == [7, 3]
    assert apportion(7, [1, 1, 1]) == [3, 2, 2]  # ties go to the earlier entry
    assert apportion(3, [0.5, 0.5, 0.0]) == [2, 1, 0]


def test_split_follows_shares_and_pins_one_cpu_per_thread() -> None:
    topo = Topology((Cluster(0, "big", (4, 5)), Cluster(1, "LITTLE", (0, 1, 2, 3), 0.43)))
    sched = ThreadSchedule((ClusterWork(0, 2, 0.7), ClusterWork(1, 3, 0.3)))
    spans = split_partitions(sched, topo, 100)
    assert spans == (TaskSpan(0, 35, (4,), 0), TaskSpan(35, 70, (5,), 0),
                     TaskSpan(70, 80, (0,), 1), TaskSpan(80, 90, (1,), 1),
                     TaskSpan(90, 100, (2,), 1))


@given(st.integers(1, 300), st.integers(1, 4), st.integers(1, 4), st.integers(0, 20))
def test_split_covers_every_partition_once(parts: int, t0: int, t1: int, step: int) -> None:
    topo = Topology((Cluster(0, "big", (0, 1, 2, 3)), Cluster(1, "LITTLE", (4, 5, 6, 7), 0.5)))
    share = step / 20
    sched = ThreadSchedule((ClusterWork(0, t0, share), ClusterWork(1, t1, 1.0 - share)))
    spans = split_partitions(sched, topo, parts)
    covered = [p for s in spans for p in range(s.begin, s.end)]
    assert covered == list(range(parts))
    assert all(s.partitions > 0 for s in spans)
    on_big = sum(s.partitions for s in spans if s.cluster == 0)
    assert abs(on_big - share * parts) <= 1.0
    for s in spans:  # pinned to a CPU of its own cluster, never two threads on one CPU
        assert len(s.cpus) == 1 and s.cpus[0] in topo.clusters[s.cluster].cpus
    assert len({s.cpus for s in spans}) == len(spans)


def test_more_threads_than_partitions_drop_idle_threads() -> None:
    spans = split_partitions(unpinned(8), REAL, 3)
    assert [(s.begin, s.end, s.cpus) for s in spans] == [(0, 1, ()), (1, 2, ()), (2, 3, ())]


def test_default_schedule_is_acl_rule() -> None:
    big_little = Topology((Cluster(0, "big", (4, 5)), Cluster(1, "LITTLE", (0, 1, 2, 3), 0.4)))
    assert default_schedule(big_little) == unpinned(2)  # the smallest cluster's core count
    assert default_schedule(big_little, threads=6) == unpinned(6)
    assert not default_schedule(big_little).pinned
    assert default_schedule(REAL).threads == len(CPUS)
    assert default_schedule(big_little).describe() == "2t unpinned, equal split"


def test_schedule_validation() -> None:
    topo = emulated() if len(CPUS) >= 2 else REAL
    with pytest.raises(ScheduleError, match="add up to 0.9"):
        ThreadSchedule((ClusterWork(0, 1, 0.5), ClusterWork(1, 1, 0.4)))
    with pytest.raises(ScheduleError, match=">= 1 thread"):
        ThreadSchedule((ClusterWork(0, 0, 1.0),))
    with pytest.raises(ScheduleError, match="twice"):
        ThreadSchedule((ClusterWork(0, 1, 0.5), ClusterWork(0, 1, 0.5)))
    with pytest.raises(ScheduleError, match="cannot be mixed"):
        ThreadSchedule((ClusterWork(ANY_CLUSTER, 1, 0.5), ClusterWork(0, 1, 0.5)))
    with pytest.raises(ScheduleError, match="cluster 5"):
        single_cluster(5, 1).validate(topo)
    with pytest.raises(ScheduleError, match="which has 1 CPU"):
        single_cluster(0, 2).validate(parse_emulation("1", CPUS[:1]))
    with pytest.raises(ScheduleError, match="at least one"):
        ThreadSchedule(())


def test_parse_schedule_and_round_trip() -> None:
    s = parse_schedule("0:1:0.7+1:1:0.3")
    assert s == ThreadSchedule((ClusterWork(0, 1, 0.7), ClusterWork(1, 1, 0.3)))
    assert parse_schedule("any:2") == unpinned(2)
    assert parse_schedule("0:2+1:2").clusters[1].share == pytest.approx(0.5)
    assert ThreadSchedule.from_dict(s.to_dict()) == s
    for bad in ("0:1:0.7+1:1", "zero:1", "0", "0:1:0.7+1:1:0.4"):
        with pytest.raises(ScheduleError):
            parse_schedule(bad)
    with pytest.raises(ScheduleError, match="malformed"):
        ThreadSchedule.from_dict({"clusters": [{"cluster": 0}]})


# ------------------------------------------------------------------------------ the pool
SCHEDULES = [
    ("one thread", lambda: single_cluster(0, 1), lambda: REAL),
    ("unpinned 3 (oversubscribed)", lambda: unpinned(3), lambda: REAL),
    ("pinned all", lambda: single_cluster(0, len(CPUS)), lambda: REAL),
]
if len(CPUS) >= 2:
    SCHEDULES += [
        ("emulated 70/30", lambda: parse_schedule("0:1:0.7+1:1:0.3"), emulated),
        ("emulated LITTLE only", lambda: single_cluster(1, 1), emulated),
        ("emulated default", lambda: default_schedule(emulated(), 2), emulated),
    ]


@pytest.mark.parametrize("label, make_schedule, make_topo", SCHEDULES,
                         ids=[s[0] for s in SCHEDULES])
def test_every_partition_exactly_once(lib: ctypes.CDLL, label: str, make_schedule: object,
                                      make_topo: object) -> None:
    d = dispatch(lib, "count", make_schedule(), make_topo(), 37)  # type: ignore[operator]
    out = np.zeros(37, np.float32)
    for _ in range(5):
        d.run(np.zeros(1, np.float32), out)
    assert (out == 5).all()
    assert sum(s.partitions for s in d.task_stats()) == 37


@pytest.mark.parametrize("label, make_schedule, make_topo", SCHEDULES,
                         ids=[s[0] for s in SCHEDULES])
def test_scratch_is_per_thread(lib: ctypes.CDLL, label: str, make_schedule: object,
                               make_topo: object) -> None:
    rng = np.random.default_rng(0)
    x = rng.random((50, 64), dtype=np.float32)
    w = rng.random(64, dtype=np.float32)
    bias = np.array([0.25], np.float32)
    d = dispatch(lib, "rowscale", make_schedule(), make_topo(), 50, w,  # type: ignore[operator]
                 bias, scratch=64)
    out = np.zeros_like(x)
    for _ in range(3):
        out.fill(np.nan)
        d.run(x, out)
        np.testing.assert_allclose(out, x * w + 0.25, rtol=1e-5)


@two_cpus
def test_pinned_threads_run_on_their_cpus(lib: ctypes.CDLL) -> None:
    before = os.sched_getaffinity(0)
    topo = Topology((Cluster(0, "a", (CPUS[1],)), Cluster(1, "b", (CPUS[0],))))
    sched = parse_schedule("0:1:0.5+1:1:0.5")
    d = dispatch(lib, "where", sched, topo, 20)
    out = np.full(20, -1, np.float32)
    for _ in range(3):
        d.run(np.zeros(1, np.float32), out)
        assert (out[:10] == CPUS[1]).all() and (out[10:] == CPUS[0]).all()
    assert [s.cpu for s in d.task_stats()] == [CPUS[1], CPUS[0]]
    assert os.sched_getaffinity(0) == before  # the caller ran task 0, then got its mask back
    d.run_at(0, out.ctypes.data, keep_bound=True)
    assert os.sched_getaffinity(0) == {CPUS[1]}  # kept bound on request
    release_caller()
    assert os.sched_getaffinity(0) == before  # until released
    d.run_at(0, out.ctypes.data, keep_bound=True)
    dispatch(lib, "where", unpinned(2), topo, 20).run_at(0, out.ctypes.data, keep_bound=True)
    assert os.sched_getaffinity(0) == before  # an unpinned task 0 releases it too
    # The same worker re-pins when a later layer wants it elsewhere.
    swapped = dispatch(lib, "where", parse_schedule("1:1:0.5+0:1:0.5"), topo, 20)
    swapped.run(np.zeros(1, np.float32), out)
    assert (out[:10] == CPUS[0]).all() and (out[10:] == CPUS[1]).all()


@two_cpus
def test_emulated_little_core_spins_in_proportion(lib: ctypes.CDLL) -> None:
    topo = emulated()
    w = np.array([300.0], np.float32)  # 0.3 ms per partition
    d = dispatch(lib, "busy", single_cluster(1, 1), topo, 10, w)
    d.run(np.zeros(1, np.float32), np.zeros(10, np.float32))
    (stats,) = d.task_stats()
    assert stats.cpu == topo.clusters[1].cpus[0]
    assert stats.work_cpu_ms is not None and stats.emulation_spin_cpu_ms is not None
    expected = (1 / 0.43 - 1) * stats.work_cpu_ms
    assert expected * 0.999 <= stats.emulation_spin_cpu_ms <= expected * 1.05 + 0.05
    assert stats.work_cpu_ms == pytest.approx(3.0, rel=0.1)
    big = dispatch(lib, "busy", single_cluster(0, 1), topo, 10, w)
    big.run(np.zeros(1, np.float32), np.zeros(10, np.float32))
    assert big.task_stats()[0].emulation_spin_ms == 0.0


def _times_ms(d: Dispatch, out: np.ndarray, runs: int = 7) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        d.run(np.zeros(1, np.float32), out)
        times.append(1e3 * (time.perf_counter() - start))
    return times


def _busiest_thread_ms(d: Dispatch, out: np.ndarray) -> float:
    """The barrier waits for the busiest thread: its work plus its emulation busy-wait, in CPU
    time (the busy kernel's work is fixed CPU time), so this holds on a loaded machine too."""
    d.run(np.zeros(1, np.float32), out)
    return max((s.work_cpu_ms or 0.0) + (s.emulation_spin_cpu_ms or 0.0)
               for s in d.task_stats())


@two_cpus
def test_shares_balance_an_emulated_big_little_pair(lib: ctypes.CDLL) -> None:
    """Equal split makes the big core wait for the LITTLE one; 70/30 (~1 : 0.43) does not."""
    topo = emulated()
    w = np.array([150.0], np.float32)
    out = np.zeros(40, np.float32)
    equal = dispatch(lib, "busy", parse_schedule("0:1:0.5+1:1:0.5"), topo, 40, w)
    tuned = dispatch(lib, "busy", parse_schedule("0:1:0.7+1:1:0.3"), topo, 40, w)
    big_only = dispatch(lib, "busy", single_cluster(0, 1), topo, 40, w)
    t_equal, t_tuned, t_big = (min(_busiest_thread_ms(d, out) for _ in range(3))
                               for d in (equal, tuned, big_only))
    # Ideal (x 6 ms): equal max(0.5, 0.5 / 0.43) = 1.16, tuned max(0.7, 0.3 / 0.43) = 0.70,
    # the big core alone 1.0.
    assert t_equal == pytest.approx(6.0 * 0.5 / 0.43, rel=0.15)
    assert t_tuned == pytest.approx(6.0 * 0.7, rel=0.15)
    assert t_big == pytest.approx(6.0, rel=0.15)
    assert (out == np.arange(40)).all()


def test_real_topology_never_spins(lib: ctypes.CDLL) -> None:
    d = dispatch(lib, "busy", unpinned(2), REAL, 6, np.array([500.0], np.float32))
    d.run(np.zeros(1, np.float32), np.zeros(6, np.float32))
    assert all(s.emulation_spin_ms == 0.0 and s.work_cpu_ms is None for s in d.task_stats())
    assert d.busiest_cpu_ms() is None
    d.measure_cpu = True  # CPU time on request: the critical path of the layer
    d.run(np.zeros(1, np.float32), np.zeros(6, np.float32))
    assert all(s.work_cpu_ms is not None and s.emulation_spin_cpu_ms == 0.0
               for s in d.task_stats())
    assert d.busiest_cpu_ms() == pytest.approx(1.5, rel=0.1)  # 3 partitions x 0.5 ms


@two_cpus
def test_unpinned_threads_slow_down_only_on_little_cpus(lib: ctypes.CDLL) -> None:
    """The capacity follows the CPU a thread is on: pinned by hand to the LITTLE CPU, an
    'unpinned' task spins; on the big CPU it does not."""
    topo = emulated()
    w = np.array([200.0], np.float32)
    for cpu, spins in ((topo.clusters[1].cpus[0], True), (topo.clusters[0].cpus[0], False)):
        d = dispatch(lib, "busy", unpinned(1), topo, 5, w)
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
        try:
            d.run(np.zeros(1, np.float32), np.zeros(5, np.float32))
        finally:
            os.sched_setaffinity(0, before)
        (stats,) = d.task_stats()
        assert stats.cpu == cpu and stats.work_cpu_ms is not None
        assert (stats.emulation_spin_ms > 0) == spins


def test_binding_an_unavailable_cpu_is_one_error(lib: ctypes.CDLL) -> None:
    ghost = Topology((Cluster(0, "ghost", (1000, 1001)),))
    for threads in (1, 2):  # the caller's task, then a worker's
        d = dispatch(lib, "count", single_cluster(0, threads), ghost, 4)
        with pytest.raises(PoolError, match="thread pool: Invalid argument") as err:
            d.run(np.zeros(1, np.float32), np.zeros(4, np.float32))
        assert "\n" not in str(err.value)
    ok = dispatch(lib, "count", single_cluster(0, 1), REAL, 4)  # the pool still works
    out = np.zeros(4, np.float32)
    ok.run(np.zeros(1, np.float32), out)
    assert (out == 1).all()


def test_pool_is_persistent_and_grows_on_demand(lib: ctypes.CDLL) -> None:
    pool = shared_pool()
    out = np.zeros(64, np.float32)
    dispatch(lib, "count", unpinned(4), REAL, 64).run(np.zeros(1, np.float32), out)
    threads = pool.threads
    assert threads >= 4
    for n in (1, 2, 3, 4, 2, 1):
        dispatch(lib, "count", unpinned(n), REAL, 64).run(np.zeros(1, np.float32), out)
    assert shared_pool() is pool and pool.threads == threads
    assert (out == 7).all()


def test_back_to_back_runs_stress(lib: ctypes.CDLL) -> None:
    """Thousands of hand-overs with changing thread counts: no lost wake-up, no double run."""
    ds = [dispatch(lib, "count", unpinned(n), REAL, 9) for n in (1, 2, 3)]
    out = np.zeros(9, np.float32)
    for i in range(3000):
        ds[i % 3].run(np.zeros(1, np.float32), out)
    assert (out == 3000).all()


def test_concurrent_callers_are_serialized(lib: ctypes.CDLL) -> None:
    outs = [np.zeros(16, np.float32) for _ in range(3)]
    ds = [dispatch(lib, "count", unpinned(2), REAL, 16) for _ in range(3)]

    def hammer(i: int) -> None:
        for _ in range(300):
            ds[i].run(np.zeros(1, np.float32), outs[i])

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all((o == 300).all() for o in outs)


def _child(kernel_path: str, address_name: str, queue: multiprocessing.Queue) -> None:
    lib = ctypes.CDLL(kernel_path)
    d = Dispatch(addr(lib, address_name), None, None, split_partitions(unpinned(2), REAL, 8), 0)
    out = np.zeros(8, np.float32)
    d.run(np.zeros(1, np.float32), out)
    queue.put(out.tolist())


def test_forked_child_gets_its_own_pool(lib: ctypes.CDLL) -> None:
    dispatch(lib, "count", unpinned(2), REAL, 8).run(np.zeros(1, np.float32),
                                                     np.zeros(8, np.float32))
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(str(Path(lib._name)), "count", queue))
    proc.start()
    result = queue.get(timeout=60)
    proc.join(timeout=60)
    assert proc.exitcode == 0 and result == [1.0] * 8


def test_dispatch_overhead_is_small(lib: ctypes.CDLL) -> None:
    """An empty layer on the pool costs microseconds, not milliseconds (noisy: loose bound)."""
    out = np.zeros(8, np.float32)
    for n in (1, min(2, len(CPUS))):
        d = dispatch(lib, "noop", single_cluster(0, n), REAL, 8)
        for _ in range(50):
            d.run(np.zeros(1, np.float32), out)
        assert min(_times_ms(d, out, runs=101)) < 0.5
