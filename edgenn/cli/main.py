"""``edgenn``: entry point and sub-command dispatch.

Every failure a user can cause (bad file, unsupported operator, wrong shape, missing tool)
is an ``EdgennError``: printed as one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from edgenn.errors import EdgennError
from edgenn.version import edgenn_version

# why a literal table, in the order of ``edgenn --help``: a command's module (and the backends
# and libraries it needs) is imported only when that command runs or the full help is shown;
# one literal import_module per command so that the import lint sees each as an edge
COMMANDS: dict[str, Callable[[], ModuleType]] = {
    "inspect": lambda: importlib.import_module("edgenn.cli.inspect_cmd"),
    "quantize": lambda: importlib.import_module("edgenn.cli.quantize_cmd"),
    "compile": lambda: importlib.import_module("edgenn.cli.compile_cmd"),
    "run": lambda: importlib.import_module("edgenn.cli.run_cmd"),
    "validate": lambda: importlib.import_module("edgenn.cli.validate_cmd"),
    "eval": lambda: importlib.import_module("edgenn.cli.eval_cmd"),
    "bench": lambda: importlib.import_module("edgenn.cli.bench_cmd"),
    "demo": lambda: importlib.import_module("edgenn.cli.demo_cmd"),
    "skip-demo": lambda: importlib.import_module("edgenn.cli.skip_demo_cmd"),
    "svm-demo": lambda: importlib.import_module("edgenn.cli.svm_demo_cmd"),
    "vta-gemm": lambda: importlib.import_module("edgenn.cli.vta_gemm_cmd"),
    "tune": lambda: importlib.import_module("edgenn.cli.tune_cmd"),
}


class _CommandParser(argparse.ArgumentParser):
    """A sub-command's parser, taking whole option names only: a prefix would keep accepting a
    removed spelling (``--out`` for ``--out-dir``), and an option added later would silently
    change what a prefix means."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command ``only`` alone (what ``main`` builds when the
    command line names one: its parsing and help are the same, and the others stay unloaded)."""
    parser = argparse.ArgumentParser(
        prog="edgenn",
        description="Make trained neural networks run fast and small on constrained devices.",
    )
    parser.add_argument("--version", action="version", version=f"edgenn {edgenn_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_CommandParser)
    for command in COMMANDS if only is None else (only,):
        COMMANDS[command]().add_parser(sub)
    return parser


def _named_command(argv: Sequence[str]) -> str | None:
    """The command the command line names, if its first word is one (else the full parser
    parses it: ``--help``, ``--version``, a misspelt command and its error message)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_named_command(argv)).parse_args(argv)
    args.argv = argv  # why: a generated folder's manifest records the command that made it
    try:
        return int(args.func(args) or 0)
    except EdgennError as err:
        print(f"edgenn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"edgenn {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
