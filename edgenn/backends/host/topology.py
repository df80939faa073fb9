"""CPU clusters of the host: detected from sysfs, or emulated big.LITTLE on a homogeneous machine.

A cluster is a set of CPUs of one kind (Arm's big / LITTLE, Intel's P-core / E-core) with a
relative *capacity* (1.0 = the fastest kind). Detection reads, in order of preference:

1. Intel hybrid parts: ``/sys/devices/cpu_core/cpus`` and ``/sys/devices/cpu_atom/cpus``;
2. ``/sys/devices/system/cpu/cpuN/cpu_capacity`` (Arm's DT ``capacity-dmips-mhz``, scaled to
   1024 for the biggest core, also reported by recent x86 kernels);
3. ``cpuN/cpufreq/cpuinfo_max_freq`` (a proxy: same micro-architecture, different clock);
4. otherwise one homogeneous cluster.

Only CPUs that are online *and* in this process's affinity mask count.

``parse_emulation("1+1:0.43")`` instead builds an **emulated** topology: one "big" CPU and one
"LITTLE" CPU of capacity 0.43 (a Cortex-A53 against a Cortex-A72 at the same clock, roughly),
carved out of the real CPUs. The thread pool then makes a thread on a CPU of capacity c < 1
busy-wait (1/c - 1) times its measured work time (``threadpool.c``), and everything that reports
figures for such a topology says "emulated".
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from edgenn.errors import EdgennError

#: LITTLE / big capacity when an emulation spec gives none: Cortex-A53 vs Cortex-A72
#: (Arm's capacity-dmips-mhz of 1024 vs ~2360 scaled to one clock: about 0.43).
DEFAULT_LITTLE_CAPACITY = 0.43


class TopologyError(EdgennError):
    """A malformed emulation spec, or a topology that does not fit this process's CPUs."""


@dataclass(frozen=True)
class Cluster:
    """CPUs of one kind. ``capacity`` is relative to the fastest cluster (1.0)."""

    index: int
    name: str
    cpus: tuple[int, ...]
    capacity: float = 1.0
    max_freq_khz: int | None = None

    @property
    def size(self) -> int:
        return len(self.cpus)


@dataclass(frozen=True)
class Topology:
    """The clusters a schedule may use, fastest first.

    ``emulated`` marks capacities that the thread pool imposes by busy-waiting rather than
    hardware that really is slower; ``source`` says where the clusters came from.
    """

    clusters: tuple[Cluster, ...]
    source: str = "sysfs"
    emulated: bool = False

    def __post_init__(self) -> None:
        if not self.clusters:
            raise TopologyError("a topology needs at least one cluster")
        seen: set[int] = set()
        for i, c in enumerate(self.clusters):
            if c.index != i:
                raise TopologyError(f"cluster {c.name!r} has index {c.index}, expected {i}")
            if not c.cpus:
                raise TopologyError(f"cluster {c.name!r} has no CPU")
            if not 0.0 < c.capacity <= 1.0:
                raise TopologyError(f"cluster {c.name!r}: capacity {c.capacity} not in (0, 1]")
            if seen & set(c.cpus):
                raise TopologyError(f"cluster {c.name!r} shares CPUs with another cluster")
            seen |= set(c.cpus)

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(cpu for c in self.clusters for cpu in c.cpus)

    @property
    def heterogeneous(self) -> bool:
        return len({c.capacity for c in self.clusters}) > 1

    def cluster(self, index: int) -> Cluster:
        if not 0 <= index < len(self.clusters):
            raise TopologyError(
                f"cluster {index} does not exist (this topology has {len(self.clusters)}: "
                f"{self.describe()})")
        return self.clusters[index]

    def capacity_table(self) -> list[float] | None:
        """Capacity per CPU id for the pool's emulation, or None on real hardware."""
        if not self.emulated or not self.heterogeneous:
            return None
        table = [1.0] * (max(self.cpus) + 1)
        for c in self.clusters:
            for cpu in c.cpus:
                table[cpu] = c.capacity
        return table

    def describe(self) -> str:
        """``"1 big (cpu 0) + 1 LITTLE @0.43 (cpu 1), emulated"``."""
        parts = []
        for c in self.clusters:
            cap = "" if c.capacity == 1.0 else f" @{c.capacity:.2f}"
            parts.append(f"{c.size} {c.name}{cap} (cpu {format_cpus(c.cpus)})")
        return " + ".join(parts) + (", emulated" if self.emulated else "")

    def short(self) -> str:
        """``"1x1.00+1x0.43e"``: counts and capacities only, for fingerprints and file names."""
        body = "+".join(f"{c.size}x{c.capacity:.2f}" for c in self.clusters)
        return body + ("e" if self.emulated else "")

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "emulated": self.emulated,
                "clusters": [{"name": c.name, "cpus": list(c.cpus), "capacity": c.capacity,
                              "max_freq_khz": c.max_freq_khz} for c in self.clusters]}


