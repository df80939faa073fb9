"""Deploying the MLPerf Tiny models: every board, bit-exactness vs TFLite Micro, sizes, and two
models in one firmware. The committed JSON backs every figure of docs/deploy.md.

For every .tflite in MODEL_DIR (default ../shared/models/mlperf_tiny) and every board:
``generic`` (edgenn's cycle-model emulator, unicorn) and the real boards (``mps2-an386``,
``netduinoplus2``: the example application booted in qemu-system-arm), compile through the
public API (``edgenn.compile_model(graph, "cortex-m4", board=..., name=...)``), run N seeded
random inputs (``exe.run``) and compare each output with TFLite Micro's interpreter element by
element; record flash, arena and RAM bytes (``exe.sizes()``), the build time and the run's wall
time (QEMU: per boot, one boot runs every item; host-dependent and noisy, not a cycle count).
When the arena plus the stack does not fit a board's RAM the row says so, with the bytes.

Then the two-model firmware: two models compiled as libraries (``--name``, library-only) and
linked by a plain main.c into one ELF (``edgenn.backends.cortexm.multi_model``), its flash and
RAM next to each library linked alone the same way, and both models' outputs in that one ELF
(run in the emulator, one ``Machine`` per model) against TFLite Micro.

    .venv/bin/python benchmarks/deploy_boards.py [MODEL_DIR] [--n 8] [--seed 1]
                                                  [--pair kws,ad] [--json PATH]

Writes benchmarks/results/deploy_boards.json (atomically); ``tools/deploy_doc.py`` renders the
tables of docs/deploy.md from it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import edgenn  # noqa: E402
from edgenn.backends.cortexm.boards import BOARDS, get_board  # noqa: E402
from edgenn.backends.cortexm.boards.qemu import stage_image  # noqa: E402
from edgenn.backends.cortexm.boards.startup import STAGE_END, STAGE_START  # noqa: E402
from edgenn.backends.cortexm.codegen.names import c_identifier  # noqa: E402
from edgenn.backends.cortexm.codegen.project import DEFAULT_STACK_BYTES  # noqa: E402
from edgenn.backends.cortexm.emulator.elf import ElfImage  # noqa: E402
from edgenn.backends.cortexm.multi_model import (  # noqa: E402
    elf_sizes,
    library_machine,
    link_libraries,
)
from edgenn.backends.cortexm.targets import get_core  # noqa: E402
from edgenn.cli.console import console, progress, table  # noqa: E402
from edgenn.errors import EdgennError, PlanError  # noqa: E402
from edgenn.ir import Graph  # noqa: E402
from edgenn.ir.sample import random_inputs  # noqa: E402
from edgenn.oracles.tflm import tflm_run  # noqa: E402
from edgenn.utils import atomic_write_bytes  # noqa: E402
from edgenn.version import with_version  # noqa: E402

DEFAULT_MODELS = ROOT.parent / "shared" / "models" / "mlperf_tiny"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "deploy_boards.json"
CORE = "cortex-m4"
# Short names for the MLPerf Tiny files (the library --name); any other file uses its stem.
LABELS = {"kws_ref_model": "kws", "pretrainedResnet_quant": "ic", "ad01_int8": "ad",
          "vww_96_int8": "vww"}
DEFAULT_PAIR = ("kws", "ad")


def label_of(path: Path) -> str:
    """The short name of a model file: the library name it is compiled under."""
    return LABELS.get(path.stem, c_identifier(path.stem))


def tool_version(cmd: str) -> str | None:
    """The first line of ``cmd --version`` (None when the tool is missing)."""
    if shutil.which(cmd) is None:
        return None
    res = subprocess.run([cmd, "--version"], capture_output=True, text=True)
    return res.stdout.splitlines()[0].strip() if res.stdout else None


# ----------------------------------------------------------------------------- comparing
def compare(got: list[np.ndarray], want: list[np.ndarray]) -> dict[str, int]:
    """Items, output elements and mismatching elements (0 = bit-exact) of ``got`` vs the
    oracle's ``want`` (one ``[N, ...]`` array per output)."""
    if len(got) != len(want):
        raise EdgennError(f"{len(got)} outputs, TFLite Micro has {len(want)}")
    mismatches = elements = 0
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.dtype != w.dtype or g.size != w.size:
            raise EdgennError(f"output {k}: {g.dtype}{list(g.shape)} vs TFLite Micro's "
                              f"{w.dtype}{list(w.shape)}")
        mismatches += int(np.count_nonzero(g.reshape(w.shape) != w))
        elements += int(w.size)
    return {"items": int(len(want[0])), "elements": elements, "mismatches": mismatches}


