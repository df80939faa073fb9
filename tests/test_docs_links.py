"""Every file the docs cite exists: path references (``edgenn/...``, ``benchmarks/...``,
``docs/...``, ``tests/...``, ``tools/...``) in README.md and docs/*.md, relative Markdown links,
the ``docs/...`` pages the code cites, and the ``#section`` each of them names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a repository path: one of the top folders, then path characters (an #anchor may follow)
PATH_REF = re.compile(r"(?<![\w./-])((?:edgenn|benchmarks|docs|tests|tools)/[\w./-]*)(#[\w-]+)?")
DOCS_REF = re.compile(r"(?<![\w./-])(docs/[\w./-]*\.md)(#[\w-]+)?")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# placeholders in a path stand for any name (tests/fixtures/<area>/make_<x>.py, out/*.png)
PLACEHOLDER = re.compile(r"[<>*{}]")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces -> -."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    lines = page.read_text(encoding="utf-8").splitlines()
    return {_slug(line.lstrip("#")) for line in lines if re.match(r"#{1,6} ", line)}


def _problem(target: Path, anchor: str | None) -> str | None:
    if not target.exists():
        return "no such file or folder"
    if anchor and target.suffix == ".md" and anchor not in _anchors(target):
        return f"{target.name} has no section #{anchor}"
    return None


def _refs(page: Path) -> list[tuple[int, str, Path, str | None]]:
    """(line, text, target, anchor) of every reference on ``page``."""
    found = []
    for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for m in PATH_REF.finditer(line):
            ref = m.group(1).rstrip(".")  # a sentence's full stop
            if not PLACEHOLDER.search(line[m.start():m.end() + 1]):
                found.append((no, ref, ROOT / ref, (m.group(2) or "#")[1:] or None))
        for m in LINK.finditer(line):
            target = m.group(1)
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = page.parent / path if path else page
            found.append((no, target, dest, anchor or None))
    return found


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_doc_references_exist(page: Path) -> None:
    bad = [f"{page.relative_to(ROOT)}:{no}: {text}: {why}"
           for no, text, target, anchor in _refs(page)
           if (why := _problem(target, anchor))]
    assert not bad, "\n".join(bad)


def test_code_cites_existing_doc_pages() -> None:
    bad = []
    for folder in ("edgenn", "benchmarks", "tools", "tests"):
        for src in sorted((ROOT / folder).rglob("*.py")):
            if src == Path(__file__).resolve():  # its self-test names missing pages on purpose
                continue
            for no, line in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
                for m in DOCS_REF.finditer(line):
                    anchor = (m.group(2) or "#")[1:] or None
                    if why := _problem(ROOT / m.group(1), anchor):
                        bad.append(f"{src.relative_to(ROOT)}:{no}: {m.group(0)}: {why}")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_missing_file_and_section(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\nSee `docs/nonexistent.md`, [t](page.md#title), "
                    "[u](page.md#gone) and edgenn/api.py.\n")
    problems = [(text, _problem(target, anchor)) for _, text, target, anchor in _refs(page)]
    assert problems == [("docs/nonexistent.md", "no such file or folder"),
                        ("edgenn/api.py", None), ("page.md#title", None),
                        ("page.md#gone", "page.md has no section #gone")]
