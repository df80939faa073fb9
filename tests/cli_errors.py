"""The CLI's error contract, for tests: exit status 2 and exactly one line on stderr."""

from __future__ import annotations

import pytest

from edgenn.cli.main import main


def error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI on ``argv``; assert it failed with one line and no traceback; return it."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err
