"""Runtime layer skipping in the generated firmware: which code runs under which mask bit,
which buffer every tensor lives in under each configuration, and the one arena plan valid
for all of them.

Built only when skipping is asked for (``compile_cortexm(skippable=True)``, ``skip`` or
``skip_configs``; docs/skipping.md): a plain build has none of this. One such firmware serves
every planned skip configuration. ``edgenn_invoke`` reads the mask once; each
layer of a block runs under ``if (!(mask & bits))``. A skipped block leaves either

* nothing (``alias``): its output is ``x`` itself, so whoever reads the block output reads
  ``x``'s buffer through a pointer chosen at run time (skip-aware buffer indexing), or
* its replacement node of ``apply_skip`` (``run``: the int8 -> int8 requantize, or a copy when
  the output must stay at its manifest offset), run at the Add's layer index.

Memory: in each configuration every buffer lives from the first to the last step (full-graph
node indices) that touches it *as executed in that configuration*; the arena is planned on
the union (the hull) of those intervals over the planned configurations (default:
``passes.skip.default_configs``, linear in the blocks beyond ten), so it is valid for each one
(checked per configuration). Scratch buffers of the kernels are included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgenn.backends.cortexm.codegen.memory import scratch_name
from edgenn.backends.cortexm.kernel import KernelCall
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import Core
from edgenn.errors import PlanError
from edgenn.ir import Graph
from edgenn.memory import Buffer, MemoryPlan, check_plan, get_planner, reshape_aliases
from edgenn.passes.skip import default_configs, find_blocks, parse_skip, skip_node

ALIAS, RUN = "alias", "run"


@dataclass(frozen=True)
class SkipBlock:
    """A block as the generator uses it: its mask bit, layer indices and what skipping runs."""

    name: str
    bit: int
    input: str
    output: str
    layers: tuple[int, ...]  # full-graph node indices, ascending; the last is the Add
    mode: str  # ALIAS or RUN
    replacement: KernelCall | None = None  # the apply_skip node's kernel (mode RUN)
    replacement_op: str = ""

    @property
    def mask(self) -> int:
        return 1 << self.bit

    @property
    def add_index(self) -> int:
        return self.layers[-1]


@dataclass
class SkipLayout:
    """Everything the generator needs to emit a mask-capable ``edgenn_invoke``."""

    blocks: tuple[SkipBlock, ...]
    configs: tuple[frozenset[str], ...]
    plan: MemoryPlan
    peak_bytes_per_config: dict[frozenset[str], int]
    aliases: dict[str, str]  # full-graph Reshape aliases (tensor -> owning tensor)
    layer_bits: list[int] = field(default_factory=list)  # OR of the bits of enclosing blocks

    def config_mask(self, config: Iterable[str]) -> int:
        by_name = {b.name: b for b in self.blocks}
        return sum(by_name[n].mask for n in set(config))

    def block_of_output(self, tensor: str) -> SkipBlock | None:
        return next((b for b in self.blocks if b.output == tensor and b.mode == ALIAS), None)

    def enclosing_bits(self, block: SkipBlock) -> int:
        """Bits of the other blocks whose layers contain this block's Add (nesting)."""
        return self.layer_bits[block.add_index] & ~block.mask

    def owner(self, tensor: str, mask: int) -> str:
        """The buffer holding ``tensor`` when the firmware runs with ``mask``."""
        tensor = self.aliases.get(tensor, tensor)
        block = self.block_of_output(tensor)
        if block is not None and mask & block.mask:
            return self.owner(block.input, mask)
        return tensor


def skip_blocks(graph: Graph, core: Core, blocks: Sequence[Any],
                copy_aliases: bool = False) -> tuple[SkipBlock, ...]:
    """The generator's view of ``blocks`` (edgenn.passes.skip Blocks) of ``graph``.

    With ``copy_aliases`` a block whose skip is a pure alias copies ``x`` into its output
    buffer instead: a few cycles more per skipped block, but ``x`` no longer has to outlive
    the blocks after it, which can shrink the one arena every configuration shares.
    """
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    aliases = reshape_aliases(graph)
    output_roots = {aliases.get(o, o) for o in graph.outputs}
    out: list[SkipBlock] = []
    for block in blocks:
        bit = int(block.index) - 1
        layers = tuple(sorted(order[n] for n in block.nodes))
        # why skip_node, not apply_skip: the node apply_skip puts in, without rebuilding and
        # re-validating the whole graph once per block; it reads x and writes the block
        # output, tensors of ``graph`` itself, so its kernel is prepared against ``graph``.
        rep = skip_node(graph, block)
        # why: an aliased graph output would move away from its manifest offset: copy instead.
        if rep.op == "Reshape" and block.output not in output_roots and not copy_aliases:
            out.append(SkipBlock(block.name, bit, block.input, block.output, layers, ALIAS,
                                 None, rep.op))
            continue
        kcall = select_kernel(rep, graph, core).prepare(rep, graph, core)
        if kcall.scratch_bytes:
            raise PlanError(f"{block.name}: the skip replacement {rep.op} needs scratch memory")
        out.append(SkipBlock(block.name, bit, block.input, block.output, layers, RUN, kcall,
                             rep.op))
    return tuple(out)


