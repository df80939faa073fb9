"""``edgenn``: entry point and sub-command dispatch.

Every failure a user can cause (bad file, unsupported operator, wrong shape, missing tool)
is an ``EdgennError``: printed as one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from edgenn.cli import (
    bench_cmd,
    compile_cmd,
    demo_cmd,
    eval_cmd,
    inspect_cmd,
    quantize_cmd,
    run_cmd,
    skip_demo_cmd,
    svm_demo_cmd,
    tune_cmd,
    validate_cmd,
    vta_gemm_cmd,
)
from edgenn.errors import EdgennError
from edgenn.version import edgenn_version

COMMANDS = (inspect_cmd, quantize_cmd, compile_cmd, run_cmd, validate_cmd, eval_cmd, bench_cmd,
            demo_cmd, skip_demo_cmd, svm_demo_cmd, vta_gemm_cmd, tune_cmd)


class _CommandParser(argparse.ArgumentParser):
    """A sub-command's parser, taking whole option names only: a prefix would keep accepting a
    removed spelling (``--out`` for ``--out-dir``), and an option added later would silently
    change what a prefix means."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgenn",
        description="Make trained neural networks run fast and small on constrained devices.",
    )
    parser.add_argument("--version", action="version", version=f"edgenn {edgenn_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_CommandParser)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
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
