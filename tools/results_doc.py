"""Render the measured tables and figures of README.md and docs/*.md from benchmark JSON.

    .venv/bin/python tools/results_doc.py          # rewrite every marked section
    .venv/bin/python tools/results_doc.py --check  # exit 1 when a section is stale

A section is the text between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->``; it is
rendered by the section ``NAME`` of ``tools/doc_sections/`` from one committed file of
``benchmarks/results/`` (written by the benchmark of the same name), and the rendered text
names that file. Markers on one line make an inline section (a figure inside a sentence);
otherwise the section is whole lines (a table and its caption). The rest of each page is
written by hand and must not quote measured figures. ``tests/test_results_doc.py`` fails
when a page and its JSON disagree. (``docs/deploy.md``, ``docs/svm.md`` and the MLPerf Tiny
table have their own generators: ``tools/deploy_doc.py``, ``tools/svm_doc.py``,
``benchmarks/mlperf_tiny.py --docs``; the check covers the MLPerf table too.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mlperf_tiny  # noqa: E402  (its table renderer: the MLPerf section has one already)
from doc_sections import SECTIONS, Section  # noqa: E402

from edgenn.errors import EdgennError  # noqa: E402
from edgenn.utils import atomic_write_bytes  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
MARK = re.compile(r"<!-- results:([a-z0-9-]+) -->(.*?)<!-- /results:\1 -->", re.S)
OPEN = re.compile(r"<!-- results:([a-z0-9-]+) -->")


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that may hold sections: README.md and every docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def load(section: Section, results: Path = RESULTS) -> dict[str, Any]:
    path = results / section.json
    if not path.is_file():
        raise EdgennError(f"{path}: not found; write it with {section.source.split('`')[3]}")
    return dict(json.loads(path.read_text()))


def render_page(text: str, where: str, results: Path = RESULTS) -> str:
    """``text`` with every marked section rendered from its JSON; EdgennError naming the page
    for an unknown section name or a start marker without its end."""
    names = OPEN.findall(text)
    closed = {m.group(1) for m in MARK.finditer(text)}
    for name in names:
        if name not in SECTIONS:
            raise EdgennError(f"{where}: unknown results section {name!r} "
                              f"(known: {', '.join(sorted(SECTIONS))})")
        if name not in closed:
            raise EdgennError(f"{where}: <!-- results:{name} --> has no <!-- /results:{name} -->")

    def one(m: re.Match[str]) -> str:
        name, old = m.group(1), m.group(2)
        section = SECTIONS[name]
        body = section.render(load(section, results))
        # why inline: a figure inside a sentence keeps the sentence on its line
        inner = body if "\n" not in old else "\n" + body + "\n"
        return f"<!-- results:{name} -->{inner}<!-- /results:{name} -->"

    return MARK.sub(one, text)


def mlperf_stale(root: Path = ROOT) -> list[str]:
    """Pages whose MLPerf Tiny table differs from benchmarks/results/mlperf_tiny.json."""
    doc = json.loads((root / "benchmarks" / "results" / "mlperf_tiny.json").read_text())
    block = f"{mlperf_tiny.MARK_START}\n{mlperf_tiny.markdown_table(doc)}\n{mlperf_tiny.MARK_END}"
    return [p.name for p in pages(root) if mlperf_tiny.MARK_START in p.read_text()
            and block not in p.read_text()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a section is stale")
    args = ap.parse_args(argv)
    stale, used = [], set()
    try:
        for page in pages():
            text = page.read_text()
            used.update(OPEN.findall(text))
            new = render_page(text, page.name)
            if new == text:
                continue
            stale.append(page.name)
            if not args.check:
                atomic_write_bytes(page, new.encode())  # why atomic: never a half-written page
                print(f"wrote {page.relative_to(ROOT)}")
        unused = sorted(set(SECTIONS) - used)
        if unused:
            raise EdgennError(f"results sections no page shows: {', '.join(unused)}")
        mlperf = mlperf_stale()
    except (OSError, ValueError, KeyError, EdgennError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if mlperf:
        print(f"MLPerf Tiny table stale in {', '.join(mlperf)}: run benchmarks/mlperf_tiny.py "
              "--from-json --docs", file=sys.stderr)
        return 1
    if args.check and stale:
        print(f"stale: {', '.join(stale)}: run tools/results_doc.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
