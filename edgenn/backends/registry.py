"""Backends register themselves here: a name, a typed options dataclass and a compile function.

This module never imports a backend: each backend's ``backend.py`` imports it and registers
itself, and ``edgenn.backends.targets`` imports the backend of the target asked for and looks
it up.
``edgenn.api.compile_model`` looks the target up, turns keyword options into the backend's
options dataclass (an unknown option is a one-line error naming the target and the options it
takes) and calls its compile function. The CLI derives nothing by target name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from edgenn.backends.options import check_options
from edgenn.errors import EdgennError
from edgenn.ir import Graph


@dataclass(frozen=True)
class Backend:
    """One compile target.

    ``options``: a frozen dataclass whose fields are the target's options, each defaulting to
    None (= the compile function's own default). ``skip_in_firmware``: its options take ``skip``
    (a skip configuration) and build firmware with a skip mask that runs it by default;
    otherwise the skipped configuration's graph is compiled. ``fusion``: layer fusion applies
    on this target; ``default_fuse``: the ``--fuse`` mode the command line uses when none is
    given; ``fuse_auto``: ``(graph, variant, ram_budget, latency_bound, **options) ->
    executable``, the target's own ``--fuse auto`` (it measures the candidates), else the
    planner's analytic cost model is used.
    """

    name: str
    options: type
    compile: Callable[..., Any]  # (graph, **options) -> executable
    skip_in_firmware: bool = False
    fusion: bool = True
    default_fuse: str = "none"
    fuse_auto: Callable[..., Any] | None = None
    description: str = ""
    order: int = 50  # where the target appears in lists (help texts, TARGETS)

    def option_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self.options))

    def parse_options(self, given: Mapping[str, Any]) -> Any:
        """The options dataclass of ``given`` (None values mean "default"), its choices and
        ranges checked (``edgenn.backends.options.check_options``)."""
        known = self.option_names()
        unknown = sorted(k for k, v in given.items() if k not in known and v is not None)
        if unknown:
            have = ", ".join(known) if known else "none"
            raise EdgennError(f"unknown option(s) for target {self.name}: "
                              f"{', '.join(unknown)} (it takes: {have})")
        options = self.options(**{k: v for k, v in given.items() if k in known})
        check_options(self.name, options)
        return options

    def build(self, graph: Graph, options: Any) -> Any:
        """Compile ``graph`` with an options dataclass from :meth:`parse_options`."""
        return self.compile(graph, **_given(options))

    def build_auto(self, graph: Graph, options: Any, variant: str, ram_budget: int | None,
                   latency_bound: float | None) -> Any:
        """Compile ``graph`` with the target's own ``--fuse auto`` (``fuse_auto``)."""
        if self.fuse_auto is None:
            raise EdgennError(f"target {self.name} has no measured --fuse auto")
        return self.fuse_auto(graph, variant, ram_budget, latency_bound, **_given(options))


def _given(options: Any) -> dict[str, Any]:
    """The options dataclass's fields that are set (None: the compile function's default)."""
    return {f.name: getattr(options, f.name) for f in fields(options)
            if getattr(options, f.name) is not None}


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    if backend.name in _BACKENDS:
        raise ValueError(f"backend {backend.name!r} is registered twice")
    _BACKENDS[backend.name] = backend
    return backend


def registered() -> dict[str, Backend]:
    """The backends registered so far, by name (``edgenn.backends.targets.get_backend`` imports
    the one it is asked for first)."""
    return dict(_BACKENDS)
