"""``--fuse auto`` on a Cortex-M core with a cycle model: two measured builds, one decision.

A model without a fusable chain is built once, as it would be without fusion. Otherwise two
firmwares are built and emulated once each: layer by layer (every layer's cycles) and with
every maximal chain fused (each fused chain's cycles are its own row of that bench; built as
fast code in one gcc run, and once more by the flash policy only where that code is over the
flash budget and wins, see ``_Builds.measure``). The planner (``passes.fusion.plan_fusion``)
then chooses per chain: fused when it measures no slower than its members layer by layer (at
equal cycles, the smaller arena). Under
``--ram-budget`` it takes the fastest plan whose exact arena (the firmware's plan: tensors,
kernel scratch, windows) fits, and under ``--latency-bound`` alone the smallest arena within
the bound; there it may fuse only part of a chain, whose cycles are *estimated* from the two
builds (the chain's measured fused / unfused ratio applied to the part's members), and the
report says so.

The winning build is the result: in ``out_dir`` it is copied there (a generated project is
relocatable: its Makefile and manifest hold no paths). Each candidate links its ELF first and
compiles its library's copy of the model's C while it is emulated (``defer_library``: the
second gcc run of the largest source is off the wall time; the losers' runs are cancelled at
the decision, their cores the winner's); only a plan that is neither of the two (some
chains fused, others not, or a part of a chain) is built once more. Settings the emulator
cannot run (a real board, a library-only folder, an external arena) are measured
on generic builds and the chosen graph is built with them.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgenn.backends.cortexm.codegen.memory import external_tensors, firmware_arena_bytes
from edgenn.backends.cortexm.executable import (
    BenchResult,
    CortexMExecutable,
    _bench_inputs,
    compile_cortexm,
    flash_budget_bytes,
)
from edgenn.backends.cortexm.fit import FitError
from edgenn.backends.cortexm.targets import Core, get_core
from edgenn.errors import PlanError
from edgenn.ir import Graph
from edgenn.passes.fusion import (
    Chain,
    FusionDecision,
    apply_fusion,
    find_chains,
    fused_names,
    plan_fusion,
)
from edgenn.passes.fusion.planner import segmentations
from edgenn.passes.fusion.rewrite import fused_node

# compile_cortexm settings under which its build is the one the emulator measures
_MEASURED = {"board": ("generic",), "library_only": (False,), "arena": ("static",),
             "emulator": ("unicorn",)}


@dataclass(frozen=True)
class PlanFigures:
    """One measured build: total cycles, exact arena, flash."""

    cycles: int
    arena_bytes: int
    flash_bytes: int

    @classmethod
    def of(cls, bench: BenchResult) -> PlanFigures:
        return cls(int(bench.total_cycles or 0), bench.arena_bytes, bench.flash_bytes)


@dataclass(frozen=True)
class ChainFigures:
    """One maximal chain: its graph layer indices, cycles layer by layer and fused."""

    first: int
    last: int
    unfused_cycles: int
    fused_cycles: int
    fused: bool  # in the chosen plan (whole)
    part: str = ""  # "" / "layers i-j fused": the chosen plan fuses only part of it


@dataclass(frozen=True)
class AutoFusionReport:
    """What ``--fuse auto`` measured and chose (``lines()`` for the compile report)."""

    decision: FusionDecision
    unfused: PlanFigures
    fused: PlanFigures | None  # None: no chain, nothing built fused
    chains: tuple[ChainFigures, ...]
    chosen_cycles: float
    estimated: bool  # the chosen plan's cycles are estimated (a plan neither build measured)
    builds: int  # firmware builds made (measurements and the final one)
    ram_budget: int | None = None
    latency_bound: float | None = None
    # a plan neither build is: the cycles its own build took (emulated after the choice)
    built_cycles: int | None = None
    # the all-fused figures are its fast code's, over the flash budget (a best case)
    fused_best_case: bool = False
    # the inputs read from the caller's buffers (--input-buffer caller), beside every arena
    caller_input_bytes: int = 0

    def lines(self) -> list[str]:
        if self.fused is None:
            return ["fuse auto: no fusable chain: layer by layer, arena "
                    f"{self.unfused.arena_bytes:,} B ({self.builds} firmware build)"]
        u, f = self.unfused, self.fused
        lines = [f"fuse auto: layer by layer {u.cycles:,} cycles, arena {u.arena_bytes:,} B, "
                 f"flash {u.flash_bytes:,} B; every chain fused {f.cycles:,} cycles, arena "
                 f"{f.arena_bytes:,} B, flash {f.flash_bytes:,} B (measured"
                 + ("; fast code over the flash budget: a best case)" if self.fused_best_case
                    else ")")]
        for c in self.chains:
            change = c.fused_cycles / c.unfused_cycles - 1 if c.unfused_cycles else 0.0
            if c.part:
                verdict = f"{c.part}, the rest layer by layer (to fit the budget)"
            elif c.fused:
                verdict = ("fused: no slower" if c.fused_cycles <= c.unfused_cycles else
                           "fused (to fit the budget)" if self.ram_budget is not None else
                           "fused (smallest arena within the latency bound)")
            else:
                verdict = ("layer by layer: fused is slower" if c.fused_cycles > c.unfused_cycles
                           else "layer by layer (to fit the budget)")
            lines.append(f"  chain layers {c.first}-{c.last}: fused {c.fused_cycles:,} vs "
                         f"layer by layer {c.unfused_cycles:,} cycles ({100 * change:+.1f}%): "
                         f"{verdict}")
        d = self.decision
        what = "estimated from the two builds" if self.estimated else "measured"
        if self.built_cycles is not None:
            what += f"; its build takes {self.built_cycles:,}"
        limits = []
        if self.ram_budget is not None:
            limits.append(f"RAM budget {self.ram_budget:,} B")
        if self.latency_bound is not None:
            limits.append(f"latency bound {self.latency_bound:,.0f} cycles")
        plan = (f"{len(d.chains)} fused chain(s) or part(s)" if d.chains else "layer by layer")
        lines.append(f"  chosen: {plan}, {self.chosen_cycles:,.0f} cycles ({what}), arena "
                     f"{d.arena_bytes:,} B"
                     + (f" within the {' and '.join(limits)}" if limits else "")
                     + (f" (+ the caller's input {self.caller_input_bytes:,} B, not in the "
                        "arena)" if self.caller_input_bytes else "")
                     + f"; {self.builds} firmware build(s)")
        return lines

    def summary(self) -> dict[str, Any]:
        return {**self.decision.summary(), "unfused": vars(self.unfused),
                "fused": None if self.fused is None else vars(self.fused),
                "chosen_cycles": self.chosen_cycles, "estimated": self.estimated,
                "built_cycles": self.built_cycles, "fused_best_case": self.fused_best_case,
                "builds": self.builds, "caller_input_bytes": self.caller_input_bytes,
                "per_chain": [vars(c) for c in self.chains]}


def _measured_settings(options: Mapping[str, Any]) -> bool:
    return all(options.get(k) in (None, *ok) for k, ok in _MEASURED.items())


def _generic(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the settings the emulator measures (and no folder of its own)."""
    drop = {*_MEASURED, "out_dir", "name"}
    return {k: v for k, v in options.items() if k not in drop}


