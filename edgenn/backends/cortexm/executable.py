"""Compile a graph for a Cortex-M core and run it in the emulator: ``compile_cortexm``."""

from __future__ import annotations

import gc
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgenn.backends.bench_report import BenchReport, BenchSettings
from edgenn.backends.cortexm import trial_cache
from edgenn.backends.cortexm.bench_report import cortexm_report
from edgenn.backends.cortexm.build import DeferredLibrary, build_project, find_compiler
from edgenn.backends.cortexm.codegen.project import (
    DEFAULT_NAME,
    DEFAULT_STACK_BYTES,
    GENERIC_BOARD,
    Project,
    generate,
)
from edgenn.backends.cortexm.codegen.skip import skip_request
from edgenn.backends.cortexm.emulator.flashmap import FlashMap
from edgenn.backends.cortexm.fit import (
    PROBE_KB,
    Device,
    FitError,
    check_fit,
    device_memory,
    elf_usage,
)
from edgenn.backends.cortexm.flash_policy import (
    LazySequence,
    Measured,
    default_budget_bytes,
    plan_code_size,
)
from edgenn.backends.cortexm.targets import Core, get_core
from edgenn.errors import EdgennError, ShapeError
from edgenn.ir import Graph
from edgenn.ir.batch import first_sample, has_batch_axis, read_batch, takes_batch
from edgenn.ir.layout import to_internal
from edgenn.ir.sample import random_inputs
from edgenn.phases import phase

CYCLE_MODEL = "cortex-m4-trm-zero-wait-state"
UNICORN, QEMU = "unicorn", "qemu"
EMULATORS = (UNICORN, QEMU)


@dataclass(frozen=True)
class LayerBench:
    index: int
    name: str
    op: str
    kernel: str
    macs: int
    cycles: int | None
    instructions: int
    flash_bytes: int = 0  # the layer's own constants and generated functions (l<i>_* symbols)


@dataclass(frozen=True)
class BenchResult:
    """One emulated inference: per-layer and total cost, memory figures.

    Cycles follow the project's Cortex-M4 model (zero wait states; no caches, flash wait states
    or bus contention) and are None on cores without it: use ``instructions`` there.
    """

    core: str
    layers: list[LayerBench]
    total_cycles: int | None
    total_instructions: int
    arena_bytes: int
    stack_bytes: int
    flash_bytes: int
    ram_bytes: int
    cycle_model: str | None
    sizes: dict[str, int] = field(default_factory=dict)
    skip: list[str] = field(default_factory=list)  # the skipped blocks, in block order
    switch_cycles: int | None = None  # cost of the NAME_set_skip_mask call (cycle model)
    switch_instructions: int | None = None
    # flash not owned by one layer: "shared_kernels", "runtime", "other" (emulator/flashmap.py)
    flash_breakdown: dict[str, int] = field(default_factory=dict)
    # bytes of the inputs read in place from the caller's buffers (--input-buffer caller): in
    # RAM beside the arena, not in arena_bytes (0: the inputs are in the arena)
    caller_input_bytes: int = 0


