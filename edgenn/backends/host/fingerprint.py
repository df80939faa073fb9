"""The target fingerprint: what a tuning record's measurements depend on besides the workload.

Two machines share tuning records only when their fingerprints match: same CPU model, same
SIMD features (they decide which micro-kernels exist and how fast they are), same cluster
layout and capacities (emulated capacities included: an emulated 1+1:0.43 target is a
different target from the real two cores it runs on) and the same C compiler.

``target_fingerprint(topology)`` is a short stable string, readable at the front
(``x86_64-amd-epyc-2x1.00-gcc12-3f2a9c1b7d04``) and exact thanks to a hash of the full
description at the end; ``describe_target(topology)`` is that full description.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from pathlib import Path
from typing import Any

from edgenn.backends.host.topology import Topology
from edgenn.cc import compiler_identity, find_host_compiler

#: The CPU features that change which kernels are built or how fast they run.
SIMD_FLAGS = frozenset({
    "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw",
    "avx512vl", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile",
    "neon", "asimd", "asimddp", "asimdhp", "fphp", "i8mm", "bf16", "sve", "sve2",
})


def cpu_identity(cpuinfo: str | None = None) -> tuple[str, tuple[str, ...]]:
    """(CPU model, sorted relevant SIMD flags) from ``/proc/cpuinfo`` text (default: read it).

    Arm kernels print no model name: the implementer and part numbers stand in for it.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    parts: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("CPU implementer", "CPU part"):
            parts.add(f"{key.split()[1]}={value}")
        fields.setdefault(key, value)
    model = fields.get("model name") or fields.get("Hardware") or ",".join(sorted(parts))
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return model or platform.processor() or "unknown", tuple(sorted(flags & SIMD_FLAGS))


def compiler_version() -> str:
    """The host C compiler's ``--version`` line (what builds every kernel)."""
    return compiler_identity(find_host_compiler()).split(" ", 1)[-1]


def describe_target(topology: Topology, cpuinfo: str | None = None,
                    compiler: str | None = None) -> dict[str, Any]:
    """Everything the fingerprint covers, JSON-ready."""
    model, flags = cpu_identity(cpuinfo)
    return {
        "machine": platform.machine(),
        "cpu": model,
        "simd": list(flags),
        "topology": topology.short(),
        "emulated": topology.emulated,
        "compiler": compiler if compiler is not None else compiler_version(),
    }


def _slug(text: str, limit: int = 24) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")[:limit].strip("-")


def target_fingerprint(topology: Topology, cpuinfo: str | None = None,
                       compiler: str | None = None) -> str:
    """Short stable key of ``describe_target`` (readable prefix + 12 hex digits of its hash)."""
    desc = describe_target(topology, cpuinfo, compiler)
    digest = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:12]
    version = re.search(r"(\d+)\.\d+", desc["compiler"])
    cc = ("clang" if "clang" in desc["compiler"].lower() else "gcc") + (
        version.group(1) if version else "")
    return "-".join((_slug(desc["machine"]), _slug(desc["cpu"]), desc["topology"], cc, digest))
