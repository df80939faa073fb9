"""README.md and docs/*.md quote measured figures only through generated sections, and each
section equals what tools/results_doc.py renders from its committed benchmark JSON."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from edgenn.errors import EdgennError

ROOT = Path(__file__).resolve().parent.parent


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("results_doc", ROOT / "tools" / "results_doc.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_generated_section_is_current() -> None:
    tool = _tool()
    stale = [p.name for p in tool.pages() if tool.render_page(p.read_text(), p.name)
             != p.read_text()]
    assert not stale, f"stale: {', '.join(stale)}: run tools/results_doc.py"


def test_check_mode_passes_and_every_section_is_shown() -> None:
    assert _tool().main(["--check"]) == 0


def test_every_section_json_is_committed() -> None:
    tool = _tool()
    ignore = (ROOT / ".gitignore").read_text().splitlines()
    for section in tool.SECTIONS.values():
        assert (tool.RESULTS / section.json).is_file(), section.json
        assert f"!benchmarks/results/{section.json}" in ignore, (
            f"{section.json} is ignored by .gitignore: add a negation")


def test_a_changed_figure_makes_the_page_stale(tmp_path: Path) -> None:
    """The check can fail: one figure in a copied JSON changes the rendered page."""
    tool = _tool()
    results = tmp_path / "results"
    shutil.copytree(tool.RESULTS, results, ignore=shutil.ignore_patterns("*.png"))
    doc = json.loads((results / "fusion_variants.json").read_text())
    doc["reference_plans"][1]["fused_bytes"] += 1000
    (results / "fusion_variants.json").write_text(json.dumps(doc))
    page = (ROOT / "docs" / "fusion.md").read_text()
    assert tool.render_page(page, "fusion.md", results) != page


def test_bad_markers_are_one_line_errors() -> None:
    tool = _tool()
    with pytest.raises(EdgennError, match="x.md: unknown results section 'nope'"):
        tool.render_page("<!-- results:nope -->a<!-- /results:nope -->", "x.md")
    with pytest.raises(EdgennError, match="x.md: .*fusion-plans.* has no"):
        tool.render_page("<!-- results:fusion-plans -->\n", "x.md")


def test_fusion_doc_states_what_the_pinned_test_pins() -> None:
    """docs/fusion.md's B row and test_fusion_pass's pinned change are the same figure."""
    page = (ROOT / "docs" / "fusion.md").read_text()
    plans = page[page.index("<!-- results:fusion-plans -->"):]
    row = next(line for line in plans.splitlines() if line.startswith("| B | "))
    assert row.endswith("| -39.6% |")