class _Builds:
    """The candidate builds, each emulated once, and where the winner ends up."""

    def __init__(self, core: str, options: dict[str, Any]) -> None:
        self.core, self.options = core, options
        self.out_dir = options.get("out_dir")
        self.reuse = _measured_settings(options)
        self.count = 0
        self.dirs: list[tempfile.TemporaryDirectory[str]] = []
        # each candidate's library completion (compiled while it is emulated): by executable
        self.finishing: dict[int, tuple[CortexMExecutable, threading.Thread,
                                        list[BaseException]]] = {}

    def measure(self, graph: Graph, fast: bool = False,
                ) -> tuple[CortexMExecutable, BenchResult, bool]:
        """Build and emulate ``graph``. With ``fast`` (and no ``compact`` option) the build is
        the fast code alone, one gcc run; the flag returned says whether it is exactly the
        build the flash policy makes (its flash within the policy's budget), else its cycles
        are a best case."""
        if not self.reuse:
            opts = _generic(self.options)
        elif self.out_dir is None:
            opts = dict(self.options)
        else:  # its own folder: copied to out_dir if it wins
            tmp = tempfile.TemporaryDirectory(prefix="edgenn-fuse-auto-")
            self.dirs.append(tmp)
            # why deferred: only the winner's library is kept, and its NAME.o (the second
            # compile of the model's C) can be compiled while the candidates are emulated
            opts = {**self.options, "out_dir": tmp.name, "defer_library": True}
        exact = True
        if fast and opts.get("compact") is None:
            try:
                exe = self.build(graph, {**opts, "compact": False})
                exact = exe.sizes()["flash"] <= flash_budget_bytes(graph, self.core, **opts)
            except FitError:  # fast code over the device's flash: the policy's build
                exe = self.build(graph, opts)
        else:
            exe = self.build(graph, opts)
        if exe.pending_library:
            errors: list[BaseException] = []

            def finish() -> None:
                try:
                    exe.finish_library()
                except BaseException as err:  # raised where the library is kept (final)
                    errors.append(err)

            thread = threading.Thread(target=finish, name="edgenn-fuse-auto-library")
            thread.start()
            self.finishing[id(exe)] = exe, thread, errors
        bench = exe.emulate(*_bench_inputs(graph))
        exe.release_emulator()
        return exe, bench, exact

    def finished(self, exe: CortexMExecutable) -> CortexMExecutable:
        """``exe`` with its library complete (its deferred compile joined, its error raised)."""
        entry = self.finishing.pop(id(exe), None)
        if entry is not None:
            entry[1].join()
            if entry[2]:
                raise entry[2][0]
        return exe

    def discard_others(self, kept: CortexMExecutable | None) -> None:
        """Cancel every candidate's library completion but ``kept``'s: those folders are
        not kept, and their gcc runs would take the cores the kept one (or the final build)
        needs."""
        for exe, _, _ in self.finishing.values():
            if exe is not kept:
                exe.cancel_library()

    def build(self, graph: Graph, opts: dict[str, Any]) -> CortexMExecutable:
        self.count += 1
        return compile_cortexm(graph, core=self.core, **opts)

    def final(self, graph: Graph, measured: CortexMExecutable | None) -> CortexMExecutable:
        """The firmware of ``graph``: ``measured`` (its build) where it can be, else built."""
        self.discard_others(measured if self.reuse else None)
        if measured is None or not self.reuse:
            return self.build(graph, dict(self.options))
        if self.out_dir is None:
            return measured
        return _moved(self.finished(measured), Path(self.out_dir))

    def cleanup(self) -> None:
        self.discard_others(None)
        for _, thread, _ in self.finishing.values():  # a loser's library: cancelled, unused
            thread.join()
        for tmp in self.dirs:
            tmp.cleanup()


