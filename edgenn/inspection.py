"""What a model holds and what it would cost on a Cortex-M core, before any build (the
computation behind ``edgenn inspect``; no compiler call, like STM32Cube.AI's analyze).

:func:`summary`: layers, shapes, dtypes, MACs, parameters, the planned arena, the skippable
residual blocks. With a core, :func:`target_kernels` names the kernel each layer gets and
:func:`add_target_costs` adds per layer the RAM live at its step and the flash of its
constants as the generated firmware would have them.
"""

from __future__ import annotations

from typing import Any

from edgenn.analysis import layer_costs
from edgenn.backends.cortexm.codegen.memory import plan_arena
from edgenn.backends.cortexm.flash_policy import constant_bytes
from edgenn.backends.cortexm.kernel import KernelCall
from edgenn.backends.cortexm.selection import select_kernel
from edgenn.backends.cortexm.targets import get_core
from edgenn.errors import EdgennError, UnsupportedOperatorError
from edgenn.ir import Graph
from edgenn.memory import MemoryPlan, plan_graph, state_area_bytes, state_offsets
from edgenn.passes.skip import config_peak, find_blocks


def target_kernels(graph: Graph, target: str) -> list[str | None]:
    """Per layer, the kernel the registry picks on ``target`` by the one name it has
    everywhere (manifest.json, ``bench``): ``KernelCall.kernel_name``, its call's symbol;
    the plug-in's name where its prepare refuses the node; None where no kernel runs it."""
    core = get_core(target)
    names: list[str | None] = []
    for node in graph.nodes:
        try:
            kernel = select_kernel(node, graph, core)
        except UnsupportedOperatorError:
            names.append(None)
            continue
        try:
            names.append(kernel.prepare(node, graph, core).kernel_name or kernel.name)
        except EdgennError:  # the build stops on this node with that error
            names.append(kernel.name)
    return names


def kernel_calls(graph: Graph, target: str) -> list[KernelCall | None]:
    """Per layer, what its kernel would emit on ``target`` (int8 weights, as a build without a
    flash policy run); None where no kernel runs the layer."""
    core = get_core(target)
    calls: list[KernelCall | None] = []
    for node in graph.nodes:
        try:
            calls.append(select_kernel(node, graph, core).prepare(node, graph, core))
        except EdgennError:  # no kernel, or the kernel refuses this node's parameters
            calls.append(None)
    return calls


def _owner(plan: MemoryPlan, name: str) -> str:
    """The planned buffer holding tensor ``name`` (through in-place and Reshape aliases)."""
    seen: set[str] = set()
    while name in plan.aliases and name not in seen:
        seen.add(name)
        name = plan.aliases[name]
    return name


def target_memory(graph: Graph, target: str,
                  calls: list[KernelCall | None]) -> tuple[list[dict[str, int]], int]:
    """Per layer: ``ram_bytes`` (every buffer of the firmware's arena plan alive at its step:
    its inputs, outputs and scratch plus tensors kept for later layers), ``io_bytes`` (its own
    input and output buffers), ``scratch_bytes``; and the arena the firmware would allocate.

    The per-layer figures and the arena come from ``codegen.memory.plan_arena`` with the
    kernels' scratch and in-place layers, as the generator plans a build: skippable residual
    blocks change nothing (a skip-capable firmware is built only when asked for, and its arena
    is in its manifest, ``peak_bytes_per_config``; docs/skipping.md).
    """
    scratch = [c.scratch_bytes if c is not None else 0 for c in calls]
    plan = plan_arena(graph, scratch,
                      in_place=[i for i, c in enumerate(calls) if c is not None and c.in_place],
                      state_in_place=[i for i, c in enumerate(calls)
                                      if c is not None and c.state_in_place])
    sizes = {b.name: b.size for b in plan.buffers}
    layers = []
    for i, node in enumerate(graph.nodes):
        own = {_owner(plan, n) for n in (*node.inputs, *node.outputs)
               if n and not graph.tensor(n).is_const}
        layers.append({
            "ram_bytes": sum(b.size for b in plan.buffers if b.first_use <= i <= b.last_use),
            "io_bytes": sum(sizes.get(n, 0) for n in own),
            "scratch_bytes": int(scratch[i]),
        })
    peak = plan.peak_bytes
    if graph.state:  # the state area follows the planned buffers (edgenn.memory.state)
        peak = state_offsets(graph, peak)[1]
    # why max(16, ...): the generator never emits an empty arena (firmware_arena_bytes)
    return layers, max(16, peak)


