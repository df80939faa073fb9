"""``edgenn inspect MODEL [--json] [--target CORE]``: nodes, shapes, dtypes, MACs, parameters,
planned arena; with ``--target`` the kernel each layer would get on that core and the layers
it cannot run, before any build."""

from __future__ import annotations

import argparse
import json
from typing import Any

from edgenn.analysis import layer_costs
from edgenn.api import load_model
from edgenn.backends.cortexm.kernel import select_kernel
from edgenn.backends.cortexm.targets import CORES, get_core
from edgenn.cli.console import console, table
from edgenn.errors import UnsupportedOperatorError
from edgenn.ir import Graph
from edgenn.memory import plan_graph


def add_parser(sub: Any) -> None:
    p = sub.add_parser("inspect", help="show a model's layers, MACs, parameters and arena plan")
    p.add_argument("model", help=".onnx or .tflite file")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
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
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    rows = [
        (i, layer["name"], layer["op"], "x".join(map(str, layer["shape"])), layer["dtype"],
         *((layer["kernel"] or "NOT SUPPORTED",) if target else ()),
         f"{layer['macs']:,}", f"{layer['param_bytes']:,}")
        for i, layer in enumerate(info["layers"])
    ]
    cols = ["#", "name", "op", "output", "dtype", *(["kernel"] if target else []), "MACs",
            "params B"]
    console.print(table(f"{args.model}", cols, rows, right_align_from=len(cols) - 2))
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
        console.print(info["unsupported"] or f"every layer has a {target} kernel")
    return 0
