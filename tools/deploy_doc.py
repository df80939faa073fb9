"""Render the measured tables of docs/deploy.md from benchmarks/results/deploy_boards.json.

    .venv/bin/python tools/deploy_doc.py          # rewrite the marked sections of docs/deploy.md
    .venv/bin/python tools/deploy_doc.py --check  # exit 1 when they are stale

Only the text between ``<!-- deploy-table:start -->`` / ``<!-- deploy-table:end -->`` and
``<!-- two-models:start -->`` / ``<!-- two-models:end -->`` is generated; the rest of the page
is written by hand. Every number comes from the JSON that ``benchmarks/deploy_boards.py``
writes; ``tests/test_deploy_doc.py`` fails when the page and the JSON disagree.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edgenn.errors import EdgennError  # noqa: E402
from edgenn.utils import atomic_write_bytes  # noqa: E402

DOC = ROOT / "docs" / "deploy.md"
RESULTS = ROOT / "benchmarks" / "results" / "deploy_boards.json"
TABLE = ("<!-- deploy-table:start -->", "<!-- deploy-table:end -->")
TWO_MODELS = ("<!-- two-models:start -->", "<!-- two-models:end -->")
SOURCE = ("`benchmarks/deploy_boards.py` wrote `benchmarks/results/deploy_boards.json`; "
          "`tools/deploy_doc.py` renders this from it")


def _b(v: Any) -> str:
    """Bytes (or any count) with thousands separators; '-' when unknown."""
    return "-" if v is None else f"{int(v):,}"


def _s(v: Any) -> str:
    return "-" if v is None else f"{float(v):.1f}"


def _where(run: dict[str, Any]) -> str:
    return "edgenn emulator" if run.get("emulator") == "unicorn" else "QEMU"


def _run_row(r: dict[str, Any]) -> str:
    head = f"| {r['label']} | `{r['board']}` "
    if "error" in r:
        return head + f"| error: {r['error']} | | | | | | | |"
    if not r["fits"]:
        need = (f"arena {_b(r['arena_bytes'])} B + stack {_b(r['stack_bytes'])} B = "
                f"{_b(r['need_bytes'])} B" if r.get("need_bytes") is not None
                else f"arena + {_b(r['stack_bytes'])} B stack")
        return head + (f"| {_where(r)} | - | does not fit: {need} > "
                       f"{_b(r['board_ram_bytes'])} B of RAM | - | {_b(r['arena_bytes'])} "
                       "| - | - | - |")
    qemu = r.get("qemu_seconds_per_boot")
    return head + (f"| {_where(r)} | {r['items']} | {_b(r['mismatches'])} of "
                   f"{_b(r['elements'])} | {_b(r['flash_bytes'])} | {_b(r['arena_bytes'])} "
                   f"| {_b(r['ram_bytes'])} | {_s(r['build_seconds'])} "
                   f"| {'-' if qemu is None else f'{qemu:.2f}'} |")


def deploy_table(doc: dict[str, Any]) -> list[str]:
    """The boards table: one row per model and board, failures and misfits included."""
    tools = doc.get("tools") or {}
    versions = ", ".join(v for v in (tools.get("gcc"), tools.get("qemu")) if v)
    lines = [
        f"Run of {doc['date']}: {doc['n']} seeded random inputs (seed {doc['seed']}) per model, "
        f"the same on every board, {doc['core']}; {SOURCE}"
        + (f" ({versions})." if versions else "."),
        "*mismatching elements*: output elements that differ from TFLite Micro's interpreter "
        "(0 = bit-exact). Flash and RAM are the whole ELF's (RAM: `.data` + `.bss` + stack, "
        "the arena included). *build s*: `compile_model` wall time (flash-policy trial builds "
        "included). *QEMU s / boot*: wall time of one `qemu-system-arm` boot running all the "
        "items, on the machine that ran the benchmark; noisy and not the board's speed.",
        "",
        "| model | board | runs in | items | mismatching elements | flash B | arena B | RAM B "
        "| build s | QEMU s / boot (noisy) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_run_row(r) for r in doc["runs"]]
    return lines


def two_models_section(doc: dict[str, Any]) -> list[str]:
    """The two-model firmware: sizes alone vs together, and both models' outputs."""
    two = doc.get("two_models") or {"error": "not measured"}
    if "error" in two:
        return [f"Run of {doc['date']}: the two-model firmware failed: {two['error']}"]
    models = list(two["models"])
    both = " + ".join(models)
    lines = [
        f"Run of {doc['date']} ({SOURCE}): each library linked alone by the same plain "
        "`main.c`, `startup.c` and linker script (generic memory map, "
        f"{_b(two['stack_bytes'])} B stack), and all of them in one ELF.",
        "",
        "| ELF | flash B | RAM B |",
        "|---|---:|---:|",
    ]
    lines += [f"| {m} alone | {_b(two['singles'][m]['flash'])} | {_b(two['singles'][m]['ram'])} |"
              for m in models]
    lines += [
        f"| sum of the {len(models)} alone | {_b(two['sum']['flash'])} | {_b(two['sum']['ram'])} |",
        f"| {both} in one ELF | {_b(two['combined']['flash'])} "
        f"| {_b(two['combined']['ram'])} |",
        f"| saved | {_b(two['saved']['flash'])} | {_b(two['saved']['ram'])} |",
        "",
        f"Code every single ELF holds (global symbols of the same size: kernel runtime, startup, "
        f"C library) is {_b(two['shared_flash_bytes'])} B, linked once in the one ELF; it has "
        "one stack instead of one per ELF, and each model keeps its own arena ("
        + ", ".join(f"{m} {_b(two['arena_bytes'][m])} B" for m in models) + ").",
        "Both models' outputs in the one ELF (run in edgenn's emulator, one `Machine` per "
        f"model, {doc['n']} seeded random inputs) against TFLite Micro:",
        "",
        "| model in the one ELF | items | mismatching elements |",
        "|---|---:|---:|",
    ]
    lines += [f"| {m} | {o['items']} | {_b(o['mismatches'])} of {_b(o['elements'])} |"
              for m, o in two["outputs"].items()]
    return lines


def _replace(page: str, markers: tuple[str, str], body: list[str]) -> str:
    start, end = markers
    i, j = page.find(start), page.find(end)
    if i < 0 or j < 0 or j < i:
        raise EdgennError(f"{DOC.name}: markers {start} ... {end} not found (in that order)")
    return page[:i + len(start)] + "\n" + "\n".join(body) + "\n" + page[j:]


def render(page: str, doc: dict[str, Any]) -> str:
    """``page`` with both marked sections regenerated from the benchmark JSON ``doc``;
    EdgennError when a pair of markers is missing."""
    page = _replace(page, TABLE, deploy_table(doc))
    return _replace(page, TWO_MODELS, two_models_section(doc))


def load_results(path: Path = RESULTS) -> dict[str, Any]:
    if not path.is_file():
        raise EdgennError(f"{path}: not found; run benchmarks/deploy_boards.py")
    return dict(json.loads(path.read_text()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/deploy.md is stale")
    args = ap.parse_args(argv)
    try:
        current = DOC.read_text()
        text = render(current, load_results())
    except (OSError, EdgennError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.check:
        if current != text:
            print(f"{DOC} is stale: run tools/deploy_doc.py", file=sys.stderr)
            return 1
        return 0
    atomic_write_bytes(DOC, text.encode())  # why atomic: never a half-written page
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