def _config_buffers(graph: Graph, layout: SkipLayout, mask: int,
                    scratch_bytes: Sequence[int]) -> list[Buffer]:
    """The buffers (owners, full-graph steps) of the firmware as it runs with ``mask``."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}

    def touch(name: str, step: int) -> None:
        owner = layout.owner(name, mask)
        first.setdefault(owner, step)
        first[owner] = min(first[owner], step)
        last[owner] = max(last.get(owner, step), step)

    scratch: list[Buffer] = []
    for name in graph.inputs:
        touch(name, 0)
    for step, node in enumerate(graph.nodes):
        if mask & layout.layer_bits[step]:
            continue
        for name in node.inputs:
            if name and not graph.tensor(name).is_const:
                touch(name, step)
        for name in node.outputs:
            touch(name, step)
        if scratch_bytes[step]:
            scratch.append(Buffer(scratch_name(step), int(scratch_bytes[step]), step, step))
    for b in layout.blocks:
        if b.mode == RUN and mask & b.mask and not mask & layout.enclosing_bits(b):
            touch(b.input, b.add_index)
            touch(b.output, b.add_index)
    last_step = max(len(graph.nodes) - 1, 0)
    for name in graph.outputs:
        touch(name, last_step)
    bufs = [Buffer(n, graph.tensor(n).nbytes, first[n], last[n]) for n in first]
    return sorted(bufs, key=lambda b: (b.first_use, b.last_use)) + scratch


def plan_skip_layout(graph: Graph, core: Core, blocks: Sequence[Any],
                     scratch_bytes: Sequence[int],
                     configs: Iterable[Iterable[str]] | None = None,
                     planner: str = "greedy",
                     copy_aliases: bool | None = None) -> SkipLayout:
    """Blocks, bits, the union arena plan and each configuration's own peak.

    ``copy_aliases`` None: aliasing skipped blocks and copying them are both planned and the
    smaller arena wins (ties: aliasing, which costs no cycles); True / False force one.
    """
    configs = None if configs is None else [frozenset(c) for c in configs]
    choices = (False, True) if copy_aliases is None else (copy_aliases,)
    layouts = [_plan_skip_layout(graph, core, skip_blocks(graph, core, blocks, copy),
                                 scratch_bytes, configs, planner) for copy in choices]
    return min(layouts, key=lambda layout: layout.plan.peak_bytes)


def _plan_skip_layout(graph: Graph, core: Core, sblocks: tuple[SkipBlock, ...],
                      scratch_bytes: Sequence[int],
                      configs: Iterable[Iterable[str]] | None, planner: str) -> SkipLayout:
    layer_bits = [0] * len(graph.nodes)
    for b in sblocks:
        for i in b.layers:
            layer_bits[i] |= b.mask
    known = {b.name for b in sblocks}
    # why the bounded default: 2**N configurations for N blocks would be 2**N plans
    cfgs = default_configs(sblocks) if configs is None else [frozenset(c) for c in configs]
    for c in cfgs:
        if not c <= known:
            raise PlanError(f"skip configuration {sorted(c)}: unknown block(s) "
                            f"{sorted(c - known)} (blocks: {', '.join(sorted(known))})")
    if frozenset() not in cfgs:
        cfgs.insert(0, frozenset())
    layout = SkipLayout(sblocks, tuple(dict.fromkeys(cfgs)), MemoryPlan({}, 0, 16),
                        {}, reshape_aliases(graph), layer_bits)

    per_config: dict[frozenset[str], list[Buffer]] = {}
    hull: dict[str, Buffer] = {}
    for c in layout.configs:
        bufs = _config_buffers(graph, layout, layout.config_mask(c), scratch_bytes)
        per_config[c] = bufs
        for buf in bufs:
            old = hull.get(buf.name)
            hull[buf.name] = buf if old is None else Buffer(
                buf.name, buf.size, min(old.first_use, buf.first_use),
                max(old.last_use, buf.last_use))
    chosen = get_planner(planner)
    union = check_plan(chosen.plan(sorted(hull.values(),
                                          key=lambda b: (b.first_use, b.last_use))))
    peaks: dict[frozenset[str], int] = {}
    for c, bufs in per_config.items():
        check_plan(union, bufs)  # why: the union plan must hold in each configuration alone
        peaks[c] = max(16, chosen.plan(bufs).peak_bytes)
    offsets = dict(union.offsets)
    for alias, owner in layout.aliases.items():
        if owner in offsets:
            offsets[alias] = offsets[owner]
    layout.plan = MemoryPlan(offsets, union.peak_bytes, union.alignment, union.buffers,
                             layout.aliases, union.planner)
    layout.peak_bytes_per_config = peaks
    return layout


@dataclass(frozen=True)
class SkipRequest:
    """What a build was asked for: the blocks to make skippable (none: a plain firmware with
    no mask code), the configurations to plan (None: ``default_configs``) and the one
    ``run`` / ``bench`` use when not told otherwise."""

    blocks: tuple[Any, ...] = ()
    configs: tuple[frozenset[str], ...] | None = None
    default: frozenset[str] = frozenset()


def skip_request(graph: Graph, skippable: bool = False, skip: str | Iterable[str] | None = None,
                 configs: Iterable[Iterable[str]] | None = None) -> SkipRequest:
    """The skip support a build gets. Only an explicit request builds it: ``skippable``, a
    ``skip`` configuration (``"block2,block3"``: it is planned and becomes the default) or
    a ``configs`` list; otherwise, even with skippable blocks in ``graph``, a plain build,
    exactly as for a network without any (why: skipping is optional and must cost nothing
    when unused). Unknown block names are one-line EdgennErrors naming the known blocks."""
    asked = configs is not None
    chosen = None if configs is None else tuple(frozenset(c) for c in configs)
    if not (skippable or asked or skip):
        return SkipRequest()
    blocks = find_blocks(graph)
    default = parse_skip(skip, blocks)
    if not (skippable or asked or default):  # ``skip="none"``: the full network, plain
        return SkipRequest()
    if default and chosen is not None and default not in chosen:
        chosen = (*chosen, default)
    elif default and chosen is None and default not in default_configs(blocks):
        chosen = (*default_configs(blocks), default)
    return SkipRequest(tuple(blocks), chosen, default)
