"""docs/deploy.md's measured tables are what tools/deploy_doc.py renders from the committed
benchmarks/results/deploy_boards.json (benchmarks/deploy_boards.py)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from edgenn.errors import EdgennError

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "deploy.md"
RESULTS = ROOT / "benchmarks" / "results" / "deploy_boards.json"


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("deploy_doc", ROOT / "tools" / "deploy_doc.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _results() -> dict[str, Any]:
    return dict(json.loads(RESULTS.read_text()))


def _section(page: str, markers: tuple[str, str]) -> str:
    return page.split(markers[0], 1)[1].split(markers[1], 1)[0]


def test_deploy_doc_matches_the_json() -> None:
    """Fails when the page's marked tables (or its markers) and the JSON disagree."""
    page = DOC.read_text()
    tool = _tool()
    for start, end in (tool.TABLE, tool.TWO_MODELS):
        assert start in page and end in page, f"docs/deploy.md lacks {start} / {end}"
    assert page == tool.render(page, _results()), \
        "docs/deploy.md is stale: run tools/deploy_doc.py"


def test_every_model_and_board_has_a_row() -> None:
    """No run is dropped: one table row per (model, board) of the JSON, and every board of
    the benchmark appears for every model."""
    doc = _results()
    tool = _tool()
    rows = [ln for ln in _section(DOC.read_text(), tool.TABLE).splitlines()
            if ln.startswith("| ") and not ln.startswith("| model ")]
    assert len(rows) == len(doc["runs"])
    boards = {b["name"] for b in doc["boards"]}
    for label in {r["label"] for r in doc["runs"]}:
        assert {r["board"] for r in doc["runs"] if r["label"] == label} == boards, label


def test_a_board_the_model_does_not_fit_is_a_row_with_the_bytes() -> None:
    doc = copy.deepcopy(_results())
    run = doc["runs"][0]
    doc["runs"][0] = {"model": run["model"], "label": run["label"], "board": "netduinoplus2",
                      "emulator": "qemu", "fits": False, "arena_bytes": 150_000,
                      "stack_bytes": 2048, "need_bytes": 152_048, "board_ram_bytes": 131_072,
                      "reason": "does not fit"}
    text = "\n".join(_tool().deploy_table(doc))
    assert ("does not fit: arena 150,000 B + stack 2,048 B = 152,048 B > 131,072 B of RAM"
            in text)


def test_missing_markers_are_an_error() -> None:
    tool = _tool()
    with pytest.raises(EdgennError, match="deploy-table:start"):
        tool.render("# Deploying\n\nno markers here\n", _results())
    page = f"{tool.TABLE[0]}\n{tool.TABLE[1]}\n"  # the second pair is missing
    with pytest.raises(EdgennError, match="two-models:start"):
        tool.render(page, _results())


def test_rendering_is_idempotent_and_keeps_the_hand_written_text() -> None:
    tool = _tool()
    page = (f"intro\n{tool.TWO_MODELS[0]}\nSTALE-TWO\n{tool.TWO_MODELS[1]}\nmiddle\n"
            f"{tool.TABLE[0]}\nSTALE-TABLE\n{tool.TABLE[1]}\nend\n")
    once = tool.render(page, _results())
    assert tool.render(once, _results()) == once
    assert once.startswith("intro\n") and "\nmiddle\n" in once and once.endswith("\nend\n")
    assert "STALE-TWO" not in once and "STALE-TABLE" not in once
