"""CPU topology: sysfs detection on fake trees, emulation specs, the target fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgenn.backends.host.fingerprint import cpu_identity, describe_target, target_fingerprint
from edgenn.backends.host.topology import (
    DEFAULT_LITTLE_CAPACITY,
    Cluster,
    Topology,
    TopologyError,
    detect_topology,
    format_cpus,
    host_topology,
    parse_cpu_list,
    parse_emulation,
    process_cpus,
)
from edgenn.errors import EdgennError


def fake_sysfs(root: Path, n: int, *, online: str | None = None,
               capacity: list[int] | None = None, freq: list[int] | None = None,
               hybrid: tuple[str, str] | None = None) -> Path:
    """A /sys tree with ``n`` CPUs and optional cpu_capacity / cpuinfo_max_freq / hybrid."""
    cpu = root / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text((online or f"0-{n - 1}") + "\n")
    for i in range(n):
        d = cpu / f"cpu{i}"
        d.mkdir()
        if capacity:
            (d / "cpu_capacity").write_text(f"{capacity[i]}\n")
        if freq:
            (d / "cpufreq").mkdir()
            (d / "cpufreq" / "cpuinfo_max_freq").write_text(f"{freq[i]}\n")
    if hybrid:
        for kind, cpus in zip(("cpu_core", "cpu_atom"), hybrid, strict=True):
            (root / "devices" / kind).mkdir(parents=True)
            (root / "devices" / kind / "cpus").write_text(cpus + "\n")
    return root


# ------------------------------------------------------------------------------ CPU lists
def test_cpu_list_syntax() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpu_list("5") == (5,)
    assert format_cpus((0, 1, 2, 3, 8, 10, 11)) == "0-3,8,10-11"
    with pytest.raises(TopologyError, match="bad CPU list"):
        parse_cpu_list("0-x")


@given(st.sets(st.integers(0, 300), min_size=1, max_size=40))
def test_cpu_list_round_trip(cpus: set[int]) -> None:
    assert parse_cpu_list(format_cpus(sorted(cpus))) == tuple(sorted(cpus))


# ------------------------------------------------------------------------------ detection
def test_homogeneous_machine_is_one_cluster(tmp_path: Path) -> None:
    topo = detect_topology(fake_sysfs(tmp_path, 4), allowed=range(4))
    assert len(topo.clusters) == 1
    assert topo.clusters[0].cpus == (0, 1, 2, 3) and topo.clusters[0].capacity == 1.0
    assert topo.clusters[0].name == "cpu" and not topo.emulated and not topo.heterogeneous
    assert topo.source == "sysfs: homogeneous"


def test_arm_big_little_from_cpu_capacity(tmp_path: Path) -> None:
    # RK3399-like: 4 Cortex-A53 (capacity 485) + 2 Cortex-A72 (1024); big listed first.
    root = fake_sysfs(tmp_path, 6, capacity=[485] * 4 + [1024] * 2,
                      freq=[1416000] * 4 + [1800000] * 2)
    topo = detect_topology(root, allowed=range(6))
    big, little = topo.clusters
    assert (big.name, big.cpus, big.capacity, big.max_freq_khz) == ("big", (4, 5), 1.0, 1800000)
    assert (little.name, little.cpus) == ("LITTLE", (0, 1, 2, 3))
    assert little.capacity == pytest.approx(485 / 1024, abs=1e-4)
    assert topo.source == "sysfs: cpu_capacity" and topo.heterogeneous
    assert topo.capacity_table() is None  # real hardware: nothing to emulate


def test_three_clusters_from_capacity(tmp_path: Path) -> None:
    # Snapdragon-865-like 1 + 3 + 4.
    root = fake_sysfs(tmp_path, 8, capacity=[325] * 4 + [870] * 3 + [1024])
    topo = detect_topology(root, allowed=range(8))
    assert [c.name for c in topo.clusters] == ["big", "mid", "LITTLE"]
    assert [c.cpus for c in topo.clusters] == [(7,), (4, 5, 6), (0, 1, 2, 3)]
    assert [c.index for c in topo.clusters] == [0, 1, 2]


def test_frequency_is_the_fallback(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, 4, freq=[1000000, 1000000, 2000000, 2000000])
    topo = detect_topology(root, allowed=range(4))
    assert [c.cpus for c in topo.clusters] == [(2, 3), (0, 1)]
    assert topo.clusters[1].capacity == pytest.approx(0.5)
    assert topo.source == "sysfs: cpufreq/cpuinfo_max_freq"


def test_equal_capacities_fall_back_to_frequency(tmp_path: Path) -> None:
    # x86 kernels report 1024 everywhere; the clocks still tell the kinds apart.
    root = fake_sysfs(tmp_path, 4, capacity=[1024] * 4, freq=[3000000] * 2 + [1500000] * 2)
    topo = detect_topology(root, allowed=range(4))
    assert [c.cpus for c in topo.clusters] == [(0, 1), (2, 3)]


def test_intel_hybrid(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, 6, freq=[4700000] * 2 + [3600000] * 4, hybrid=("0-1", "2-5"))
    topo = detect_topology(root, allowed=range(6))
    assert [(c.name, c.cpus) for c in topo.clusters] == [("P-core", (0, 1)),
                                                         ("E-core", (2, 3, 4, 5))]
    assert topo.clusters[1].capacity == pytest.approx(3600000 / 4700000, abs=1e-4)
    assert topo.source == "sysfs: Intel hybrid cpu_core/cpu_atom"


def test_offline_and_disallowed_cpus_are_left_out(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, 8, online="0-5", capacity=[485] * 4 + [1024] * 4)
    topo = detect_topology(root, allowed=[1, 2, 4, 5, 7])
    assert [c.cpus for c in topo.clusters] == [(4, 5), (1, 2)]
    with pytest.raises(TopologyError, match="no online CPU"):
        detect_topology(root, allowed=[6, 7])


def test_detect_on_this_machine() -> None:
    topo = detect_topology()
    assert topo.cpus and not topo.emulated
    assert host_topology() == topo


# ------------------------------------------------------------------------------ emulation
def test_parse_emulation_one_big_one_little() -> None:
    topo = parse_emulation("1+1:0.43", cpus=[0, 1])
    assert topo.emulated and topo.heterogeneous
    assert [(c.name, c.cpus, c.capacity) for c in topo.clusters] == [
        ("big", (0,), 1.0), ("LITTLE", (1,), 0.43)]
    assert topo.capacity_table() == [1.0, 0.43]
    assert topo.describe() == "1 big (cpu 0) + 1 LITTLE @0.43 (cpu 1), emulated"
    assert topo.short() == "1x1.00+1x0.43e"


def test_parse_emulation_forms() -> None:
    cpus = list(range(8))
    assert parse_emulation("2+2", cpus).clusters[1].capacity == DEFAULT_LITTLE_CAPACITY
    three = parse_emulation("1+3+4:0.85:0.32", cpus)
    assert [c.cpus for c in three.clusters] == [(0,), (1, 2, 3), (4, 5, 6, 7)]
    assert [c.capacity for c in three.clusters] == [1.0, 0.85, 0.32]
    explicit = parse_emulation("2+2:0.9:0.4", cpus)
    assert [c.capacity for c in explicit.clusters] == [0.9, 0.4]
    single = parse_emulation("2", cpus)
    assert len(single.clusters) == 1 and single.capacity_table() is None
    assert parse_emulation(" 1+1:.5 ", [3, 7]).clusters[1].cpus == (7,)


@pytest.mark.parametrize("spec, message", [
    ("big+little", "bad --emulate-hetero"),
    ("1+1:1.5", r"not in \(0, 1\]"),
    ("1+1:0", r"not in \(0, 1\]"),
    ("0+1", ">= 1 CPU"),
    ("1+1+1", "give the capacity"),
    ("1+1:0.5:0.4:0.3", "3 capacities for 2 clusters"),
    ("2+2:0.43", "needs 4 CPUs"),
])
def test_parse_emulation_errors(spec: str, message: str) -> None:
    with pytest.raises(EdgennError, match=message) as err:
        parse_emulation(spec, cpus=[0, 1])
    assert "\n" not in str(err.value)


def test_topology_validation() -> None:
    with pytest.raises(TopologyError, match="shares CPUs"):
        Topology((Cluster(0, "a", (0, 1)), Cluster(1, "b", (1,))))
    with pytest.raises(TopologyError, match="capacity"):
        Topology((Cluster(0, "a", (0,), capacity=0.0),))
    with pytest.raises(TopologyError, match="index"):
        Topology((Cluster(1, "a", (0,)),))
    with pytest.raises(TopologyError, match="at least one"):
        Topology(())


# ----------------------------------------------------------------------------- fingerprint
X86 = ("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 fma "
       "avx512f rdrand\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n")
ARM = ("processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 asimddp\nCPU implementer\t: 0x41\n"
       "CPU part\t: 0xd08\n")


def test_cpu_identity() -> None:
    assert cpu_identity(X86) == ("AMD EPYC 7B13", ("avx", "avx2", "avx512f", "fma", "sse4_2"))
    model, flags = cpu_identity(ARM)
    assert "part=0xd08" in model and flags == ("asimd", "asimddp")


def test_fingerprint_is_stable_and_covers_topology_and_compiler() -> None:
    real = Topology((Cluster(0, "cpu", (0, 1)),))
    emu = parse_emulation("1+1:0.43", cpus=[0, 1])
    gcc = "gcc (Debian 12.2.0-14) 12.2.0"
    a = target_fingerprint(real, X86, gcc)
    assert a == target_fingerprint(real, X86, gcc)
    assert a.startswith("x86_64-") or "amd-epyc-7b13" in a
    assert "amd-epyc-7b13" in a and "2x1.00" in a and "gcc12" in a
    assert target_fingerprint(emu, X86, gcc) != a
    assert "1x1.00+1x0.43e" in target_fingerprint(emu, X86, gcc)
    assert target_fingerprint(real, X86, "gcc (Debian 13.1.0) 13.1.0") != a
    assert target_fingerprint(real, ARM, gcc) != a
    assert len(a) < 120
    desc = describe_target(emu, X86, gcc)
    assert desc["emulated"] is True and desc["simd"] == ["avx", "avx2", "avx512f", "fma",
                                                         "sse4_2"]


@pytest.mark.skipif(len(process_cpus()) < 2, reason="needs two CPUs to emulate 1+1")
def test_fingerprint_of_this_machine() -> None:
    fp = target_fingerprint(host_topology())
    assert fp == target_fingerprint(host_topology())
    assert fp != target_fingerprint(host_topology("1+1:0.43"))
