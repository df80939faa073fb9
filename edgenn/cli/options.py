"""Options every command spells the same way: ``--json PATH`` (``-`` for stdout), ``-o`` for
a file the command writes, ``--out-dir`` for a folder."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from edgenn.backends.options import option_flags
from edgenn.backends.timing import DEFAULT_TIMING
from edgenn.outputs import Stage, owned_dir
from edgenn.utils import atomic_write_bytes

STDOUT = "-"


def add_json_option(p: argparse.ArgumentParser, what: str, bare_means_stdout: bool = False
                    ) -> None:
    """``--json PATH``: also write ``what`` as JSON to PATH, or to stdout for ``-``. With
    ``bare_means_stdout`` a bare ``--json`` means ``--json -`` (inspect's historical form)."""
    extra: dict[str, Any] = {"nargs": "?", "const": STDOUT} if bare_means_stdout else {}
    p.add_argument("--json", default=None, metavar="PATH",
                   help=f"write {what} as JSON to PATH ('-': stdout)", **extra)


def write_json(path: str | None, data: Any) -> bool:
    """Write ``data`` for ``--json``; True when it went to stdout (print nothing else there)."""
    if path is None:
        return False
    text = json.dumps(data, indent=2) + "\n"
    if path == STDOUT:
        sys.stdout.write(text)
        return True
    atomic_write_bytes(path, text.encode())
    return False


def staged_path(stage: Stage, path: str | None) -> str | None:
    """Where to write ``path`` (a ``--json`` or other output) inside the command's ``stage``
    (``edgenn.outputs.staged_files``): its temporary sibling; None and ``-`` unchanged."""
    return path if path is None or path == STDOUT else str(stage.path(path))


def add_out_dir_option(p: argparse.ArgumentParser, default: str, what: str) -> None:
    """``--out-dir DIR`` (dest ``out_dir``): the folder a demo writes into, a generated folder
    (:func:`out_dir`) with its ``--force``."""
    p.add_argument("--out-dir", dest="out_dir", default=default, metavar="DIR",
                   help=f"folder for {what} (default: {default}); files no earlier edgenn "
                        "run generated there are kept, and never overwritten")
    add_force_option(p)


def add_force_option(p: argparse.ArgumentParser) -> None:
    """``--force``: a generated folder may overwrite files that are not its own."""
    p.add_argument("--force", action="store_true",
                   help="overwrite files in the output folder that no earlier edgenn run "
                        "generated (or that were edited since)")


def out_dir(args: argparse.Namespace) -> AbstractContextManager[Path]:
    """The temporary folder to build ``--out-dir``'s content in; it becomes ``--out-dir``
    when the command succeeds (``edgenn.outputs.owned_dir``, with ``--force``)."""
    return owned_dir(args.out_dir, force=args.force, command=command_line(args))


def command_line(args: argparse.Namespace) -> str:
    """The command as typed (``main`` keeps its argv), for a generated folder's manifest."""
    return shlex.join(["edgenn", *getattr(args, "argv", [])])


DEFAULT_WARMUP = DEFAULT_TIMING.warmup  # untimed runs before the timed ones
DEFAULT_REPEATS = DEFAULT_TIMING.repeats  # timed runs; the median is reported


def add_timing_options(p: argparse.ArgumentParser, what: str) -> None:
    """``--warmup N`` and ``--repeats N`` with the same defaults on every command that times."""
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                   help=f"untimed runs first ({what}; default {DEFAULT_WARMUP})")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help=f"timed runs, the median is reported ({what}; default "
                        f"{DEFAULT_REPEATS})")


def add_flags(p: argparse.ArgumentParser, options: type) -> None:
    """One flag per field of the options dataclass ``options`` that declares one
    (``edgenn.backends.options.option``); a flag already on ``p`` (another target's option of
    the same spelling) is defined once, by the first."""
    present = {s for action in p._actions for s in action.option_strings}
    for _, spec in option_flags(options):
        if spec.flag in present:
            continue
        if spec.type is bool:  # why: a switch (present: True, absent: the default)
            p.add_argument(spec.flag, dest=spec.dest, action="store_true",
                           default=spec.default, help=spec.help)
            continue
        extra: dict[str, Any] = {k: v for k, v in (("type", spec.type), ("choices", spec.choices),
                                                   ("metavar", spec.metavar)) if v is not None}
        p.add_argument(spec.flag, dest=spec.dest, default=spec.default, help=spec.help, **extra)


def flag_values(args: argparse.Namespace, options: type) -> dict[str, Any]:
    """The options dataclass's fields from the parsed flags (``add_flags``), each flag's text
    turned into its value by the field's ``parse`` (one-line errors, raised here: after
    parsing, so ``edgenn`` reports them like any other)."""
    given = vars(args)  # why not getattr: a flag the parser lacks is a bug, not a default
    values: dict[str, Any] = {}
    for name, spec in option_flags(options):
        value = given[spec.dest]
        values[name] = spec.parse(value) if spec.parse is not None and value is not None \
            else value
    return values


def add_model_input_options(p: argparse.ArgumentParser) -> None:
    """``--input-shape NAME=D0,D1,...`` and ``--input-value NAME=V[,V...]`` (repeatable): fix
    a model input's dynamic dimensions, or make it a constant (``edgenn.api.load_model``'s
    ``input_shapes`` / ``input_values``), for every command that loads a model."""
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix the dynamic (symbolic) dimensions of input NAME (ONNX); "
                        "unfixed ones are taken as 1 (repeatable)")
    p.add_argument("--input-value", action="append", default=[], metavar="NAME=V[,V...]",
                   help="make input NAME a constant of this value (one number fills its "
                        "shape), e.g. a sample rate an If branches on (ONNX; repeatable)")


def model_input_options(args: argparse.Namespace) -> dict[str, Any]:
    """``load_model`` keywords from ``add_model_input_options``' flags (one-line errors)."""
    from edgenn.errors import DataError

    def parse(flag: str, items: list[str], kind: Any) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for item in items:
            name, sep, text = item.partition("=")
            try:
                if not sep or not name:
                    raise ValueError
                # why the empty case: ``NAME=`` is the shape of a scalar (rank 0)
                out[name] = [kind(v) for v in text.split(",")] if text or kind is not int \
                    else []
            except ValueError:
                raise DataError(f"{flag} {item!r}: expected NAME=" +
                                ("D0,D1,... (integers)" if kind is int else "V[,V...]")) from None
        return out

    shapes = parse("--input-shape", getattr(args, "input_shape", []), int)
    values: dict[str, Any] = {k: v[0] if len(v) == 1 else v for k, v in
                              parse("--input-value", getattr(args, "input_value", []),
                                    _number).items()}
    return {"input_shapes": shapes or None, "input_values": values or None}


def _number(text: str) -> int | float:
    """An integer when the text is one (int64 values stay exact), else a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)