def _moved(exe: CortexMExecutable, out_dir: Path) -> CortexMExecutable:
    """``exe``'s project copied into ``out_dir``, as an executable of its own."""
    src = exe.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, out_dir, dirs_exist_ok=True)
    elf = None if exe.elf is None else out_dir / exe.elf.relative_to(src)
    moved = CortexMExecutable(exe.graph, exe.core, replace(exe.project, out_dir=out_dir), elf)
    moved.emulator, moved.default_skip = exe.emulator, exe.default_skip
    return moved


def _part_label(graph: Graph, chain: Chain, chosen: tuple[Chain, ...]) -> str:
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    parts = [c for c in chosen if set(c.names) <= set(chain.names) and c.names != chain.names]
    return ", ".join(f"layers {index[p.names[0]]}-{index[p.names[-1]]} fused" for p in parts)


def skip_asked(options: Mapping[str, Any]) -> bool:
    """Whether a build's options ask for skip support (``compile_cortexm``'s ``skippable``,
    ``skip``, ``skip_configs``): its skippable blocks are found by their Adds, so chains then
    stop before a residual Add instead of taking it (``find_chains(residuals=False)``)."""
    return bool(options.get("skippable") or options.get("skip") or options.get("skip_configs"))


def compile_auto(core: str, graph: Graph, variant: str = "ring_hoisted_pair",
                 ram_budget: int | None = None, latency_bound: float | None = None,
                 residuals: bool | None = None, **options: Any) -> CortexMExecutable:
    """Compile ``graph`` with ``--fuse auto`` (see the module docstring); the executable's
    ``fusion_report`` says what was measured and chosen. PlanError (one line, with the
    smallest arena / fastest latency) when no plan meets ``ram_budget`` / ``latency_bound``.
    ``residuals``: whether chains may take their residual Adds (default: unless ``options``
    ask for skip support, :func:`skip_asked`).
    """
    c = get_core(core)
    if residuals is None:
        residuals = not skip_asked(options)
    # why every chain is measured: no rule read off the graph predicts the fused cycles
    # (a rule that skipped chains without an int16-window member was refuted by streaming
    # wake-word models, whose depthwise -> pointwise pairs run 11% faster fused)
    chains = find_chains(graph, residuals)
    builds = _Builds(core, dict(options))
    try:
        if not chains:
            return _plain(graph, builds, variant, ram_budget, latency_bound, residuals)
        fused_graph = apply_fusion(graph, chains, variant)
        # why side by side: each build is mostly gcc (subprocesses), so where the machine has
        # a core to spare the second costs less wall time than a build of its own
        with ThreadPoolExecutor(max_workers=2) as pool:
            fused_job = pool.submit(builds.measure, fused_graph, True)
            unfused_exe, unfused, _ = builds.measure(graph)
            fused_exe, fused, fused_exact = fused_job.result()
        input_buffer = str(options.get("input_buffer") or "arena")
        decision, cost, estimated = _decide(graph, chains, variant, unfused, fused, c,
                                            ram_budget, latency_bound, residuals, input_buffer)
        whole = {ch.names for ch in chains}
        if not fused_exact and any(ch.names in whole for ch in decision.chains):
            # the fast fused build was over the flash budget: its cycles are the fused plan's
            # best case (the policy's compact code is slower). When even they lose, nothing
            # more is built; when a whole chain wins, the build the flash policy makes
            # decides. (A part of a chain is an estimate anyway; its own build is emulated.)
            fused_exe, fused, fused_exact = builds.measure(fused_graph)
            decision, cost, estimated = _decide(graph, chains, variant, unfused, fused, c,
                                                ram_budget, latency_bound, residuals,
                                                input_buffer)
        every = _key(ch.names for ch in chains)
        chosen = _key(ch.names for ch in decision.chains)
        is_estimate, checked = False, None
        if not chosen:
            exe, cycles = builds.final(graph, unfused_exe), float(unfused.total_cycles or 0)
        elif chosen == every:
            exe, cycles = builds.final(decision.graph, fused_exe), float(fused.total_cycles or 0)
        else:
            exe = builds.final(decision.graph, None)
            # the plan's layers plus what runs outside them (prologue, epilogue): measured
            outside = (unfused.total_cycles or 0) - sum(x.cycles or 0 for x in unfused.layers)
            cycles = decision.cycles + outside
            is_estimate = any(ch.names in estimated for ch in decision.chains)
            if builds.reuse:  # what the plan was chosen by, beside what its build takes
                check = exe.emulate(*_bench_inputs(graph))
                exe.release_emulator()
                checked = int(check.total_cycles or 0)
        index = {n.name: i for i, n in enumerate(graph.nodes)}
        figures = tuple(
            ChainFigures(index[ch.names[0]], index[ch.names[-1]],
                         int(sum(cost[m] for m in ch.names)), int(cost[ch.names]),
                         ch.names in chosen, _part_label(graph, ch, decision.chains))
            for ch in chains)
        exe.fusion_report = AutoFusionReport(
            decision, PlanFigures.of(unfused), PlanFigures.of(fused), figures, cycles,
            is_estimate, builds.count, ram_budget, latency_bound, checked, not fused_exact,
            _caller_bytes(graph, input_buffer))
        return exe
    finally:
        builds.cleanup()


