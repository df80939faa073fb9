"""The target and command tables load lazily and agree with what the modules register."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_target_table_matches_the_registrations() -> None:
    """Every name of ``backend_names`` is registered by the module its table row names, and
    the table's order is the backends' ``order`` (help texts and lists keep their order)."""
    from edgenn.backends.registry import registered
    from edgenn.backends.targets import backend_names, get_backend

    names = backend_names()
    for name in names:
        assert get_backend(name).name == name
    backends = registered()
    assert set(backends) == set(names)
    assert list(names) == sorted(names, key=lambda n: (backends[n].order, n))


def test_compile_command_loads_no_other_backend() -> None:
    """Parsing ``edgenn compile`` imports neither the host nor the VTA backend, nor the
    modules of the other commands (they cost start-up time on every compile)."""
    code = ("import sys; from edgenn.cli.main import build_parser; "
            "build_parser('compile').parse_args(['compile', 'm.tflite', '--target', "
            "'cortex-m4', '-o', 'x']); "
            "print(sorted(m for m in sys.modules if m.startswith(('edgenn.backends.host', "
            "'edgenn.backends.vta', 'edgenn.cli.bench_cmd', 'edgenn.cli.vta_gemm_cmd'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "[]"


def test_full_help_lists_every_command() -> None:
    from edgenn.cli.main import COMMANDS, build_parser

    text = build_parser().format_help()
    for command in COMMANDS:
        assert command in text
