"""Compile options that carry their command-line form and their checks.

A backend's options dataclass (``Backend.options``) declares each user-facing option with
:func:`option`: a field defaulting to None (= the compile function's own default) whose metadata
holds a :class:`Flag` (spelling, help, type, choices, metavar, the command line's default, a
parser for the flag's text, a minimum). The CLI derives its flags from these
(``edgenn.cli.options.add_flags`` / ``flag_values``), and :func:`check_options` checks the
choices and ranges of every options object in one place (``Backend.parse_options`` calls it),
so the API and the CLI reject the same values with the same one-line error::

    ram_kb: int | None = option("--ram-kb", type=int, minimum=1,
                                help="device RAM in KiB (default: the core's reference board)")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from edgenn.errors import EdgennError

FLAG = "edgenn.flag"  # the key of a field's Flag in its dataclass metadata


@dataclass(frozen=True)
class Flag:
    """How one option is spelled on the command line and which values it takes.

    ``type``: argparse's conversion of the text (int, float, a name normaliser); ``parse``:
    turns the text into the option's value after parsing (its errors are one-line
    ``EdgennError``s, reported like any compile error); ``default``: the command line's default
    (None: the backend's own); ``choices`` and ``minimum`` are checked by argparse for the CLI
    and by :func:`check_options` for every caller.
    """

    flag: str
    help: str
    type: Callable[[str], Any] | None = None
    choices: tuple[Any, ...] | None = None
    metavar: str | None = None
    default: Any = None
    parse: Callable[[str], Any] | None = None
    minimum: float | None = None

    @property
    def dest(self) -> str:
        """The argparse destination: ``--vta-bus-bits`` -> ``vta_bus_bits``."""
        return self.flag.lstrip("-").replace("-", "_")


def option(flag: str, help: str, *, type: Callable[[str], Any] | None = None,
           choices: tuple[Any, ...] | None = None, metavar: str | None = None,
           default: Any = None, parse: Callable[[str], Any] | None = None,
           minimum: float | None = None) -> Any:
    """A dataclass field (default None) with its command-line form, see :class:`Flag`."""
    return field(default=None, metadata={FLAG: Flag(flag, help, type, choices, metavar, default,
                                                    parse, minimum)})


def option_flags(options: type) -> list[tuple[str, Flag]]:
    """``(field name, Flag)`` of every field of ``options`` that has a command-line form."""
    return [(f.name, f.metadata[FLAG]) for f in fields(options) if FLAG in f.metadata]


def check_options(target: str, options: Any) -> None:
    """Reject a value outside a field's choices or below its minimum: one line naming the
    option (its field and flag) and the target. None (the default) always passes."""
    for name, spec in option_flags(type(options)):
        value = getattr(options, name)
        if value is None:
            continue
        if spec.choices is not None and isinstance(value, str) and value not in spec.choices:
            raise EdgennError(f"unknown {name} {value!r} for target {target} ({spec.flag}; "
                              f"known: {', '.join(map(str, spec.choices))})")
        # why the bool test: True is an int to Python, never a count
        if spec.minimum is not None and isinstance(value, int | float) and \
                not isinstance(value, bool) and value < spec.minimum:
            raise EdgennError(f"{spec.flag} must be >= {spec.minimum:g} for target {target} "
                              f"(option {name}), got {value}")