# --------------------------------------------------------------------------------- parsing
def parse_cpu_list(text: str) -> tuple[int, ...]:
    """Kernel CPU-list syntax ``"0-3,8,10-11"`` -> sorted CPU ids."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m is None:
            raise TopologyError(f"bad CPU list {text.strip()!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def format_cpus(cpus: Sequence[int]) -> str:
    """Inverse of ``parse_cpu_list``: ``(0, 1, 2, 5)`` -> ``"0-2,5"``."""
    out: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def process_cpus() -> tuple[int, ...]:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return tuple(sorted(os.sched_getaffinity(0)))
    return tuple(range(os.cpu_count() or 1))  # pragma: no cover - non-Linux


def parse_emulation(spec: str, cpus: Sequence[int] | None = None) -> Topology:
    """An emulated topology from ``"N1+N2[+N3...][:c2[:c3...]]"``.

    ``N1+N2...`` are the CPU counts of the clusters, fastest first; the capacities after the
    colons are those of clusters 2, 3, ... (cluster 1 is 1.0), or of every cluster when one is
    given per cluster. ``"1+1:0.43"`` is one big CPU plus one LITTLE CPU of capacity 0.43;
    ``"2+2"`` uses the default LITTLE capacity 0.43; ``"2"`` just restricts to 2 CPUs. The
    clusters take the process's CPUs (``cpus``, default: its affinity mask) in order.
    """
    text = spec.strip()
    m = re.fullmatch(r"(\d+(?:\+\d+)*)((?::[0-9]*\.?[0-9]+)*)", text)
    if m is None:
        raise TopologyError(
            f"bad --emulate-hetero spec {spec!r}: expected e.g. 1+1:0.43 (big count + LITTLE "
            "count : LITTLE capacity)")
    counts = [int(n) for n in m.group(1).split("+")]
    caps = [float(c) for c in m.group(2).split(":")[1:]]
    if any(n < 1 for n in counts):
        raise TopologyError(f"bad --emulate-hetero spec {spec!r}: every cluster needs >= 1 CPU")
    k = len(counts)
    if not caps:
        if k > 2:
            raise TopologyError(
                f"--emulate-hetero {spec!r}: give the capacity of clusters 2..{k}, "
                "e.g. 2+2+4:0.7:0.43")
        caps = [1.0] + [DEFAULT_LITTLE_CAPACITY] * (k - 1)
    elif len(caps) == k - 1:
        caps = [1.0, *caps]
    elif len(caps) != k:
        raise TopologyError(
            f"--emulate-hetero {spec!r}: {len(caps)} capacities for {k} clusters "
            f"(give {k - 1} or {k})")
    for c in caps:
        if not 0.0 < c <= 1.0:
            raise TopologyError(f"--emulate-hetero {spec!r}: capacity {c} not in (0, 1]")
    available = tuple(cpus) if cpus is not None else process_cpus()
    if sum(counts) > len(available):
        raise TopologyError(
            f"--emulate-hetero {spec!r} needs {sum(counts)} CPUs; this process may use "
            f"{len(available)} (cpu {format_cpus(available)})")
    names = cluster_names(caps)
    clusters = []
    start = 0
    for i, (n, cap) in enumerate(zip(counts, caps, strict=True)):
        clusters.append(Cluster(i, names[i], tuple(available[start:start + n]), cap))
        start += n
    return Topology(tuple(clusters), source=f"emulated {text}", emulated=True)


def cluster_names(capacities: Sequence[float]) -> list[str]:
    """big / LITTLE names by rank; a homogeneous machine's single cluster is ``cpu``."""
    if len(capacities) == 1:
        return ["cpu"]
    if len(capacities) == 2:
        return ["big", "LITTLE"]
    if len(capacities) == 3:
        return ["big", "mid", "LITTLE"]
    return [f"c{i}" for i in range(len(capacities))]