class CortexMExecutable:
    """A graph built into firmware for one core; ``run`` and ``bench`` execute it emulated."""

    def __init__(self, graph: Graph, core: Core, project: Project, elf: Path | None,
                 tmp: tempfile.TemporaryDirectory[str] | None = None) -> None:
        self.graph = graph
        self.core = core
        self.project = project
        self.elf = elf
        self.manifest = project.manifest
        self._tmp = tmp  # keeps a temporary build directory alive with the executable
        self._machine: Any = None
        # The configuration run() and bench() use when not told otherwise (CLI --skip).
        self.default_skip: str | Iterable[str] = frozenset()
        # "unicorn": edgenn's cycle-model emulator (generic builds); "qemu": run() boots a real
        # board's example application in qemu-system-arm (boards/qemu.py), bench() refuses
        self.emulator = UNICORN
        self.qemu_timeout = 120.0  # seconds per QEMU boot
        # what --fuse auto measured and chose (fusion_auto.AutoFusionReport), else None
        self.fusion_report: Any = None
        # a build made with defer_library: what completes its library (finish_library)
        self.pending_library: list[DeferredLibrary] = []

    def finish_library(self) -> None:
        """Complete the library of a ``compile_cortexm(..., defer_library=True)`` build: compile
        ``NAME.o`` and archive ``libNAME.a`` (the ELF is final already). Safe to run while the
        ELF is emulated; a no-op for any other build."""
        while self.pending_library:
            self.pending_library[0]()  # why listed while it runs: cancel_library reaches it
            self.pending_library.pop(0)

    def cancel_library(self) -> None:
        """Stop completing the library (from any thread; :meth:`finish_library` then raises
        ``Cancelled``): a build whose folder will not be kept, whose gcc run would only take
        a core from the one that is."""
        for job in list(self.pending_library):
            job.cancel()

    @property
    def out_dir(self) -> Path:
        return self.project.out_dir

    @property
    def machine(self) -> Any:
        if self._machine is None:
            from edgenn.backends.cortexm.emulator import Machine

            if self.elf is None:
                raise EdgennError(f"{self.out_dir}: a library-only build has no application "
                                  "to run (compile without --library-only)")
            if self.manifest.get("board", GENERIC_BOARD) != GENERIC_BOARD:
                raise EdgennError(f"{self.out_dir}: the cycle-model emulator runs --board "
                                  f"generic builds; this one is for {self.manifest['board']}")
            self._machine = Machine(self.elf, self.manifest, self.core)
        return self._machine

    def release_emulator(self) -> None:
        """Free the loaded emulator (it is loaded again when needed). Why: each unicorn
        instance reserves a large translation buffer; a compile that measures several trial
        builds must not hold them all at once."""
        self._machine = None
        gc.collect()  # why: the emulator's hooks form reference cycles with it

    # --------------------------------------------------------------------------- skipping
    @property
    def blocks(self) -> list[dict[str, Any]]:
        """The skippable blocks of a mask-capable firmware (manifest "blocks"), else []."""
        return list(self.manifest.get("blocks", []))

    def skip_mask(self, skip: str | Iterable[str] | None) -> int:
        """The mask of a skip configuration (block names, or ``"block1,block2"``)."""
        names = ([p.strip() for p in skip.split(",") if p.strip() and p.strip() != "none"]
                 if isinstance(skip, str) else list(skip or ()))
        bits = {str(b["name"]): int(b["bit"]) for b in self.blocks}
        allowed = self.manifest.get("skip_configs")
        mask = 0
        for name in names:
            if name not in bits:
                have = (f"its blocks are {', '.join(bits)}" if bits else
                        "it was built without skip support (compile with --skippable, or "
                        "--skip BLOCKS; skippable=True from Python)")
                raise EdgennError(f"firmware of model {self.graph.name!r}: cannot skip "
                                  f"{name!r}; {have}")
            mask |= 1 << bits[name]
        if names and allowed is not None:
            from edgenn.backends.cortexm.codegen.project import config_key

            if config_key(names) not in allowed:
                raise EdgennError(f"firmware of model {self.graph.name!r}: skip configuration "
                                  f"{config_key(names)!r} was not planned (built for: "
                                  f"{', '.join(allowed)})")
        return mask

    def set_skip(self, skip: str | Iterable[str] | None) -> Any:
        """Call ``NAME_set_skip_mask`` in the loaded machine; returns its CallResult
        (None for a firmware without blocks asked for the full network)."""
        mask = self.skip_mask(skip)
        if not self.blocks:
            return None
        return self.machine.call(str(self.manifest["skip_mask_symbol"]), mask)

    # --------------------------------------------------------------------------- running
    @takes_batch
    def run(self, *inputs: np.ndarray, skip: str | Iterable[str] | None = None,
            stateful: bool = False) -> list[np.ndarray]:
        """Run inputs as the model declares them (``edgenn.ir.batch``; one inference per
        sample), with the blocks of ``skip`` skipped (a skip-capable firmware: set before the
        first sample).

        A stateful model (``NAME_STATE_BYTES`` > 0): with ``stateful=False`` the firmware's
        ``NAME_reset_state`` runs before every sample and the state kept in the emulated
        arena is restored afterwards; with ``stateful=True`` the samples are consecutive
        invocations continuing from that state (under ``--emulator qemu`` each call boots the
        board, so a stateful call starts from the initial state)."""
        internal = self._inputs(inputs)
        if self.emulator == QEMU:
            skip = self.default_skip if skip is None else skip
            if self.graph.state and not stateful and len(self._items(internal)) > 1:
                # why one boot per item: the board's application invokes its items as one
                # stream from the initial state (each boot starts a new one)
                parts = [self._run_qemu([x[i:i + 1] for x in internal], skip)
                         for i in range(len(internal[0]))]
                return [np.concatenate(p) for p in zip(*parts, strict=True)]
            return self._run_qemu(internal, skip)
        self.machine.set_timed(False)  # outputs only: no cycle count
        self.set_skip(self.default_skip if skip is None else skip)
        reset = bool(self.graph.state) and not stateful
        kept = self._read_state() if reset else b""
        outs: list[list[np.ndarray]] = [[] for _ in self.graph.outputs]
        for item in self._items(internal):
            if reset:
                self.reset_state()
            result = self.machine.invoke(item, timed=False)
            for k, data in enumerate(result.outputs):
                outs[k].append(self._output(k, data))
        if reset:
            self._write_state(kept)
        return self._join(outs)

    # --------------------------------------------------------------------------- state
    def reset_state(self) -> None:
        """Call the firmware's ``NAME_reset_state`` (a no-op for a stateless model)."""
        if not self.graph.state:
            return
        status = self.machine.call(str(self.manifest["reset_state_symbol"])).value
        if status != 0:
            raise EdgennError(f"firmware {self.out_dir}: reset_state returned {status}")

    def _state_span(self) -> tuple[int, int]:
        slots = self.manifest.get("state", [])
        if not slots:
            return 0, 0
        start = min(int(s["offset"]) for s in slots)
        return start, max(int(s["offset"]) + int(s["bytes"]) for s in slots) - start

    def _read_state(self) -> bytes:
        start, size = self._state_span()
        return self.machine.read(str(self.manifest["arena_symbol"]), size, start) if size else b""

    def _write_state(self, data: bytes) -> None:
        start, _ = self._state_span()
        if data:
            self.machine.write(str(self.manifest["arena_symbol"]), data, start)

    def bench(self, *inputs: np.ndarray, settings: BenchSettings | None = None,
              skip: str | Iterable[str] | None = None,
              stateful: bool = False) -> BenchReport[BenchResult]:
        """One emulated inference of the first item of each input in the skip configuration
        ``skip``: per-layer cycles, ms at ``settings.clock_mhz``, memory (``detail`` is the
        emulation's ``BenchResult``; its switch cost is ``detail.switch_cycles``).
        A stateful model starts from a reset state; with ``stateful`` the items before the
        last run as consecutive invocations and the last one is measured."""
        clock_mhz = (settings or BenchSettings()).clock_mhz
        if self.graph.state:
            self.reset_state()
            if stateful:
                arrays = read_batch(self.graph, inputs).arrays  # [n, *declared shape] each
                if len(arrays[0]) > 1:
                    self.run(*(x[:-1] for x in arrays), skip=skip, stateful=True)
                inputs = tuple(x[-1] for x in arrays)
        return cortexm_report(self, self.emulate(*inputs, skip=skip), clock_mhz)

    def emulate(self, *inputs: np.ndarray,
                skip: str | Iterable[str] | None = None) -> BenchResult:
        """One inference of the first item of each input, with per-layer cycle counts, in the
        skip configuration ``skip`` (its switch cost is ``switch_cycles``)."""
        if self.emulator != UNICORN:
            raise EdgennError(f"bench counts cycles in edgenn's emulator (--board generic "
                              f"--emulator {UNICORN}); --emulator {self.emulator} only runs: "
                              "use run, eval or validate")
        internal = self._inputs(tuple(first_sample(self.graph, inputs)))
        skip = self.default_skip if skip is None else skip
        with phase("emulate"):
            self.machine.set_timed(True)  # the switch's cost is reported too
            switch = self.set_skip(skip)
            result = self.machine.invoke(self._items(internal)[0])
        sizes = self.machine.elf_sizes()
        with_cycles = result.cycles is not None
        fmap = self.flash_map()
        layers = [
            LayerBench(int(m["index"]), str(m["name"]), str(m["op"]), str(m["kernel"]),
                       int(m["macs"]), result.layer_cycles[i] if with_cycles else None,
                       result.layer_instructions[i], fmap.layers[i])
            for i, m in enumerate(self.manifest["layers"])
        ]
        return BenchResult(
            core=self.core.name, layers=layers, total_cycles=result.cycles,
            total_instructions=result.instructions, arena_bytes=int(self.manifest["arena_bytes"]),
            stack_bytes=result.stack_bytes, flash_bytes=int(sizes["flash_bytes"]),
            ram_bytes=int(sizes["ram_bytes"]),
            cycle_model=CYCLE_MODEL if with_cycles else None, sizes=dict(sizes),
            skip=[str(b["name"]) for b in self.blocks
                  if self.skip_mask(skip) >> int(b["bit"]) & 1],
            switch_cycles=switch.cycles if switch is not None else None,
            switch_instructions=switch.instructions if switch is not None else None,
            flash_breakdown={"shared_kernels": fmap.shared_kernels, "runtime": fmap.runtime,
                             "other": fmap.other},
            caller_input_bytes=int(self.manifest.get("input_bytes", 0)),
        )

    def _run_qemu(self, internal: list[np.ndarray],
                  skip: str | Iterable[str]) -> list[np.ndarray]:
        """``run`` on the board's example application in qemu-system-arm."""
        from edgenn.backends.cortexm.boards.qemu import run_in_qemu

        if self.elf is None:
            raise EdgennError(f"{self.out_dir}: a library-only build has no application to run")
        if self.skip_mask(skip):
            raise EdgennError(f"{self.out_dir}: the board's example application runs the full "
                              f"network; skipping blocks needs --emulator {UNICORN}")
        results = run_in_qemu(self.elf, str(self.manifest["board"]), self.manifest,
                              self._items(internal), self.qemu_timeout)
        return self._join([[self._output(k, r[k]) for r in results]
                           for k in range(len(self.graph.outputs))])

    def flash_map(self) -> FlashMap:
        """Flash bytes per layer, shared kernels and runtime, from the ELF's symbol table
        (``emulator.flashmap.FlashMap``; no emulation needed)."""
        from edgenn.backends.cortexm.emulator.elf import ElfImage
        from edgenn.backends.cortexm.emulator.flashmap import RUNTIME_SYMBOLS, flash_map

        if self.elf is None:
            raise EdgennError(f"{self.out_dir}: a library-only build has no ELF to map")
        runtime = RUNTIME_SYMBOLS | {str(self.manifest.get(k, "")) for k in
                                     ("invoke_symbol", "mark_symbol", "main_symbol")}
        runtime |= {str(s) for s in self.manifest.get("runtime_symbols", [])}
        return flash_map(ElfImage(self.elf), len(self.manifest["layers"]), runtime)

    def sizes(self) -> dict[str, int]:
        """flash / RAM of the ELF and the arena, in bytes (the arena only, for a library);
        ``caller_input``: the inputs a ``--input-buffer caller`` build reads from the caller's
        buffers (beside the arena, not in it; the emulator's application has them in its
        RAM), absent otherwise."""
        state = int(self.manifest.get("state_bytes", 0))
        caller = ({"caller_input": int(self.manifest["input_bytes"])}
                  if "input_bytes" in self.manifest else {})
        if self.elf is None:
            return {"arena": int(self.manifest["arena_bytes"]), **caller, "state": state}
        from edgenn.backends.cortexm.emulator.elf import ElfImage

        # why not the machine's: the same figures without loading the emulator
        image = ElfImage(self.elf)
        syms = image.symbols
        stack = ((syms["_sstack"], syms["_estack"])
                 if "_sstack" in syms and "_estack" in syms else None)
        s = image.sizes(stack)
        return {"flash": int(s["flash_bytes"]), "ram": int(s["ram_bytes"]),
                "arena": int(self.manifest["arena_bytes"]), **caller, "state": state}

    # --------------------------------------------------------------------------- layouts
    def _inputs(self, inputs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        g = self.graph
        if len(inputs) != len(g.inputs):
            raise ShapeError(f"model {g.name!r} takes {len(g.inputs)} inputs, got {len(inputs)}")
        out = [to_internal(g, name, np.asarray(arr))
               for name, arr in zip(g.inputs, inputs, strict=True)]
        if has_batch_axis(g) and len({a.shape[0] for a in out}) > 1:
            raise ShapeError(f"model {g.name!r}: inputs have different batch sizes")
        return out

    def _items(self, internal: list[np.ndarray]) -> list[list[bytes]]:
        """The input bytes of each inference: one per item of axis 0 when the graph has a
        batch axis, else the one sample in its declared shape (``edgenn.ir.batch``)."""
        n = (internal[0].shape[0] if internal else 1) if has_batch_axis(self.graph) else 1
        return [[x.reshape(n, -1)[i].tobytes() for x in internal] for i in range(n)]

    def _output(self, k: int, data: bytes) -> np.ndarray:
        t = self.graph.tensor(self.graph.outputs[k])
        return np.frombuffer(data, t.dtype.numpy).reshape(t.shape).copy()

    def _join(self, outs: list[list[np.ndarray]]) -> list[np.ndarray]:
        """Each output's inferences as one array in the model file's layout: joined along the
        batch axis, or the one sample of a graph without one."""
        batched = has_batch_axis(self.graph)
        return [self._to_external(name, np.concatenate(o) if batched else o[0])
                for name, o in zip(self.graph.outputs, outs, strict=True)]

    def _to_external(self, name: str, arr: np.ndarray) -> np.ndarray:
        perm = self.graph.external_perm.get(name)
        return np.ascontiguousarray(arr.transpose(perm)) if perm else arr


def compile_cortexm(graph: Graph, core: str | Core = "cortex-m4", out_dir: str | Path | None = None,
                    ram_kb: int | None = None, opt: str = "-O2",
                    stack_bytes: int = DEFAULT_STACK_BYTES, skippable: bool = False,
                    skip_configs: Iterable[Iterable[str]] | None = None,
                    skip_copy: bool | None = None, skip: str | Iterable[str] | None = None,
                    flash_kb: float | None = None, compact: bool | None = None,
                    name: str = DEFAULT_NAME,
                    board: str = GENERIC_BOARD, library_only: bool = False,
                    arena: str = "static", emulator: str | None = None,
                    flash_budget_kb: float | None = None,
                    defer_library: bool = False,
                    input_buffer: str = "arena") -> CortexMExecutable:
    """Generate the C project (in ``out_dir`` or a temporary directory), build the ELF.

    Skip support only when asked for (docs/skipping.md): with ``skippable``, a ``skip``
    configuration (``"block2"``: planned, and what ``run`` / ``bench`` use by default) or a
    ``skip_configs`` list, and skippable blocks in ``graph`` (``edgenn.passes.skip.find_blocks``),
    one firmware serves every planned configuration (``run(x, skip=...)``), its arena planned
    for ``skip_configs`` (default: ``passes.skip.default_configs``, every subset of at most ten
    blocks, else the full network and each block alone). Otherwise the firmware is the plain
    one, whatever blocks the graph has. ``ram_kb`` / ``flash_kb``: the device's RAM and flash
    (default: the board's, else the core's reference part); an image that exceeds either is a
    one-line ``fit.FitError`` with the bytes needed and the flag value that would fit.
    ToolchainError if arm-none-eabi-gcc is missing or the build fails. ``flash_budget_kb``:
    the flash the fast generated code may fill (default: ``flash_kb`` when given, else int8
    parameter bytes + 48 KiB; at most the device's flash); a fast build over it gets compact
    code in as few layers as it needs, the cheapest in cycles first (``flash_policy``).
    ``compact``: force compact (True) or fast (False) generated code everywhere, measuring
    nothing; None: compact only where the fast build exceeds the budget.
    ``name``, ``board``, ``library_only``, ``arena``: the library's name, the application
    around it (``generic``: the emulator's; a real board's example, see ``boards``), none at
    all, and where its arena lives (``codegen.project.generate``). The flash policy measures
    generic static-arena builds; the final build has these settings. ``emulator``: what
    ``run`` uses, ``"unicorn"`` (edgenn's cycle-model emulator, generic builds) or ``"qemu"``
    (the board's example application in qemu-system-arm; needs a real ``board``); default:
    unicorn for the generic board, qemu for a real one. ``defer_library``: the library's
    model object of the result (out_dir's build) is left to its ``finish_library()`` (the
    ELF is complete; ``--fuse auto`` compiles it while it emulates its candidates).
    ``input_buffer``: ``"arena"`` (default) or ``"caller"``: the inputs are read in place from
    the caller's buffers (``NAME_set_input``), outside the arena (``codegen.project.generate``;
    the emulator's application keeps them in RAM buffers of its own, which ``run`` and
    ``bench`` fill).
    """
    c = core if isinstance(core, Core) else get_core(core)
    emulator = _check_emulator(emulator, board)
    request = skip_request(graph, skippable, skip, skip_configs)
    device = device_memory(c, _board_spec(board), ram_kb, flash_kb, flash_budget_kb)
    label = f"graph {graph.name!r}: the firmware"

    final = {"name": name, "board": board, "library_only": library_only, "arena": arena}
    prepared: dict[tuple[int, bool], Any] = {}  # kernel calls, shared by every build below
    measured = {"name": name, "board": GENERIC_BOARD, "library_only": False, "arena": "static"}

    def generate_in(directory: str | Path, compact_layers: frozenset[int],
                    settings: dict[str, Any], link_flash_kb: float | None) -> Any:
        with phase(f"generate ({len(compact_layers)} compact layers)"):
            return generate(graph, c, directory, ram_kb=device.ram_bytes // 1024, opt=opt,
                            stack_bytes=stack_bytes, skip_copy=skip_copy, blocks=request.blocks,
                            skip_configs=request.configs, compact_layers=compact_layers,
                            flash_kb=link_flash_kb, prepared=prepared,
                            input_buffer=input_buffer, **settings)

    def build_final(project: Project) -> CortexMExecutable:
        """``project`` (in out_dir, the final settings) built, its library's model object
        deferred when asked (``defer_library``)."""
        pending: list[DeferredLibrary] | None = [] if defer_library else None
        elf = build_project(project, archive=True, device=device, label=label, later=pending)
        exe = CortexMExecutable(graph, c, project, elf, None)
        exe.pending_library = pending or []
        return exe

    def build_in(directory: str | Path | None, compact_layers: frozenset[int],
                 settings: dict[str, Any],
                 link_flash_kb: float | None = flash_kb) -> CortexMExecutable:
        tmp = None
        if directory is None:
            tmp = tempfile.TemporaryDirectory(prefix="edgenn-cortexm-")
            directory = tmp.name
        project = generate_in(directory, compact_layers, settings, link_flash_kb)
        if tmp is None:
            return build_final(project)
        # why no archive in a temporary folder: nobody ships it; NAME.c compiles once
        elf = build_project(project, archive=False, device=device, label=label)
        return CortexMExecutable(graph, c, project, elf, tmp)

    budget = _flash_budget(graph, device)
    trial: dict[frozenset[int], CortexMExecutable] = {}

    background: list[threading.Thread] = []  # emulations started ahead of their reading
    inputs = _bench_inputs(graph)  # seeded: the same for every trial
    # trial-cache key of each generated project, hashed once (by object: a folder may be
    # generated again with other contents; the entry keeps its project, so ids stay unique)
    keys: dict[int, tuple[Project, str]] = {}

    def key_of(project: Project) -> str:
        if id(project) not in keys:
            keys[id(project)] = project, trial_cache.trial_key(project.out_dir, find_compiler(),
                                                               inputs)
        return keys[id(project)][1]

    def measured_build(project: Project, build: Callable[[], CortexMExecutable],
                       emulate_over: int | None = None) -> Measured:
        """The figures of ``project`` (built by ``build`` when a figure is not in the trial
        cache, once): flash now, per-layer cycles and flash when first read. Flash over
        ``emulate_over``: the cycles are emulated on a thread from now on (the policy reads
        them after its next build, whose gcc runs meanwhile); the figures are the same, they
        and the cache are written in the reading thread, an emulation error raised there."""
        key = key_of(project)
        known = trial_cache.load(key) or {}
        built: list[CortexMExecutable] = []

        def exe() -> CortexMExecutable:
            if not built:
                built.append(build())
            return built[0]

        def remember() -> None:
            cycles, layers = known.get("layer_cycles"), known.get("layer_flash")
            trial_cache.store(key, flash, cycles if isinstance(cycles, list) else None,
                              layers if isinstance(layers, list) else None)

        def emulated() -> list[int]:
            result = exe().emulate(*inputs)
            exe().release_emulator()
            return [layer.cycles if layer.cycles is not None else layer.instructions
                    for layer in result.layers]

        ahead: dict[str, Any] = {}

        def emulate_ahead() -> None:
            try:
                ahead["cycles"] = emulated()
            except BaseException as err:  # re-raised where the cycles are read
                ahead["error"] = err

        def layer_cycles() -> list[int]:
            cached = known.get("layer_cycles")
            if isinstance(cached, list):
                return [int(v) for v in cached]
            if thread is not None:
                thread.join()
                if "error" in ahead:
                    raise ahead["error"]
                cycles = ahead["cycles"]
            else:
                cycles = emulated()
            known["layer_cycles"] = cycles
            remember()
            return cycles

        def layer_flash() -> list[int]:
            cached = known.get("layer_flash")
            if isinstance(cached, list):
                return [int(v) for v in cached]
            known["layer_flash"] = layers = exe().flash_map().layers
            remember()
            return layers

        cached_flash = known.get("flash_bytes")
        flash = cached_flash if isinstance(cached_flash, int) else exe().sizes()["flash"]
        if cached_flash is None:
            remember()
        thread = None
        if (emulate_over is not None and flash > emulate_over
                and not isinstance(known.get("layer_cycles"), list)):
            thread = threading.Thread(target=emulate_ahead, name="edgenn-trial-cycles",
                                      daemon=True)
            thread.start()
            background.append(thread)
        return Measured(flash, LazySequence(layer_cycles), LazySequence(layer_flash))

    generated: dict[frozenset[int], tuple[Any, Project]] = {}  # by prefetch, not measured yet

    def trial_project(compact_layers: frozenset[int]) -> tuple[Any, Project]:
        """A trial's temporary folder and project: the measured settings."""
        if compact_layers in generated:
            return generated.pop(compact_layers)
        # why the probe's flash: the policy measures builds larger than the device too (the
        # fast build, before it compacts); the device is checked on the final build below
        tmp = tempfile.TemporaryDirectory(prefix="edgenn-cortexm-")
        return tmp, generate_in(tmp.name, compact_layers, measured, PROBE_KB)

    def trial_build(compact_layers: frozenset[int], tmp: Any,
                    project: Project) -> CortexMExecutable:
        elf = build_project(project, archive=False, device=device, label=label)
        trial[compact_layers] = CortexMExecutable(graph, c, project, elf, tmp)
        return trial[compact_layers]

    # the one mixed choice built in out_dir with the final settings (``candidate``)
    placed: dict[str, Any] = {}
    place = out_dir is not None and final == measured and compact is None

    def measure(compact_layers: frozenset[int]) -> Measured:
        """A trial build (unless ``prefetch`` built it already); the first mixed one in
        out_dir, when it can be (``candidate``)."""
        if (place and not placed and 0 < len(compact_layers) < len(graph.nodes)
                and compact_layers not in generated and compact_layers not in trial):
            got = candidate(compact_layers)
            if got is not None:
                return got
        tmp, project = trial_project(compact_layers)

        def build() -> CortexMExecutable:
            if compact_layers in trial:
                return trial[compact_layers]
            return trial_build(compact_layers, tmp, project)

        # why the fast build's cycles ahead: over the budget, the policy reads them after
        # its next build (the compact one), whose gcc runs meanwhile
        return measured_build(project, build,
                              emulate_over=None if compact_layers else budget)

    def candidate(compact_layers: frozenset[int]) -> Measured | None:
        """The build of ``compact_layers`` in out_dir with the final settings, measured as a
        trial is (the same objects and ELF flash): the policy's first mixed choice is
        usually its answer (the predicted prefix), which then is not built again. None when
        it does not fit the device (a trial, linked against the probe's flash, measures it)."""
        assert out_dir is not None
        project = generate_in(out_dir, compact_layers, final, flash_kb)
        # why: the fast build's archive, if it was built, is not a file of this project (its
        # trial-cache key would depend on whether the fast build was read from the cache)
        (project.out_dir / project.library).unlink(missing_ok=True)
        made: list[CortexMExecutable] = []

        def build() -> CortexMExecutable:
            if not made:
                made.append(build_final(project))
            return made[0]

        try:
            got = measured_build(project, build)
        except FitError:
            return None
        placed.update(layers=compact_layers, build=build)
        return got

    def prefetch(choices: Sequence[frozenset[int]]) -> None:
        """Generate the trials of ``choices`` one by one (Python), then build those the trial
        cache does not know side by side (gcc, one thread each). A build that fails here is
        dropped: ``measure`` builds it again if it is needed, and reports the failure then."""
        todo = []
        for compact_layers in choices:
            if compact_layers in trial or compact_layers in generated:
                continue
            generated[compact_layers] = tmp, project = trial_project(compact_layers)
            if not isinstance((trial_cache.load(key_of(project)) or {}).get("flash_bytes"), int):
                todo.append((compact_layers, tmp, project))
        if len(todo) < 2:
            return
        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            futures = [pool.submit(trial_build, *job) for job in todo]
        for (compact_layers, _, _), future in zip(todo, futures, strict=True):
            if future.exception() is not None:
                trial.pop(compact_layers, None)

    def fast_in_place(directory: str | Path) -> tuple[CortexMExecutable | None, Measured | None]:
        """The fast build in ``directory`` with the final settings, when it links and its
        flash is within the budget; else its figures (None when it does not fit the device):
        the policy's measurement of the fast build."""
        project = generate_in(directory, frozenset(), final, flash_kb)
        made: list[CortexMExecutable] = []

        def build() -> CortexMExecutable:
            made.append(build_final(project))
            return made[0]

        try:
            fast = measured_build(project, build, emulate_over=budget)
            if fast.flash_bytes > budget:
                return None, fast
            return (made[0] if made else build()), None
        except FitError:
            return None, None

    exe, fast = None, None
    if compact is None and out_dir is not None and final == measured:
        # why the final build first: a fast build within the budget is the policy's answer
        # (it measures nothing else then), so a trial build of the same code would be wasted;
        # over the budget, its figures are the policy's measurement of the fast build
        exe, fast = fast_in_place(out_dir)
    if exe is None:
        try:
            compact_layers = plan_code_size(graph, measure, budget, compact, fast, prefetch)
        finally:
            for thread in background:  # an emulation the policy did not need: let it end
                thread.join()
        reuse = out_dir is None and final == measured and compact_layers in trial
        # why reuse only then: a trial is a temporary folder with the measured settings
        if placed.get("layers") == compact_layers:
            exe = placed["build"]()  # out_dir holds it (built unless the trial cache knew it)
        elif reuse:
            exe = trial[compact_layers]
        else:
            exe = build_in(out_dir, compact_layers, final)
    if exe.elf is not None:
        check_fit(elf_usage(exe.elf), device, int(exe.manifest["arena_bytes"]), label)
    exe.emulator = emulator
    exe.default_skip = request.default
    return exe


def flash_budget_bytes(graph: Graph, core: str | Core = "cortex-m4", board: str = GENERIC_BOARD,
                       flash_kb: float | None = None, flash_budget_kb: float | None = None,
                       **_: Any) -> int:
    """The flash policy's budget for ``graph`` with these ``compile_cortexm`` options: a fast
    (``compact=False``) build within it is exactly what ``compact=None`` builds."""
    c = core if isinstance(core, Core) else get_core(core)
    return _flash_budget(graph, device_memory(c, _board_spec(board), None, flash_kb,
                                              flash_budget_kb))


def _board_spec(board: str) -> Any:
    """The real board's spec (memory map); None for the generic layout."""
    if board == GENERIC_BOARD:
        return None
    from edgenn.backends.cortexm.boards import get_board

    return get_board(board)


def _flash_budget(graph: Graph, device: Device) -> int:
    """The flash policy's budget: ``--flash-budget-kb``, else ``--flash-kb`` (the whole flash
    the user says the device has), else the int8 parameters + 48 KiB; at most the device's.
    Over it, the policy compacts generated code."""
    if device.budget_bytes is not None:
        wanted = device.budget_bytes
    elif device.flash_flag is not None:
        wanted = device.flash_bytes
    else:
        wanted = default_budget_bytes(graph)
    return min(wanted, device.flash_bytes)


def _check_emulator(emulator: str | None, board: str) -> str:
    """The emulator ``run`` uses (None: the board's default); EdgennError for an unknown one
    or QEMU asked to run a generic build."""
    if emulator is None:
        return UNICORN if board == GENERIC_BOARD else QEMU
    if emulator not in EMULATORS:
        raise EdgennError(f"unknown emulator {emulator!r} (known: {', '.join(EMULATORS)})")
    if emulator == QEMU and board == GENERIC_BOARD:
        from edgenn.backends.cortexm.boards import BOARDS

        real = [b for b in BOARDS if b != GENERIC_BOARD]
        raise EdgennError(f"--emulator {QEMU} runs a real board's example application: "
                          f"add --board {' or '.join(real)}")
    return emulator


def _bench_inputs(graph: Graph) -> list[np.ndarray]:
    """Seeded random inputs (one item each) for the flash policy's measuring runs."""
    return random_inputs(graph)