def unsupported_line(graph: Graph, target: str, kernels: list[str | None]) -> str | None:
    """``"3 of 31 layers are not supported by cortex-m4: ..."``, or None when all are."""
    missing = [(n, graph.tensor(n.inputs[0]).dtype.value if n.inputs and n.inputs[0] else "?")
               for n, k in zip(graph.nodes, kernels, strict=True) if k is None]
    if not missing:
        return None
    what = ", ".join(f"{n.name!r} ({n.op}, {dt})" for n, dt in missing)
    return f"{len(missing)} of {len(graph.nodes)} layers are not supported by {target}: {what}"


def summary(graph: Graph, planner: str = "greedy") -> dict[str, Any]:
    costs = layer_costs(graph)
    plan = plan_graph(graph, planner=planner)
    io = [
        {
            "name": t.name,
            "shape": list(graph.external_shape(t.name)),
            "dtype": t.dtype.value,
            "quant": None if t.quant is None or t.quant.per_channel
            else {"scale": t.quant.s, "zero_point": t.quant.zp},
        }
        for t in graph.input_tensors() + graph.output_tensors()
    ]
    return {
        "model": graph.name,
        "inputs": io[: len(graph.inputs)],
        "outputs": io[len(graph.inputs):],
        "layers": [
            {"name": c.name, "op": c.op, "shape": list(c.out_shape), "dtype": c.dtype,
             "macs": c.macs, "param_bytes": c.param_bytes}
            for c in costs
        ],
        "total_macs": sum(c.macs for c in costs),
        "param_bytes": sum(t.nbytes for t in graph.tensors.values() if t.is_const),
        "arena_bytes": plan.peak_bytes,
        "state_bytes": state_area_bytes(graph),
        "planner": planner,
        "skippable_blocks": skippable_blocks(graph, planner),
    }


def skippable_blocks(graph: Graph, planner: str = "greedy") -> list[dict[str, Any]]:
    """Identity-shortcut residual blocks, named block1, block2, ... (docs/skipping.md), each
    with the arena of the network with that block alone skipped: one plan per block (why not
    a plan over every configuration: that is 2**N plans, minutes for 18 blocks)."""
    blocks = find_blocks(graph)
    return [{"name": b.name, "input": b.input, "output": b.output, "nodes": list(b.nodes),
             "arena_bytes_when_skipped": config_peak(graph, frozenset({b.name}), blocks,
                                                     planner)}
            for b in blocks]


def add_target_costs(info: dict[str, Any], graph: Graph, target: str) -> None:
    """Add per layer ``ram_bytes``, ``io_bytes``, ``scratch_bytes``, ``flash_bytes`` (None
    where no kernel runs it) and the totals ``target_arena_bytes``, ``target_flash_bytes``."""
    calls = kernel_calls(graph, target)
    memory, arena = target_memory(graph, target, calls)
    for layer, call, mem in zip(info["layers"], calls, memory, strict=True):
        layer.update(mem)
        layer["flash_bytes"] = constant_bytes(call) if call is not None else None
    info["target_arena_bytes"] = arena
    # why a number even with unsupported layers: those are listed in "unsupported"
    info["target_flash_bytes"] = sum(constant_bytes(c) for c in calls if c is not None)
