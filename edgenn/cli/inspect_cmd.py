"""``edgenn inspect MODEL [--json] [--target CORE]``: nodes, shapes, dtypes, MACs, parameters,
planned arena; with ``--target`` the kernel each layer would get on that core, the layers it
cannot run, and per layer the RAM live at its step and the flash of its constants as the
generated firmware would have them, before any build (no compiler call; like STM32Cube.AI's
analyze)."""

from __future__ import annotations

import argparse
from typing import Any

from edgenn.analysis import layer_costs
from edgenn.api import load_model
from edgenn.backends.cortexm.codegen.memory import plan_arena
from edgenn.backends.cortexm.flash_policy import constant_bytes
from edgenn.backends.cortexm.kernel import KernelCall, select_kernel
from edgenn.backends.cortexm.targets import CORES, get_core
from edgenn.cli.console import console, table
from edgenn.cli.options import add_json_option, write_json
from edgenn.errors import EdgennError, UnsupportedOperatorError
from edgenn.ir import Graph
from edgenn.memory import MemoryPlan, plan_graph


def add_parser(sub: Any) -> None:
    p = sub.add_parser("inspect", help="show a model's layers, MACs, parameters and arena plan")
    p.add_argument("model", help=".onnx or .tflite file")
    add_json_option(p, "the analysis instead of the table", bare_means_stdout=True)
    p.add_argument("--planner", choices=("greedy", "linear"), default="greedy")
    p.add_argument("--target", choices=tuple(CORES), default=None,
                   help="also show the kernel each layer gets on this core (weights int8) and "
                        "which layers it cannot run")
    p.set_defaults(func=run)


def target_kernels(graph: Graph, target: str) -> list[str | None]:
    """Per layer, the kernel the registry picks on ``target`` (None: no kernel runs it)."""
    core = get_core(target)
    names: list[str | None] = []
    for node in graph.nodes:
        try:
            names.append(select_kernel(node, graph, core).name)
        except UnsupportedOperatorError:
            names.append(None)
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

    The per-layer figures come from ``codegen.memory.plan_arena`` with the kernels' scratch
    and in-place layers (the full network). The arena is that plan's peak, or for a model with
    skippable residual blocks the skip-capable firmware's union plan (``plan_skip_layout``),
    as the project generator plans it.
    """
    scratch = [c.scratch_bytes if c is not None else 0 for c in calls]
    plan = plan_arena(graph, scratch,
                      in_place=[i for i, c in enumerate(calls) if c is not None and c.in_place])
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
    from edgenn.passes.skip import find_blocks

    blocks = find_blocks(graph)
    if blocks:
        from edgenn.backends.cortexm.codegen.skip import plan_skip_layout

        peak = plan_skip_layout(graph, get_core(target), blocks, scratch).plan.peak_bytes
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
        "planner": planner,
        "skippable_blocks": skippable_blocks(graph),
    }


def skippable_blocks(graph: Graph) -> list[dict[str, Any]]:
    """Identity-shortcut residual blocks, named block1, block2, ... (docs/skipping.md)."""
    from edgenn.passes.skip import all_configs, find_blocks, plan_for_configs

    blocks = find_blocks(graph)
    if not blocks:
        return []
    peaks = plan_for_configs(graph, list(all_configs(blocks))).peak_bytes_per_config
    return [{"name": b.name, "input": b.input, "output": b.output, "nodes": list(b.nodes),
             "arena_bytes_when_skipped": peaks[frozenset({b.name})]} for b in blocks]


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model)
    info = summary(graph, args.planner)
    target = getattr(args, "target", None)
    kernels: list[str | None] = []
    if target:
        kernels = target_kernels(graph, target)
        info["target"] = target
        for layer, kernel in zip(info["layers"], kernels, strict=True):
            layer["kernel"] = kernel
        info["unsupported"] = unsupported_line(graph, target, kernels)
        add_target_costs(info, graph, target)
    if args.json is not None:
        write_json(args.json, info)
        return 0
    console.print(layer_table(args.model, info, bool(target)))
    for t in info["inputs"]:
        console.print(f"input  {t['name']}: {t['dtype']}{t['shape']} quant={t['quant']}")
    for t in info["outputs"]:
        console.print(f"output {t['name']}: {t['dtype']}{t['shape']} quant={t['quant']}")
    for b in info["skippable_blocks"]:
        console.print(f"skippable {b['name']}: {len(b['nodes'])} nodes, {b['input']} -> "
                      f"{b['output']} (arena {b['arena_bytes_when_skipped']:,} B when skipped)")
    console.print(
        f"total MACs {info['total_macs']:,}   parameters {info['param_bytes']:,} B   "
        f"planned arena ({args.planner}) {info['arena_bytes']:,} B"
    )
    if target:
        missing = sum(layer["flash_bytes"] is None for layer in info["layers"])
        console.print(f"{target}: arena {info['target_arena_bytes']:,} B (the firmware's "
                      f"plan), layer constants {info['target_flash_bytes']:,} B of flash "
                      "(code and the shared kernels come on top"
                      + (f"; {missing} layers without a kernel not counted)" if missing else ")"))
        console.print(info["unsupported"] or f"every layer has a {target} kernel")
    return 0


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


def layer_table(title: str, info: dict[str, Any], target: bool) -> Any:
    """One row per layer and a totals row (with a target: RAM live at the step, constant
    flash; the totals row then holds the arena peak and the flash sum)."""
    def n(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"

    rows: list[tuple[Any, ...]] = [
        (i, layer["name"], layer["op"], "x".join(map(str, layer["shape"])), layer["dtype"],
         *((layer["kernel"] or "NOT SUPPORTED",) if target else ()),
         n(layer["macs"]), n(layer["param_bytes"]),
         *((n(layer["ram_bytes"]), n(layer["flash_bytes"])) if target else ()))
        for i, layer in enumerate(info["layers"])
    ]
    rows.append(("", "total", "", "", "", *(("",) if target else ()), n(info["total_macs"]),
                 n(sum(layer["param_bytes"] for layer in info["layers"])),
                 *((f"peak {info['target_arena_bytes']:,}", n(info["target_flash_bytes"]))
                   if target else ())))
    cols = ["#", "name", "op", "output", "dtype", *(["kernel"] if target else []), "MACs",
            "params B", *(["RAM B", "flash B"] if target else [])]
    n_right = 4 if target else 2
    return table(title, cols, rows, right_align_from=len(cols) - n_right)
