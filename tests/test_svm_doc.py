"""docs/svm.md's CNN + SVM figures are what tools/svm_doc.py renders from the committed
benchmarks/results/svm_cnn_device.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tools import svm_doc

ROOT = Path(__file__).resolve().parent.parent


def _results() -> dict[str, Any]:
    return json.loads((ROOT / "benchmarks" / "results" / "svm_cnn_device.json").read_text())


def test_svm_doc_matches_the_benchmark() -> None:
    text = (ROOT / "docs" / "svm.md").read_text()
    assert text == svm_doc.render(text, _results()), \
        "docs/svm.md is stale: run tools/svm_doc.py"


def test_a_changed_figure_makes_the_doc_stale() -> None:
    text = (ROOT / "docs" / "svm.md").read_text()
    doc = copy.deepcopy(_results())
    doc["steps"][-1]["device"]["all"] = 0.5
    doc["summary"]["ram_bytes"] += 1
    changed = svm_doc.render(text, doc)
    assert changed != text and "50.00%" in changed
    # only the generated part moves
    head, tail = text.split(svm_doc.BEGIN)[0], text.split(svm_doc.END)[1]
    assert changed.startswith(head + svm_doc.BEGIN) and changed.endswith(svm_doc.END + tail)


def test_missing_markers_are_an_error() -> None:
    with pytest.raises(svm_doc.StaleMarkersError, match="markers"):
        svm_doc.render("# no markers here\n", _results())