def _key(names: Iterable[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    return tuple(sorted(names))


def _decide(graph: Graph, chains: list[Chain], variant: str, unfused: BenchResult,
            fused: BenchResult, core: Core, ram_budget: int | None,
            latency_bound: float | None, residuals: bool = True, input_buffer: str = "arena",
            ) -> tuple[FusionDecision, dict[object, float], set[tuple[str, ...]]]:
    """The planner's decision from the two builds (and its cost table, estimated parts);
    every candidate's arena as the firmware plans it, with ``input_buffer``'s inputs."""
    cost, estimated = _costs(graph, chains, variant, unfused, fused)
    external = external_tensors(graph, input_buffer)
    exact = {(): unfused.arena_bytes, _key(ch.names for ch in chains): fused.arena_bytes}
    layers: dict[object, tuple[int, bool, bool]] = {}  # each node's kernel scratch, prepared once

    def arena(g: Graph) -> int:
        key = _key(fused_names(n) for n in g.nodes if n.op == "FusedConvChain")
        return exact[key] if key in exact else firmware_arena_bytes(
            g, core, layers, input_buffer=input_buffer)

    # why no splits without a limit: whole chains and none are the two measured plans, and a
    # part's estimate lies between them (the chain's ratio), so it never wins
    limited = ram_budget is not None or latency_bound is not None
    try:
        decision = plan_fusion(graph, "auto", ram_budget=ram_budget,
                               latency_bound=latency_bound, cost=cost, variant=variant,
                               arena=arena, splits=limited, residuals=residuals)
    except PlanError as err:
        inputs = sum(graph.tensor(t).nbytes for t in graph.inputs if t not in external)
        if ram_budget is None or not inputs or "RAM budget" not in str(err):
            raise
        # why the hint: the inputs are in every plan's arena, and may be most of a budget
        raise PlanError(f"{err} (the model's inputs take {inputs:,} B of every plan's arena; "
                        "--input-buffer caller reads them from your buffer instead)") from None
    return decision, cost, estimated


def _caller_bytes(graph: Graph, input_buffer: str) -> int:
    """Bytes of the inputs a build reads from the caller's buffers (0: they are in its arena)."""
    return sum(graph.tensor(t).nbytes for t in external_tensors(graph, input_buffer))


def _plain(graph: Graph, builds: _Builds, variant: str, ram_budget: int | None,
           latency_bound: float | None, residuals: bool = True) -> CortexMExecutable:
    """A model without a chain: its one build (emulated only to check a latency bound)."""
    exe = builds.build(graph, dict(builds.options))
    arena = int(exe.manifest["arena_bytes"])
    cost: dict[object, float] = {}
    cycles = 0
    if latency_bound is not None:
        bench = exe.emulate(*_bench_inputs(graph))
        exe.release_emulator()
        cost, cycles = _layer_costs(bench), int(bench.total_cycles or 0)
    decision = plan_fusion(graph, "none", ram_budget=ram_budget, latency_bound=latency_bound,
                           cost=cost, variant=variant, arena=lambda g: arena,
                           residuals=residuals)
    exe.fusion_report = AutoFusionReport(
        decision, PlanFigures(cycles, arena, 0), None, (), float(cycles), False, builds.count,
        ram_budget, latency_bound,
        caller_input_bytes=_caller_bytes(graph, str(builds.options.get("input_buffer")
                                                     or "arena")))
    return exe


def _layer_costs(bench: BenchResult) -> dict[object, float]:
    return {layer.name: float(layer.cycles or 0) for layer in bench.layers}


def _costs(graph: Graph, chains: list[Chain], variant: str, unfused: BenchResult,
           fused: BenchResult) -> tuple[dict[object, float], set[tuple[str, ...]]]:
    """Cycles of every layer (the layer-by-layer build), of every whole chain (its row of the
    fused build) and, estimated, of every part of a chain the planner may fuse: the chain's
    fused / unfused ratio times the part's members layer by layer."""
    cost = _layer_costs(unfused)
    by_name = _layer_costs(fused)
    estimated: set[tuple[str, ...]] = set()
    for chain in chains:
        members = sum(cost[m] for m in chain.names)
        whole = by_name[fused_node(chain, variant).name]
        cost[chain.names] = whole
        ratio = whole / members if members else 1.0
        for split in segmentations(chain):
            for part in split:
                if part.names not in cost:
                    cost[part.names] = ratio * sum(cost[m] for m in part.names)
                    estimated.add(part.names)
    return cost, estimated


__all__ = ["AutoFusionReport", "ChainFigures", "PlanFigures", "compile_auto", "skip_asked"]