def qemu_boots(elf: Path, manifest: dict[str, Any], n: int) -> int:
    """How many QEMU boots ``run`` needs for ``n`` items: the items the flash left after the
    image stages per boot (the staging layout of ``boards/app.py``)."""
    syms = ElfImage(elf).symbols
    room = syms[STAGE_END] - syms[STAGE_START] - len(stage_image(manifest, []))
    item_bytes = max(1, sum(int(e["bytes"]) for e in manifest["inputs"]))
    return math.ceil(n / max(1, room // item_bytes))


# ----------------------------------------------------------------------------- one board
def bench_board(graph: Graph, label: str, board: str, xs: list[np.ndarray],
                want: list[np.ndarray], arena_hint: int | None) -> dict[str, Any]:
    """Build ``graph`` for ``board``, run ``xs``, compare with ``want``: one JSON row."""
    b = get_board(board)
    row: dict[str, Any] = {"board": board, "emulator": "unicorn" if b.is_generic else "qemu"}
    start = time.perf_counter()
    try:
        exe = edgenn.compile_model(graph, CORE, board=board, name=label)
    except PlanError as err:  # the arena plus the stack exceed the board's RAM
        ram = b.ram_bytes if b.ram_bytes is not None else get_core(CORE).ram_kb * 1024
        return {**row, "fits": False, "arena_bytes": arena_hint,
                "stack_bytes": DEFAULT_STACK_BYTES,
                "need_bytes": None if arena_hint is None else arena_hint + DEFAULT_STACK_BYTES,
                "board_ram_bytes": ram, "reason": str(err)}
    row["build_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    got = exe.run(*xs)
    row["run_seconds"] = time.perf_counter() - start
    sizes = exe.sizes()
    row.update({"fits": True, **compare(got, want), "flash_bytes": sizes["flash"],
                "arena_bytes": sizes["arena"], "ram_bytes": sizes["ram"]})
    if row["emulator"] == "qemu":
        row["boots"] = qemu_boots(exe.elf, exe.manifest, len(xs[0]))
        row["qemu_seconds_per_boot"] = row["run_seconds"] / row["boots"]
    return row


def bench_model(path: Path, n: int, seed: int) -> list[dict[str, Any]]:
    """Every board for one model file (boards in ``BOARDS`` order, generic first)."""
    label = label_of(path)
    graph = edgenn.load_model(path)
    xs = random_inputs(graph, n, seed=seed)
    want = tflm_run(path.read_bytes(), *xs)
    rows: list[dict[str, Any]] = []
    arena: int | None = None
    for board in BOARDS:
        try:
            row = bench_board(graph, label, board, xs, want, arena)
        # why: one board's failure (a fault, a timeout) must not hide the others' figures
        except EdgennError as err:
            row = {"board": board, "error": str(err)}
        arena = row.get("arena_bytes") if arena is None else arena
        rows.append({"model": path.stem, "label": label, **row})
        console.print(f"{label} on {board}: " + (row.get("error") or
                      ("does not fit" if not row["fits"] else
                       f"{row['mismatches']} mismatching of {row['elements']:,}")))
    return rows


# ----------------------------------------------------------------------------- two models
def shared_flash_bytes(elves: list[Path]) -> int:
    """Flash bytes of the global symbols every ELF of ``elves`` defines with the same size:
    the kernel runtime, startup and C library code one firmware of them all holds once."""
    common: dict[tuple[str, int], int] | None = None
    for elf in elves:
        found = {(s.name, s.size): 1 for s in ElfImage(elf).flash_symbols() if not s.local}
        common = found if common is None else {k: 1 for k in common if k in found}
    return sum(size for _name, size in (common or {}))


def _library_inputs(graph: Graph, xs: list[np.ndarray], i: int) -> list[bytes]:
    """Item ``i`` of each input in the library's (internal) layout, as bytes."""
    out = []
    for name, x in zip(graph.inputs, xs, strict=True):
        perm = graph.external_perm.get(name)
        item = x[i:i + 1]
        if perm:  # why: the library takes the graph's internal layout (as exe.run does)
            item = item.transpose(np.argsort(perm))
        out.append(np.ascontiguousarray(item).tobytes())
    return out


def _library_output(graph: Graph, k: int, data: bytes) -> np.ndarray:
    """Output ``k`` of one inference, bytes -> the model's external layout ``[1, ...]``."""
    name = graph.outputs[k]
    t = graph.tensor(name)
    arr = np.frombuffer(data, t.dtype.numpy).reshape((1, *t.shape[1:]))
    perm = graph.external_perm.get(name)
    return arr.transpose(perm) if perm else arr


def bench_two_models(paths: dict[str, Path], n: int, seed: int, work: Path) -> dict[str, Any]:
    """The libraries of ``paths`` (label -> model) linked alone and together (see the
    module docstring)."""
    core = get_core(CORE)
    folders: dict[str, Path] = {}
    manifests: dict[str, dict[str, Any]] = {}
    graphs: dict[str, Graph] = {}
    build: dict[str, float] = {}
    for label, path in paths.items():
        graphs[label] = edgenn.load_model(path)
        folders[label] = work / label
        start = time.perf_counter()
        exe = edgenn.compile_model(graphs[label], CORE, out_dir=folders[label], name=label,
                                   library_only=True)
        build[label] = time.perf_counter() - start
        manifests[label] = dict(exe.manifest)
    single_elves = {label: link_libraries(work / f"app_{label}", {label: folder}, core)
                    for label, folder in folders.items()}
    singles = {label: elf_sizes(elf) for label, elf in single_elves.items()}
    combined_elf = link_libraries(work / "app_all", folders, core)
    combined = elf_sizes(combined_elf)
    total = {k: sum(s[k] for s in singles.values()) for k in ("flash", "ram")}
    outputs: dict[str, dict[str, int]] = {}
    for label, path in paths.items():
        graph = graphs[label]
        xs = random_inputs(graph, n, seed=seed)
        want = tflm_run(path.read_bytes(), *xs)
        machine = library_machine(combined_elf, manifests[label], core)
        items = [machine.invoke(_library_inputs(graph, xs, i)).outputs for i in range(n)]
        got = [np.concatenate([_library_output(graph, k, item[k]) for item in items])
               for k in range(len(graph.outputs))]
        outputs[label] = compare(got, want)
    return {
        "models": list(paths), "files": [p.name for p in paths.values()],
        "emulator": "unicorn", "build_seconds": build,
        "arena_bytes": {label: int(m["arena_bytes"]) for label, m in manifests.items()},
        "singles": singles, "sum": total, "combined": combined,
        "saved": {k: total[k] - combined[k] for k in ("flash", "ram")},
        "shared_flash_bytes": shared_flash_bytes(list(single_elves.values())),
        "stack_bytes": DEFAULT_STACK_BYTES,
        "outputs": outputs,
    }


# ----------------------------------------------------------------------------- reporting
def _num(v: Any) -> str:
    return "-" if v is None else f"{v:,}"


def print_report(doc: dict[str, Any]) -> None:
    rows = []
    for r in doc["runs"]:
        if "error" in r:
            rows.append((r["label"], r["board"], "error", r["error"][:60], "", "", "", "", ""))
        elif not r["fits"]:
            rows.append((r["label"], r["board"], "does not fit",
                         f"{_num(r['need_bytes'])} > {_num(r['board_ram_bytes'])} B RAM",
                         "-", _num(r["arena_bytes"]), "-", "-", "-"))
        else:
            qemu = r.get("qemu_seconds_per_boot")
            rows.append((r["label"], r["board"], r["items"],
                         f"{r['mismatches']:,} of {r['elements']:,}", _num(r["flash_bytes"]),
                         _num(r["arena_bytes"]), _num(r["ram_bytes"]),
                         f"{r['build_seconds']:.1f}", "-" if qemu is None else f"{qemu:.2f}"))
    console.print(table(
        f"{doc['core']}: {doc['n']} seeded random inputs per model vs TFLite Micro "
        f"({doc['date']})",
        ["model", "board", "items", "mismatching elements", "flash B", "arena B", "RAM B",
         "build s", "QEMU s/boot (noisy)"], rows, right_align_from=2))
    two = doc.get("two_models")
    if not two:
        return
    if "error" in two:
        console.print(f"two-model firmware: {two['error']}")
        return
    names = " + ".join(two["models"])
    size_rows = [(f"{m} alone", _num(two["singles"][m]["flash"]), _num(two["singles"][m]["ram"]))
                 for m in two["models"]]
    size_rows += [("sum", _num(two["sum"]["flash"]), _num(two["sum"]["ram"])),
                  (f"{names} in one ELF", _num(two["combined"]["flash"]),
                   _num(two["combined"]["ram"])),
                  ("saved", _num(two["saved"]["flash"]), _num(two["saved"]["ram"]))]
    console.print(table(f"two models in one ELF ({names})", ["ELF", "flash B", "RAM B"],
                        size_rows))
    console.print(table("outputs in the one ELF vs TFLite Micro",
                        ["model", "items", "mismatching elements"],
                        [(m, o["items"], f"{o['mismatches']:,} of {o['elements']:,}")
                         for m, o in two["outputs"].items()]))


# ----------------------------------------------------------------------------- main
def run_benchmark(model_dir: Path, n: int, seed: int, pair: list[str]) -> dict[str, Any]:
    paths = sorted(model_dir.glob("*.tflite"))
    if not paths:
        raise EdgennError(f"no .tflite files in {model_dir}")
    runs: list[dict[str, Any]] = []
    with progress("deploying on the boards", len(paths)) as advance:
        for path in paths:
            runs += bench_model(path, n, seed)
            advance(1)
    by_label = {label_of(p): p for p in paths}
    missing = [m for m in pair if m not in by_label]
    two: dict[str, Any]
    if missing:
        two = {"error": f"no model file for {', '.join(missing)} in {model_dir}"}
    else:
        with tempfile.TemporaryDirectory(prefix="edgenn-two-models-") as tmp:
            try:
                two = bench_two_models({m: by_label[m] for m in pair}, n, seed, Path(tmp))
            except EdgennError as err:
                two = {"error": str(err)}
    try:
        model_dir_text = str(model_dir.resolve().relative_to(ROOT.parent))
    except ValueError:
        model_dir_text = str(model_dir)
    return {
        "benchmark": "deploy_boards", "date": datetime.date.today().isoformat(),
        "n": n, "seed": seed, "core": CORE, "model_dir": model_dir_text,
        "oracle": "TFLite Micro Python interpreter (edgenn.oracles.tflm)",
        "tools": {"gcc": tool_version("arm-none-eabi-gcc"),
                  "qemu": tool_version("qemu-system-arm")},
        "boards": [{"name": b.name, "qemu_machine": b.qemu_machine,
                    "flash_bytes": b.flash_bytes, "ram_bytes": b.ram_bytes}
                   for b in map(get_board, BOARDS)],
        "runs": runs, "two_models": two,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", nargs="?", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--n", type=int, default=8, help="seeded random inputs per model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pair", default=",".join(DEFAULT_PAIR),
                    help="the models linked into one ELF (short names, comma separated)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args(argv)
    if args.n < 1:
        print("--n must be at least 1", file=sys.stderr)
        return 2
    try:
        doc = run_benchmark(args.model_dir, args.n, args.seed,
                            [p.strip() for p in args.pair.split(",") if p.strip()])
    except EdgennError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    atomic_write_bytes(args.json, (json.dumps(with_version(doc), indent=1) + "\n").encode())
    print_report(doc)
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
