"""``edgenn inspect MODEL [--json] [--target CORE]``: nodes, shapes, dtypes, MACs, parameters,
planned arena; with ``--target`` the kernel each layer would get on that core, the layers it
cannot run, and per layer the RAM live at its step and the flash of its constants as the
generated firmware would have them, before any build (no compiler call; like STM32Cube.AI's
analyze)."""

from __future__ import annotations

import argparse
from typing import Any

from edgenn.api import load_model
from edgenn.backends.cortexm.targets import CORES
from edgenn.cli.console import console, table
from edgenn.cli.options import (
    add_json_option,
    add_model_input_options,
    model_input_options,
    write_json,
)
from edgenn.inspection import add_target_costs, summary, target_kernels, unsupported_line


def add_parser(sub: Any) -> None:
    p = sub.add_parser("inspect", help="show a model's layers, MACs, parameters and arena plan")
    p.add_argument("model", help=".onnx or .tflite file")
    add_model_input_options(p)
    add_json_option(p, "the analysis instead of the table", bare_means_stdout=True)
    p.add_argument("--planner", choices=("greedy", "linear"), default="greedy")
    p.add_argument("--target", choices=tuple(CORES), default=None,
                   help="also show the kernel each layer gets on this core (weights int8) and "
                        "which layers it cannot run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load_model(args.model, **model_input_options(args))
    info = summary(graph, args.planner)
    target = args.target
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
        + (f" + state {info['state_bytes']:,} B kept between invocations"
           if info["state_bytes"] else "")
    )
    if target:
        missing = sum(layer["flash_bytes"] is None for layer in info["layers"])
        console.print(f"{target}: arena {info['target_arena_bytes']:,} B (the firmware's "
                      f"plan), layer constants {info['target_flash_bytes']:,} B of flash "
                      "(code and the shared kernels come on top"
                      + (f"; {missing} layers without a kernel not counted)" if missing else ")"))
        console.print(info["unsupported"] or f"every layer has a {target} kernel")
    return 0


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