# ------------------------------------------------------------------------------- detection
def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def detect_topology(sysfs: str | os.PathLike[str] = "/sys",
                    allowed: Iterable[int] | None = None) -> Topology:
    """Clusters of the CPUs that are online and in ``allowed`` (default: the affinity mask).

    ``sysfs`` is the root of a sysfs tree (tests pass a fake one).
    """
    root = Path(sysfs)
    cpu_dir = root / "devices" / "system" / "cpu"
    allowed_set = set(allowed) if allowed is not None else set(process_cpus())
    online_text = _read(cpu_dir / "online")
    online = set(parse_cpu_list(online_text)) if online_text else allowed_set
    cpus = sorted(online & allowed_set)
    if not cpus:
        raise TopologyError("no online CPU in this process's affinity mask")
    capacity = {c: _read_int(cpu_dir / f"cpu{c}" / "cpu_capacity") for c in cpus}
    freq = {c: _read_int(cpu_dir / f"cpu{c}" / "cpufreq" / "cpuinfo_max_freq") for c in cpus}

    core_text = _read(root / "devices" / "cpu_core" / "cpus")
    atom_text = _read(root / "devices" / "cpu_atom" / "cpus")
    if core_text and atom_text:
        groups = [("P-core", [c for c in cpus if c in parse_cpu_list(core_text)]),
                  ("E-core", [c for c in cpus if c in parse_cpu_list(atom_text)])]
        groups = [(n, g) for n, g in groups if g]
        return _from_groups(groups, capacity, freq, "sysfs: Intel hybrid cpu_core/cpu_atom")
    for key, values, what in (("capacity", capacity, "cpu_capacity"),
                              ("freq", freq, "cpufreq/cpuinfo_max_freq")):
        known = {c: v for c, v in values.items() if v}
        if len(known) == len(cpus) and len(set(known.values())) > 1:
            by_value: dict[int, list[int]] = {}
            for c in cpus:
                by_value.setdefault(known[c], []).append(c)
            ordered = sorted(by_value.items(), key=lambda kv: (-kv[0], kv[1][0]))
            names = cluster_names([float(v) for v, _ in ordered])
            groups = [(names[i], g) for i, (_, g) in enumerate(ordered)]
            return _from_groups(groups, capacity if key == "capacity" else {}, freq,
                                f"sysfs: {what}")
    return _from_groups([("cpu", cpus)], capacity, freq, "sysfs: homogeneous")


def _from_groups(groups: list[tuple[str, list[int]]], capacity: dict[int, int | None],
                 freq: dict[int, int | None], source: str) -> Topology:
    """Clusters with capacities relative to the fastest: cpu_capacity, else max frequency."""

    def best(cpus: list[int], table: dict[int, int | None]) -> int | None:
        vals = [table.get(c) for c in cpus]
        return max(v for v in vals if v) if all(vals) else None

    raw: list[int | None] = [best(g, capacity) for _, g in groups]
    if None in raw or len(set(raw)) == 1:  # why: equal capacities say nothing; try the clocks
        raw = [best(g, freq) for _, g in groups]
    values = [float(r) for r in raw if r] if None not in raw else []
    top = max(values) if values else 1.0
    made = sorted(
        ((name, g, round(float(r) / top, 4) if values and r else 1.0, best(g, freq))
         for (name, g), r in zip(groups, raw, strict=True)),
        key=lambda t: (-t[2], t[1][0]))
    clusters = tuple(Cluster(i, name, tuple(g), cap, khz)
                     for i, (name, g, cap, khz) in enumerate(made))
    return Topology(clusters, source=source)


def host_topology(emulate_hetero: str | None = None) -> Topology:
    """The topology to use: ``parse_emulation(spec)`` when asked to emulate, else sysfs."""
    if emulate_hetero:
        return parse_emulation(emulate_hetero)
    return detect_topology()
