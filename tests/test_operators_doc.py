"""docs/operators.md is what tools/operators_doc.py generates from the registries today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("operators_doc", ROOT / "tools" /
                                                  "operators_doc.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_operators_doc_is_current() -> None:
    text = (ROOT / "docs" / "operators.md").read_text()
    assert text == _tool().render(), "docs/operators.md is stale: run tools/operators_doc.py"


def test_every_ir_operator_has_a_schema_and_inference() -> None:
    from edgenn.ir.schema import op_schemas
    from edgenn.ir.shapes import supported_ops

    assert sorted(s.name for s in op_schemas()) == supported_ops()
